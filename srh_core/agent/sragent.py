"""SRAgent: the R-C-L-K search, written once as three step functions over BranchState.

A refinement step is three calls; both runtimes call exactly these, with the
same arguments, and nothing else of the loop's logic lives in a runtime:

1. :meth:`SRAgent.open_step` -- ``prepare_iteration``, ``prepare_model_messages``
   and ``request_llm``: the prompt and the K model responses (a
   :class:`~srh_core.records.StepPlan`). A Celery ``branch_step`` task.
2. :meth:`SRAgent.run_sample` -- one sample's ``execute_tool_calls``,
   ``record_search_iteration`` and ``collect_candidates``: its tool results,
   its node and its candidates. A Celery ``tool_calls`` task; the embedded
   runtime calls it for K = 1..K.
3. :meth:`SRAgent.close_step` -- ``update_conversation`` and
   ``finish_iteration``: the branch's next state.

Hooks that take a ``response_list`` receive the samples processed together,
which is one sample in both runtimes (``response.sample`` is its K), so a
subclass that overrides any hook behaves the same embedded and on a cluster.
What runs next is decided by :mod:`srh_core.agent.scheduler` and how the
run ends by :mod:`srh_core.agent.outcome`, both shared.

The three error families stay apart: the model's mistakes are fed back as
messages; programmer and configuration errors raise; budgets (steps, time,
exact fit) end branches or the run.

Subclasses must accept the base constructor's keyword arguments (forward
``**kwargs``): a Celery worker rebuilds the agent from its class's import
path with them.

The hook contract:

- the reference's hooks take ``(R, L, C)`` positionally, as there; every
  other method takes keyword coordinates (``node_id(R=, C=, L=, K=)``,
  ``record_sample(..., R=, C=, L=, K=)``, ``sample_candidates``,
  ``sampling_seed``, ``recorded_responses``, ``start_restart(R=)``);
- a hook's inputs are its arguments: the branch reaches
  ``update_conversation`` and ``build_progress_message`` as ``branch=``,
  each sample's candidates travel in the ``results_list``
  (:class:`~srh_core.agent.candidates.SampleResults`), the store a sample
  writes to carries its batch (:class:`~srh_core.agent.steps.SampleStore`);
- **no state on self across phases**: opening a step, each sample and
  closing it may run in three processes (on a cluster the agent is rebuilt
  for each task), so no hook may keep on ``self`` what a later phase reads.
  :meth:`stateless_phase` warns (:class:`~srh_core.errors.PhaseStateWarning`)
  when a phase sets, rebinds or deletes an attribute; a container changed
  in place is not caught and is as unsupported.
"""

from __future__ import annotations

import copy
import logging
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from srh_core.agent import accounting, data_refresh, prompts
from srh_core.agent.base import Agent
from srh_core.agent.branch import BranchState, updated_front
from srh_core.agent.candidates import (
    SampleResults,
    carried_candidates,
    choose_sample,
    is_evaluation,
    sample_candidates,
)
from srh_core.agent.outcome import (
    MOVE_ON_REASONS,
    RESUMABLE_STOPS,
    STOP_DEPTH,
    STOP_TIME_LIMIT,
    budget_stop,
)
from srh_core.agent.settings import SearchSettings
from srh_core.agent.steps import SampleRun
from srh_core.api import ModelResponse, ModelRouter
from srh_core.embedded.executor import SerialToolExecutor
from srh_core.embedded.run_dir import RunDirectory
from srh_core.embedded.runner import resume_search, run_search
from srh_core.errors import (
    ConfigurationError,
    ModelResponseTruncatedError,
    PhaseStateWarning,
    SearchStateError,
)
from srh_core.evaluator import load_custom_evaluator
from srh_core.parsers import BaseParser
from srh_core.ranking import ExactFitRule, RankingPolicy, rank_candidates
from srh_core.records import StepPlan
from srh_core.seams import CandidateStore, Evaluator, ModelAdapter, PauseGate, ToolExecutor
from srh_core.skills import run_skill_manager
from srh_core.tools.base import BaseTool
from srh_core.types import CandidateRecord, ParentLink, SearchResult, ToolCall, ToolCallResult

if TYPE_CHECKING:
    from srh_core.context import AgentContext

logger = logging.getLogger("srh.agent")

Message = dict[str, Any]
Observer = Callable[[Mapping[str, Any]], None]
ExecutorFactory = Callable[[Mapping[str, BaseTool]], ToolExecutor]

class SRAgent(Agent):
    """Agent that runs an R-C-L-K symbolic-regression search.

    Settings are the reference's (see :class:`SearchSettings` for each one),
    passed as keyword arguments or as a ready ``settings`` object. The parts
    of a run are separate arguments because they are not settings; a run
    binds them once, in :meth:`bind_run` (``run()`` does it for the data it
    is given; a Celery worker passes them to the constructor).

    Args:
        llm_provider: Model provider ("offline", "openai", ...); a setting (a
            ready :class:`SearchSettings` is also accepted here).
        llm_model: Model name; a setting.
        settings: Validated settings; built from the keyword settings when None.
        context: The run's data context (an :class:`~srh_core.context.AgentContext`),
            shared with whoever else holds it: ``run()`` commits its data into it, and
            a later commit (e.g. a DataPreparationAgent's) is picked up at the next
            step boundary (:meth:`refresh_data`).
        skill_manager: Skill registry for the ``read_skill`` tool.
        api: A ready model adapter (tests inject a scripted one).
        evaluator: Evaluator of the context made by ``run()`` (default: the ``evaluator``
            setting's file, else DefaultEvaluator).
        store: The run's :class:`~srh_core.seams.CandidateStore`.
        executor: The run's :class:`~srh_core.seams.ToolExecutor`.
        problem_description: What the data is, for the model.
        deadline: ``time.monotonic()`` value at which the run's time budget ends.
        **settings_values: Any :class:`SearchSettings` field.
    """

    DEFAULT_TOOLS: tuple[str, ...] = (
        "statistics_analysis", "relationship_analysis", "evaluate_formula", "submit_formula",
        "polynomial_fit", "power_law_fit", "rational_fit", "constant_fit",
        "harmonic_interaction_fit", "monomial_sum_fit", "call_sindy", "evaluate_eic",
        "evaluate_code",
        "read_skill", "call_pysr", "expression_search",
    )

    def __init__(self, llm_provider: str | None = None, llm_model: str | None = None, *,
                 settings: SearchSettings | None = None, context: AgentContext | None = None,
                 skill_manager: Any = None, api: ModelAdapter | None = None,
                 evaluator: Evaluator | None = None,
                 store: CandidateStore | None = None, executor: ToolExecutor | None = None,
                 problem_description: str = "", deadline: float | None = None,
                 model_access: Any = None, **settings_values: Any) -> None:
        if isinstance(llm_provider, SearchSettings):  # SRAgent(settings) reads naturally too
            settings, llm_provider = llm_provider, None
        if llm_provider is not None:
            settings_values["llm_provider"] = llm_provider
        if llm_model is not None:
            settings_values["llm_model"] = llm_model
        if settings is not None and settings_values:
            settings = settings.replace(**settings_values)
        self.settings = settings or SearchSettings.build(**settings_values)
        if skill_manager is None and (self.settings.skills is not None
                                      or self.settings.skills_dir is not None):
            skill_manager = run_skill_manager(self.settings.skills_dir, self.settings.skills)
        self.skill_manager = skill_manager
        if evaluator is None and self.settings.evaluator is not None:
            evaluator = load_custom_evaluator(self.settings.evaluator)
        self.api: ModelAdapter | None = api
        self.model_access = model_access  # None: ModelAccess.local() (this process's operator)
        self.evaluator: Evaluator | None = evaluator
        self.prices = accounting.price_table(self.settings)
        self.policy = RankingPolicy(self.settings.ranking_metric, self.settings.larger_is_better)
        self.exact_fit = ExactFitRule(self.settings.exact_fit_metric,
                                      self.settings.exact_fit_threshold,
                                      self.settings.exact_fit_metric in ("r2", "pearson",
                                                                         "spearman"))
        self.context: AgentContext | None = context  # shared (a data-preparation agent's)
        self.store: CandidateStore | None = None
        self.executor: ToolExecutor | None = None
        self.tools: dict[str, BaseTool] = {}
        self.parser: Any = None
        self.strong_api: ModelAdapter | None = None
        self.router: Any = None
        self.task_route: tuple[float, list[str]] = (0.0, [])
        self.problem_description = problem_description
        self.deadline: float | None = None
        self.observers: list[Observer] = []
        self.tools_revision: int | None = None  # the data revision the tools are built for
        self._tool_context = ExitStack()
        self._executor_factory: ExecutorFactory | None = None
        self._retired_executors: list[ToolExecutor] = []
        self._refresh_lock = threading.Lock()
        #: Where a newer version of the data comes from when it is not this process's
        #: context (a worker running a whole run sets it: the run's published versions).
        self.context_source: Callable[[], Any] | None = None
        self._source_revision: int | None = None
        if context is not None and store is not None:
            self.bind_run(context, store, executor, problem_description, deadline=deadline)

    # ------------------------------------------------------------- a run's parts
    def bind_run(self, context: Any, store: CandidateStore,
                 executor: ToolExecutor | ExecutorFactory | None,
                 problem_description: str = "", *, deadline: float | None = None) -> None:
        """Attach a run's context, store and executor, and build tools, parser and model.

        The only place a run's parts are set, whichever runtime runs it. The
        tools are bound to the context :meth:`prepare_tool_context` yields; its
        exit runs at :meth:`release_run`.

        Args:
            context: The run's data context.
            store: The run's candidate store.
            executor: A ready executor, a factory called with the enabled tools,
                or None for a serial in-process executor.
            problem_description: What the data is, for the model.
            deadline: ``time.monotonic()`` value at which the time budget ends.
        """
        self._tool_context.close()
        self._tool_context = ExitStack()
        context = self._tool_context.enter_context(self.prepare_tool_context(context))
        self.context = context
        self.store = store
        self.problem_description = problem_description
        self.deadline = deadline
        self.initialize_tools(context)
        if executor is None:
            self._executor_factory = SerialToolExecutor
        elif not isinstance(executor, ToolExecutor):
            self._executor_factory = executor
        else:
            self._executor_factory = None  # a ready executor: the caller keeps it current
        self.executor = executor if self._executor_factory is None else \
            self._executor_factory(self.tools)

    @contextmanager
    def prepare_tool_context(self, tool_context: Any) -> Iterator[Any]:
        """Hook: the context the run's tools are bound to (the reference's hook).

        Entered by :meth:`bind_run` in both runtimes, before the tools are built;
        its exit runs at :meth:`release_run` (the embedded runner's end of the run).
        On a cluster every task builds its agent afresh, so the hook runs once per
        task and a worker drops the agent without releasing it: keep resources
        that must be freed out of it there. The base yields ``tool_context`` as is.

        Args:
            tool_context: The run's shared context.

        Yields:
            The context to bind the tools to (a subclass may add to it or wrap it).
        """
        yield tool_context

    def warm_up(self, *, wait: bool = False) -> float:
        """Start the run's tool processes, and what their tools start, now rather than
        at the first call (the embedded runtime calls it once a run is bound; a
        cluster's worker, before the first task of a run starts its "fit" clock: the
        tool processes there are started already). With ``wait``, return once they are
        ready. A subclass that imports or starts something of its own (a baseline's
        package) does it here too.

        Returns:
            The seconds spent here.
        """
        start = getattr(self.executor, "start", None)
        return 0.0 if start is None else float(start(wait=wait))

    def release_run(self) -> None:
        """Close the run's executors and exit :meth:`prepare_tool_context`."""
        for executor in [*self._retired_executors, self.executor]:
            if executor is not None:
                executor.close()
        self._retired_executors = []
        self._tool_context.close()

    # ------------------------------------------------------------ data refresh
    def refresh_data(self) -> dict[str, Any] | None:
        """Bring the tools to the context's current data; what changed, or None.

        Called at every step boundary (:meth:`open_step`), and by anyone who
        changed the data and does not want to wait for it. When the context's
        revision moved past the one the tools were built for, the splits are
        dropped and the tools, the parser and the executor are rebuilt (an old
        executor is closed at :meth:`release_run`: a sample may still use it).

        Returns:
            :func:`~srh_core.agent.data_refresh.data_change` from the tools' old
            revision, or None when the tools are current.
        """
        with self._refresh_lock:
            self._take_published_context()
            context = self.context
            if context is None or context.revision == self.tools_revision:
                return None
            previous = self.tools_revision
            context.invalidate_splits()
            self.initialize_tools(context)
            if self._executor_factory is not None:
                self._retired_executors.append(self.executor)
                self.executor = self._executor_factory(self.tools)
            # An embedded run keeps the new data in its run directory (resume runs on it);
            # a cluster's versions are already stored (RedisRunStore.publish_data).
            record_data = getattr(self.store, "record_data", None)
            if record_data is not None:
                record_data(context, self.problem_description)
        logger.info("Data revision %s -> %s: tools rebuilt.", previous, context.revision)
        return data_refresh.data_change(context, previous)

    def _take_published_context(self) -> None:
        """Bind :attr:`context_source`'s context when it has another revision."""
        if self.context_source is None:
            return
        fresh = self.context_source()
        if fresh.revision == self._source_revision:
            return
        self._source_revision = fresh.revision
        if fresh is not self.context:
            self.context = self._tool_context.enter_context(self.prepare_tool_context(fresh))

    @staticmethod
    def build_data_refresh_message(change: dict[str, Any]) -> dict[str, str]:
        """Hook: the message that tells a branch's model about a data change.

        Args:
            change: :func:`~srh_core.agent.data_refresh.data_change`'s description.
        """
        return data_refresh.refresh_message(change)

    def tell_data_change(self, buffer: list[Message], branch: BranchState) -> None:
        """Append the data-refresh message to ``buffer`` when ``branch`` is behind the data."""
        told, current = branch.data_revision, self.context.revision
        if told is None or told == current:
            return
        message = self.build_data_refresh_message(data_refresh.data_change(self.context, told))
        buffer.append(message)
        self.on_buffer_messages_added([message], R=branch.R, C=branch.C, L=branch.L)

    def enabled_tool_names(self) -> list[str]:
        """Tool names of this run: the setting, or the available defaults.

        Raises:
            ConfigurationError: A requested tool is not registered.
        """
        requested = self.settings.tools
        custom = self.custom_tool_names()  # registered first: the tools setting may name them
        names = list(self.DEFAULT_TOOLS if requested is None else requested)
        names += custom if requested is None else []
        banned = {_canonical_tool(name, "ban_tools") for name in self.settings.ban_tools}
        enabled: list[str] = []
        for name in names:
            try:
                tool_class = BaseTool.get_class(name)
            except Exception as error:
                raise ConfigurationError(str(error), setting="tools") from error
            reason = tool_class.availability()
            if tool_class.metadata.name in enabled or tool_class.metadata.name in banned:
                continue
            if reason is None:
                enabled.append(tool_class.metadata.name)  # an alias runs as its canonical name
            elif requested is not None:
                logger.warning("Tool %r is not available here (%s); it is not offered.",
                               name, reason)
        return enabled

    def initialize_tools(self, context: Any) -> None:
        """Bind the enabled tools, the parser and the model adapters to ``context``."""
        names = self.enabled_tool_names()
        self.tools = {name: BaseTool.create(name, context) for name in names}
        self.tools_revision = getattr(context, "revision", None)
        self.bind_tool_values(self.tools.values())
        self.parser = BaseParser.create(self.settings.tool_parser, tool_names=names)
        metadata = [tool.metadata for tool in self.tools.values()]
        if self.api is None:
            self.api = self.make_api(self.settings.llm_provider, self.settings.llm_model,
                                     metadata)
        self.router = None
        if self.settings.auto_routing and self.settings.strong_llm_model:
            strong_provider = self.settings.strong_llm_provider or self.settings.llm_provider
            self.router = ModelRouter(True, self.settings.llm_provider,
                                      str(getattr(self.api, "model", None) or "default"),
                                      strong_provider, self.settings.strong_llm_model)
            self.strong_api = self.make_api(strong_provider, self.settings.strong_llm_model,
                                            metadata)
            self.task_route = self.router.assess(self.problem_description,
                                                 len(context.feature_names()))

    # ------------------------------------------------------------------ helpers
    @property
    def K(self) -> int:
        return self.settings.local_sample_size

    def node_id(self, *, R: int, C: int, L: int, K: int) -> str:
        return self.require_store().node_id(R, C, L, K)

    def writing_to(self, store: CandidateStore) -> SRAgent:
        """This agent with ``store`` as its store (one sample's batched view of it).

        A shallow copy: the run's parts are shared, only the store differs, so
        branches on threads each write with their own sample's batch.
        """
        view = copy.copy(self)
        view.store = store
        return view

    @contextmanager
    def stateless_phase(self, phase: str) -> Iterator[None]:
        """Warn (:class:`~srh_core.errors.PhaseStateWarning`) when the hooks of ``phase``
        set, rebind or delete an attribute of ``self``: the next phase may run in another
        process (a cluster task) with an agent built afresh."""
        before = {name: id(value) for name, value in vars(self).items()}
        yield
        after = {name: id(value) for name, value in vars(self).items()}
        changed = sorted(name for name in before.keys() | after.keys()
                         if before.get(name) != after.get(name))
        if changed:
            warnings.warn(PhaseStateWarning(type(self).__name__, phase, changed), stacklevel=3)

    def require_store(self) -> CandidateStore:
        """The run's store; SearchStateError when no run is bound."""
        if self.store is None:
            raise SearchStateError("The agent has no run bound (call run() or bind_run()).")
        return self.store

    def seconds_left(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.monotonic()

    def pause_gate(self) -> PauseGate | None:
        """The pause the embedded runtime holds its branches for (None: this agent never pauses).

        Asked once per run; the scheduler's gate asks the answer before each step.
        """
        return None

    def emit(self, event: str, **fields: Any) -> None:
        """Tell observers (progress displays, loggers) what happened."""
        for observer in self.observers:
            observer({"event": event, **fields})

    # --------------------------------------------------------- initial prompts
    def create_initial_system_prompt(self, restart_records: list[CandidateRecord]) -> str:
        return prompts.system_prompt(self.settings.max_refinement_depth, restart_records,
                                     self.settings.ranking_metric)

    def create_initial_user_prompt(self, problem_description: str, X: Mapping[str, Any],
                                   y: Mapping[str, Any],
                                   restart_records: list[CandidateRecord]) -> str:
        target, values = next(iter(y.items()))
        descriptions = getattr(self.context, "variable_descriptions", {}) or {}
        units = getattr(self.context, "variable_units", None) or self.settings.units or {}
        return prompts.user_prompt(problem_description, X, target, values, descriptions,
                                   restart_records, self.settings.ranking_metric,
                                   prompts.limit_lines(self.settings), units)

    def customize_initial_prompts(self, messages: list[Message], *, X: Mapping[str, Any],
                                  y: Mapping[str, Any]) -> list[Message]:
        """Hook: edit the finished system and user messages (identity by default)."""
        return messages

    def create_initial_prompt_messages(self, problem_description: str, X: Mapping[str, Any],
                                       y: Mapping[str, Any],
                                       restart_records: list[CandidateRecord]) -> list[Message]:
        messages = [
            {"role": "system", "content": self.create_initial_system_prompt(restart_records)},
            {"role": "user", "content": self.create_initial_user_prompt(
                problem_description, X, y, restart_records)},
        ]
        return self.customize_initial_prompts(messages, X=X, y=y)

    def create_initial_buffer(self, problem_description: str, X: Mapping[str, Any],
                              y: Mapping[str, Any], restart_records: list[CandidateRecord],
                              *, branch: BranchState | None = None) -> list[Message]:
        """System and user prompts plus the first progress message of a branch.

        Args:
            branch: The branch the buffer starts (its restart, seeds and front).
        """
        messages = self.create_initial_prompt_messages(problem_description, X, y,
                                                       restart_records)
        return messages + [self.build_progress_message(0, branch=branch)]

    def on_buffer_messages_added(self, messages: list[Message], **coordinate: int) -> None:
        """Hook: ``messages`` just entered a branch's buffer (at ``R``, ``C`` and, after a
        step, ``L``); the base tells the observers (event ``buffer_messages``)."""
        self.emit("buffer_messages", messages=list(messages), **coordinate)

    def start_restart(self, *, R: int) -> list[BranchState]:
        """The C branches of restart R, seeded from the pool's top-k."""
        store = self.require_store()
        records = store.top_k(self.settings.restart_top_k) if R > 1 else []
        seeds = [record.to_dict() for record in records]
        front = updated_front([], records, self.policy)
        X, y = self.problem_arrays()
        template = BranchState(store.run_id, R, 0, 1, [], seeds=seeds, front=front)
        buffer = self.create_initial_buffer(self.problem_description, X, y, records,
                                            branch=template)
        links = [ParentLink(record.node_id, "restart_seed") for record in records]
        self.emit("restart", R=R, seeds=[record.formula for record in records])
        for C in range(1, self.settings.global_width + 1):
            self.on_buffer_messages_added([dict(m) for m in buffer], R=R, C=C)
        return [BranchState(store.run_id, R, C, 1, [dict(m) for m in buffer], list(links),
                            seeds=list(seeds), front=list(front),
                            data_revision=self.context.revision)
                for C in range(1, self.settings.global_width + 1)]

    def problem_arrays(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """Feature and target arrays of the context, keyed by name."""
        data = self.context.data
        X = {name: data[name] for name in self.context.feature_names()}
        return X, {self.context.target: data[self.context.target]}

    # ------------------------------------------------------- progress messages
    def visible_front(self, branch: BranchState | None) -> list[CandidateRecord]:
        """The Pareto front of what ``branch`` has seen: its seeds and its own candidates."""
        return [] if branch is None else branch.front_records()

    def build_progress_message(self, L: int, *, branch: BranchState | None = None
                               ) -> dict[str, str]:
        """Step L+1 of ``branch``, the Pareto front it has seen and the time left.

        Args:
            L: The step just done (0 before the first).
            branch: The branch the message is for (None: no restart, branch or front).
        """
        settings = self.settings
        where = f"restart {branch.R if branch else 1}/{settings.max_restart_loop}"
        if branch is not None and branch.C > 0:
            where += f", branch {branch.C}/{settings.global_width}"
        return prompts.progress_message(L + 1, settings.max_refinement_depth,
                                        self.visible_front(branch), settings.ranking_metric,
                                        where, self.seconds_left())

    # ------------------------------------------------------ step 1: open a step
    def prepare_iteration(self, buffer: list[Message], R: int, L: int, C: int
                          ) -> str | None:
        """Hook: apply control changes before the prompt is built.

        Returns None to continue; "next_c" or "next_r" (a researcher moving
        on, see :data:`MOVE_ON_REASONS`) to end this branch as done; or a
        reason that stops the search.
        """
        seconds = self.seconds_left()
        if seconds is not None and seconds <= 0:
            return STOP_TIME_LIMIT
        return self.budget_stop()

    def budget_stop(self) -> str | None:
        """STOP_BUDGET once the run's spend reached ``max_cost`` or ``max_tokens``, else None.

        Reads the store's totals only when a budget is set (on a cluster that
        is one Redis read per step).
        """
        if self.settings.max_cost is None and self.settings.max_tokens is None:
            return None
        return budget_stop(self.settings, self.require_store().spend())

    def prepare_model_messages(self, buffer: list[Message], R: int, L: int, C: int
                               ) -> list[Message]:
        """The messages sent to the model; adds forced diagnostics to ``buffer`` at L=1."""
        if self.settings.force_initial_diagnostics and L == 1:
            buffer.append(self.run_initial_diagnostics(R, L, C))
        return [dict(message) for message in buffer]

    def run_initial_diagnostics(self, R: int, L: int, C: int) -> dict[str, str]:
        """Run the opening analysis tools and the method skill; one user message."""
        calls = [ToolCall("statistics_analysis", {}), ToolCall("relationship_analysis", {}),
                 ToolCall("read_skill", {"name": "discover-symbolic-laws"})]
        calls = [call for call in calls if call.name in self.tools]
        results = self.run_calls(calls, key=f"{self.node_id(R=R, C=C, L=L, K=1)}:diagnostics")
        self.record_tool_calls(calls, results, R, L, C, forced=True)
        sections = [f"## {c.name}\n{r.result_str}" for c, r in zip(calls, results, strict=True)]
        return {"role": "user", "content": "[Initial diagnostics run by the harness]\n\n"
                + "\n\n".join(sections)}

    def request_llm(self, prompt: list[Message], R: int, L: int, C: int,
                    stream_callback: Callable[[dict[str, Any]], None] | None = None,
                    ) -> tuple[list[ModelResponse], dict[str, Any]]:
        """Request K responses; a truncated response is kept with what arrived.

        Args:
            stream_callback: Called with ``{"type": "delta", "sample": K, "delta": text,
                "content": text so far}`` for each piece of text as it arrives (when the
                adapter streams; a non-streaming adapter gives one piece per sample).
        """
        api, route = self.route_model(L)
        sampling = self.step_settings(R=R, C=C, L=L)
        options = {"n": self.K, "max_tokens": sampling.llm_max_tokens,
                   "temperature": sampling.llm_temperature,
                   "seed": self.sampling_seed(R=R, C=C, L=L)}
        started = time.monotonic()
        try:
            call = api(prompt, **options)
            if stream_callback is not None:
                relay_deltas(call, stream_callback)
            responses, usage = list(call.responses), dict(call.usage or {})
            summary = call.result() if hasattr(call, "result") else None
            provider = getattr(summary, "provider", None)
            model = getattr(summary, "model", None)
        except ModelResponseTruncatedError as error:
            responses, usage = truncated_responses(error, self.K), dict(error.usage)
            provider, model = error.provider, error.model
        responses = pad_responses(responses, self.K)
        return self.recorded_responses(
            {"responses": responses, "usage": usage,
             "provider": provider or str(getattr(api, "provider", "") or ""),
             "model": model or getattr(api, "model", None),
             "latency": time.monotonic() - started, "route": route}, R=R, L=L, C=C)

    def recorded_responses(self, llm_result: Mapping[str, Any], *, R: int, L: int, C: int
                           ) -> tuple[list[ModelResponse], dict[str, Any]]:
        """The end of every model request (a subclass's own too): the ``record_llm_result``
        and ``log_info`` hooks; the responses and the step's usage record."""
        responses = list(llm_result["responses"])
        record = self.record_llm_result(llm_result, R, L, C)
        self.log_info(responses, R, L, C)
        return responses, record if record is not None else dict(llm_result["usage"])

    def record_llm_result(self, llm_result: Mapping[str, Any], R: int, L: int, C: int
                          ) -> dict[str, Any] | None:
        """Hook: the step's usage record from one model call (kept with the step's nodes).

        Args:
            llm_result: ``responses`` (the K responses), ``usage`` (the call's token
                counts), ``provider``, ``model``, ``latency`` (seconds) and ``route``.

        Returns:
            The usage record (``response.jsonl``, the nodes, the spend), priced here;
            None keeps the call's raw usage.
        """
        usage = accounting.step_usage(llm_result["usage"], llm_result["responses"],
                                      provider=llm_result["provider"],
                                      model=llm_result["model"],
                                      latency=llm_result["latency"], overrides=self.prices)
        self.emit("responses", R=R, C=C, L=L, route=llm_result["route"], usage=usage)
        return usage

    def log_info(self, response_list: Sequence[ModelResponse], R: int, L: int, C: int
                 ) -> None:
        """Hook: log each response of a step (logger ``srh.agent``, INFO)."""
        if not logger.isEnabledFor(logging.INFO):
            return
        for response in response_list:
            calls = ", ".join(call.name for call in response.tool_calls) or "no tool call"
            text = " ".join(response.content.split())
            logger.info("R%d C%d L%d K%d: %s; %s", R, C, L, response.sample, calls,
                        text[:160] + ("..." if len(text) > 160 else ""))

    def step_settings(self, *, R: int, C: int, L: int) -> SearchSettings:
        """Hook: the settings step (R, C, L)'s model request uses (the run's, here;
        SRAgentInteractive's with the runtime settings in force at its boundary)."""
        return self.settings

    def sampling_seed(self, *, R: int, C: int, L: int) -> int:
        """Seed of one step's sampling: a pure function of the run seed and coordinate."""
        return (self.settings.seed * 1_000_003 + R * 10_007 + C * 101 + L) % (2**31 - 1)

    def route_model(self, L: int) -> tuple[Any, dict[str, Any]]:
        if self.router is None:
            return self.api, {"tier": "base"}
        route = self.router.route(self.task_route[0], self.task_route[1], L)
        api = self.strong_api if route.tier == "strong" and self.strong_api else self.api
        return api, {"tier": route.tier, "provider": route.provider, "model": route.model,
                     "reason": route.reason}

    def open_step(self, branch: BranchState) -> StepPlan | None:
        """Open step ``branch.L``: the K responses, or None when ``prepare_iteration`` stops it.

        The branch is not modified, except that a stop ends it; the buffer the
        opening hooks leave travels in the plan.
        """
        R, C, L = branch.R, branch.C, branch.L
        self.refresh_data()  # outside the phase: it rebinds the tools when the data changed
        revision = self.context.revision
        buffer = [dict(message) for message in branch.buffer]
        with self.stateless_phase("open_step"):
            self.tell_data_change(buffer, branch)
            reason = self.prepare_iteration(buffer, R, L, C)
            if reason is not None:
                branch.stop(reason, "done" if reason in MOVE_ON_REASONS else "stopped")
                return None
            prompt = self.prepare_model_messages(buffer, R, L, C)
            responses, usage = self.request_llm(prompt, R, L, C)
        return StepPlan(R, C, L, prompt, responses, list(branch.parents), usage,
                        buffer=None if buffer == prompt else buffer, data_revision=revision)

    # ------------------------------------------------------ step 2: one sample
    def run_sample(self, plan: StepPlan, K: int) -> SampleRun:
        """Run sample K of an opened step: its tool calls, its node and its candidates.

        The sample's candidates are computed once here and carried (in the
        ``results_list`` the hooks get, and in the returned run) to the step's close.
        """
        R, C, L = plan.R, plan.C, plan.L
        response = [self.with_conversation(plan.responses[K - 1], plan)]
        with self.stateless_phase("run_sample"):
            grouped = self.execute_tool_calls(response, R, L, C)
            candidates = self.sample_candidates(response[0], grouped[0], R=R, C=C, L=L, K=K)
            results_list = SampleResults(grouped, [candidates])
            self.record_search_iteration(response, results_list, plan.parents, plan.prompt,
                                         plan.usage, R, L, C)
            kept = [replace(c, details=dict(c.details)) for c in candidates]  # as found: a pool
            self.collect_candidates(response, results_list, R, L, C)  # may add diagnostics
        return SampleRun(list(grouped[0]), kept)

    def with_conversation(self, response: ModelResponse, plan: StepPlan) -> ModelResponse:
        """``response`` whose calls carry the branch's conversation where their tool asks
        for it (:meth:`BaseTool.call_conversation <srh_core.tools.base.BaseTool.call_conversation>`:
        ``create_skill`` drafts from it).

        The conversation is the step's buffer (the plan's: it travels with the plan to
        a cluster's sample task), bounded by the tool; the call carries it to whichever
        process runs it.
        """
        buffer = plan.prompt if plan.buffer is None else plan.buffer
        calls = []
        for call in response.tool_calls:
            tool = self.tools.get(call.name)
            conversation = None if tool is None else type(tool).call_conversation(buffer)
            calls.append(call if conversation is None else replace(call,
                                                                   conversation=conversation))
        if all(new is old for new, old in zip(calls, response.tool_calls, strict=True)):
            return response
        return replace(response, tool_calls=tuple(calls))

    def execute_tool_calls(self, response_list: Sequence[ModelResponse], R: int, L: int,
                           C: int) -> list[list[ToolCallResult]]:
        """Run each sample's calls as one batch; results grouped by sample, in order."""
        grouped = []
        for response in response_list:
            calls = list(response.tool_calls)
            results = self.run_calls(calls, key=self.node_id(R=R, C=C, L=L, K=response.sample))
            self.record_tool_calls(calls, results, R, L, C)
            grouped.append(results)
        return grouped

    def run_calls(self, calls: Sequence[ToolCall], key: str | None = None
                  ) -> list[ToolCallResult]:
        """Run calls through the executor under the tool timeout and the time left."""
        if self.executor is None:
            raise SearchStateError("The agent has no run bound (call run() or bind_run()).")
        timeout = self.settings.tool_timeout
        seconds = self.seconds_left()
        if seconds is not None:
            timeout = max(1.0, min(timeout, seconds))
        return self.executor.run(calls, timeout=timeout, key=key)

    def record_tool_calls(self, tool_calls: Sequence[ToolCall], results: Sequence[ToolCallResult],
                          R: int, L: int, C: int, forced: bool = False) -> None:
        """Hook: log executed calls (the run directory's ``tool_calls.jsonl``)."""
        coordinate = {"R": R, "C": C, "L": L}
        self.require_store().log_tool_calls(coordinate, list(tool_calls), list(results), forced)
        self.emit("tool_calls", coordinate=coordinate, forced=forced,
                  calls=list(tool_calls), results=list(results))

    def record_search_iteration(self, response_list: Sequence[ModelResponse],
                                results_list: Sequence[Sequence[ToolCallResult]],
                                parent_nodes: Sequence[ParentLink], prompt: list[Message],
                                usage: Mapping[str, Any] | None, R: int, L: int, C: int
                                ) -> None:
        """Record one node per sample (the K=1 node also keeps the prompt)."""
        for response, results in zip(response_list, results_list, strict=True):
            self.record_sample(response, results, parent_nodes, prompt, usage, R=R, C=C, L=L,
                               K=response.sample)

    def record_sample(self, response: ModelResponse, results: Sequence[ToolCallResult],
                      parents: Sequence[ParentLink], prompt: list[Message] | None,
                      usage: Mapping[str, Any] | None, *, R: int, C: int, L: int, K: int
                      ) -> bool:
        """Record the node of sample K; False when the store knows it was recorded already.

        Inside a sample whose store batches its writes (the Redis store) the node
        is queued and True is returned; the batch's outcome says whether it was new.
        """
        store = self.require_store()
        node = store.build_node(response, results, tuple(parents), R=R, C=C, L=L, K=K,
                                prompt=prompt if K == 1 else None, usage=usage)
        return store.record_node(node)

    def collect_candidates(self, response_list: Sequence[ModelResponse],
                           results_list: Sequence[Sequence[ToolCallResult]], R: int, L: int,
                           C: int) -> list[CandidateRecord]:
        """Push the samples' eligible candidates to the pool; return them, ranked."""
        carried = carried_candidates(results_list)
        collected = []
        for index, (response, results) in enumerate(zip(response_list, results_list,
                                                        strict=True)):
            found = carried[index] if carried is not None else self.sample_candidates(
                response, results, R=R, C=C, L=L, K=response.sample)
            for candidate in found:
                self.push_candidate(candidate)
                collected.append(candidate)
        return rank_candidates(collected, self.policy)

    # -------------------------------------------------- the run's candidates
    def push_candidate(self, record: CandidateRecord) -> None:
        """Add a candidate to the run's pool (kept once; an unrankable one is only logged)."""
        self.require_store().push_candidate(record)

    def best_candidate(self) -> CandidateRecord | None:
        """The formula the run reports so far (the ``selection`` rule over the front)."""
        return self.require_store().best_candidate()

    def get_pareto_front(self) -> list[CandidateRecord]:
        """The run's metric-complexity Pareto front, best metric first."""
        return self.require_store().pareto_front()

    def get_ranking_metric(self, record: CandidateRecord | Mapping[str, Any]
                           ) -> tuple[str | None, float | int | None]:
        """The ranking metric of a candidate and its label (``"validation mse"``).

        Returns:
            (label, value as reported, not negated), or (None, None) when absent.
        """
        candidate = _as_candidate(record)
        split = self.policy.ranking_split(candidate)
        value = candidate.metric(self.policy.metric, split)
        if value is None:
            return None, None
        return f"{split} {self.policy.metric}", value

    def candidate_sort_key(self, record: CandidateRecord | Mapping[str, Any]
                           ) -> tuple[float, float] | None:
        """(signed metric, complexity): smaller ranks first; None when it cannot be ranked."""
        key = self.policy.sort_key(_as_candidate(record))
        return None if key is None else (key[0], float(key[1]))

    @staticmethod
    def candidate_to_dict(record: CandidateRecord) -> dict[str, Any]:
        """The candidate's public shape with each split's metrics also at the top level
        (``train``, ``validation``), for code that reads split results there."""
        data = record.to_dict()
        for split, metrics in (data.get("metrics") or {}).items():
            data.setdefault(split, dict(metrics))
        return data

    def sample_candidates(self, response: ModelResponse, results: Sequence[ToolCallResult],
                          *, R: int, C: int, L: int, K: int) -> list[CandidateRecord]:
        found = sample_candidates(response.tool_calls, results,
                                  self.node_id(R=R, C=C, L=L, K=K), self.context.target)
        revision = self.context.revision  # the data the sample's tools scored them on
        return [replace(c, details={**c.details, data_refresh.REVISION_DETAIL: revision})
                for c in found]

    # ------------------------------------------------------ step 3: close a step
    def close_step(self, branch: BranchState, plan: StepPlan,
                   results_list: Sequence[Sequence[ToolCallResult]], *,
                   candidates: Sequence[Sequence[CandidateRecord] | None] | None = None
                   ) -> BranchState:
        """The branch's state after step ``plan.L``, from the K samples' results.

        Args:
            branch: The branch as it was before the step.
            plan: The step's plan.
            results_list: Each sample's tool results (K lists).
            candidates: Each sample's candidates as :meth:`run_sample` found them
                (carried, or stored with its results); None, for all or for one
                sample, computes them here (a record stored without them).
        """
        R, C, L = plan.R, plan.C, plan.L
        found = list(candidates) if candidates is not None else [None] * len(results_list)
        candidates = [known if known is not None else
                      self.sample_candidates(response, results, R=R, C=C, L=L, K=k)
                      for k, (response, results, known) in
                      enumerate(zip(plan.responses, results_list, found, strict=True), 1)]
        carried = SampleResults(results_list, candidates)
        candidates = [c for found in carried.candidates or () for c in found]
        exact = branch.exact_level
        if exact is None and any(self.exact_fit.reached(c) for c in candidates):
            exact = L
        front = updated_front(branch.front_records(), candidates, self.policy)
        revision = branch.data_revision if plan.data_revision is None else plan.data_revision
        seen = BranchState(branch.run_id, R, C, L, plan.branch_buffer(), list(plan.parents),
                           seeds=branch.seeds, front=front, exact_level=exact,
                           data_revision=revision)
        with self.stateless_phase("close_step"):
            buffer, parents = self.update_conversation(seen.buffer, plan.responses, carried,
                                                       plan.parents, R, L, C, branch=seen)
            reason = self.finish_iteration(buffer, R, L, C)
        after = BranchState(branch.run_id, R, C, L + 1, buffer, parents, seeds=branch.seeds,
                            front=front, exact_level=exact, data_revision=revision)
        if L >= self.settings.max_refinement_depth and (reason is None
                                                        or reason in RESUMABLE_STOPS):
            # its last step is done: a time limit reached meanwhile must not make
            # `srh resume` run a step past the depth
            after.stop(STOP_DEPTH, status="done")
        elif reason is not None:
            after.stop(reason)
        return after

    def update_conversation(self, buffer: list[Message], response_list: Sequence[ModelResponse],
                            results_list: Sequence[Sequence[ToolCallResult]],
                            node_parents: Sequence[ParentLink], R: int, L: int, C: int, *,
                            branch: BranchState | None = None
                            ) -> tuple[list[Message], list[ParentLink]]:
        """Continue with the best sample; merge the others' analysis output.

        Args:
            branch: The branch as the step left it (its front includes the step's
                candidates): what the progress message describes.

        Returns:
            The new buffer and the parent links of the next step's nodes.
        """
        candidates = carried_candidates(results_list)
        if candidates is None:
            candidates = [self.sample_candidates(r, res, R=R, C=C, L=L, K=k) for k, (r, res) in
                          enumerate(zip(response_list, results_list, strict=True), 1)]
        errors = [sum(not r.ok for r in results) + len(response.parse_issues or ())
                  for response, results in zip(response_list, results_list, strict=True)]
        chosen = choose_sample(candidates, errors, self.policy)
        parents = [ParentLink(self.node_id(R=R, C=C, L=L, K=chosen + 1), "continuation")]
        calls = list(response_list[chosen].tool_calls)
        results = list(results_list[chosen])
        for k, (response, sample_results) in enumerate(zip(response_list, results_list,
                                                           strict=True)):
            merged = [(c, r) for c, r in zip(response.tool_calls, sample_results, strict=True)
                      if k != chosen and r.ok and not is_evaluation(r)]
            if merged:
                parents.append(ParentLink(self.node_id(R=R, C=C, L=L, K=k + 1), "context_merge"))
                calls += [renamed_call(c, k + 1) for c, _ in merged]
                results += [r for _, r in merged]
        added = self.conversation_messages(response_list[chosen], calls, results)
        added += self.build_response_followup_messages(response_list, results_list,
                                                       R=R, L=L, C=C, chosen=chosen)
        added.append(self.build_progress_message(L, branch=branch))
        self.on_buffer_messages_added(added, R=R, C=C, L=L)
        return list(buffer) + added, parents

    def conversation_messages(self, response: ModelResponse, calls: list[ToolCall],
                              results: list[ToolCallResult]) -> list[Message]:
        """Assistant message (with merged calls) plus the tool-result messages."""
        if not calls and not response.content.strip():
            return []
        assistant = self.parser.assistant_message(response.content, calls)
        return [assistant] + list(self.parser.format_tool_result_messages(calls, results))

    def build_response_followup_messages(self, response_list: Sequence[ModelResponse],
                                         results_list: Sequence[Sequence[ToolCallResult]], *,
                                         R: int, L: int, C: int, chosen: int = 0
                                         ) -> list[Message]:
        """Notices about the continuing response: parse problems and truncation."""
        response = response_list[chosen]
        messages = []
        notice = self.parser.format_parse_issues(list(response.parse_issues or []))
        if notice:
            messages.append(notice)
        if response.finish_reason == "length":
            messages.append({"role": "user", "content": (
                "[Harness] Your previous response was cut by the length limit; complete tool "
                "calls in it were run, the cut one was dropped. Be more concise.")})
        return messages

    def finish_iteration(self, buffer: list[Message], R: int, L: int, C: int
                         ) -> str | None:
        """Hook: a reason that ends this branch after this step, or None to go on.

        The early-stop rule is not decided here: it ends the whole restart at
        a level, see :mod:`srh_core.agent.outcome`.
        """
        seconds = self.seconds_left()
        if seconds is not None and seconds <= 0:
            return STOP_TIME_LIMIT
        return None

    # --------------------------------------------------------------- the run
    def run(self, X: Mapping[str, Any], y: Mapping[str, Any] | Any,
            problem_description: str = "") -> dict[str, Any]:
        """Run the whole search on ``X`` and ``y`` in this process; the result as a dict.

        Args:
            X: Feature arrays keyed by variable name.
            y: ``{target_name: array}``, or a bare array (named "y").
            problem_description: What the data is, for the model.

        Returns:
            ``SearchResult.to_dict()``; its status says how the run ended.
        """
        return self.search(X, y, problem_description)

    def search(self, X: Mapping[str, Any], y: Mapping[str, Any] | Any,
               problem_description: str = "") -> dict[str, Any]:
        """The R-C-L-K search of the embedded runtime (see :mod:`srh_core.embedded`)."""
        self.result_ = run_search(self, X, y, problem_description)
        return self.result_.to_dict()

    @classmethod
    def import_path(cls) -> str:
        """The import path a worker rebuilds this class from (:func:`agent_class_path`)."""
        return agent_class_path(cls)

    @classmethod
    def resume(cls, path: str | Path, **overrides: Any) -> dict[str, Any]:
        """Continue a run directory; finished steps are not repeated."""
        return resume_search(path, agent_class=cls, **overrides).to_dict()

    def format_progress(self, R: int | None, L: int | None, C: int | None) -> str:
        settings = self.settings
        if R is None:
            return "no step run"
        return (f"R={R}/{settings.max_restart_loop} C={C}/{settings.global_width} "
                f"L={L}/{settings.max_refinement_depth} K={settings.local_sample_size}")

    def build_search_result(self, status: str, R: int | None = None, L: int | None = None,
                            C: int | None = None, *, stop_reason: str | None = None
                            ) -> SearchResult:
        """The run's result from the store (saved to result.json when persisting)."""
        store = self.require_store()
        latest = store.latest_coordinate
        if R is None and latest is not None:
            R, L, C = latest.R, latest.L, latest.C
        progress = (f"{self.format_progress(R, L, C)}; "
                    f"{store.node_count}/{self.settings.max_nodes} nodes")
        return store.result(status, progress, stop_reason=stop_reason,
                            selection=self.settings.selection)


def _canonical_tool(name: str, setting: str) -> str:
    try:
        return BaseTool.canonical_name(name)
    except Exception as error:
        raise ConfigurationError(str(error), setting=setting) from error


def agent_class_path(agent_class: type[SRAgent]) -> str:
    """The import path (``module:QualName``) a worker rebuilds ``agent_class`` from.

    Raises:
        ConfigurationError: The class cannot be imported by name in another process.
    """
    module, name = agent_class.__module__, agent_class.__qualname__
    if module == "__main__" or "<locals>" in name:
        raise ConfigurationError(
            f"The agent class {name!r} is defined in {module!r}; a worker can only rebuild an "
            "agent whose class it can import: define it in an importable module.",
            setting="agent_class")
    return f"{module}:{name}"


def load_agent_class(path: str) -> type[SRAgent]:
    """The SRAgent subclass named by an import path from :func:`agent_class_path`.

    Raises:
        ConfigurationError: The path does not name an importable SRAgent subclass.
    """
    import importlib

    module_name, _, qualname = path.partition(":")
    try:
        found: Any = importlib.import_module(module_name)
        for part in qualname.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError, ValueError) as error:
        raise ConfigurationError(f"The agent class {path!r} cannot be imported here: {error}.",
                                 setting="agent_class") from error
    if not (isinstance(found, type) and issubclass(found, SRAgent)):
        raise ConfigurationError(f"{path!r} is not an SRAgent subclass.", setting="agent_class")
    return found


def recorded_agent_class(path: str | Path) -> type[SRAgent]:
    """The agent class a run directory recorded (SRAgent when it names none it can load)."""
    try:
        recorded = RunDirectory(path).run_record().get("agent", {}).get("class")
    except SearchStateError:
        recorded = None
    if recorded and ":" in str(recorded):
        try:
            return load_agent_class(str(recorded))
        except ConfigurationError as error:
            logger.warning("%s Resuming with SRAgent.", error)
    return SRAgent


def _as_candidate(record: CandidateRecord | Mapping[str, Any]) -> CandidateRecord:
    return record if isinstance(record, CandidateRecord) else CandidateRecord.from_dict(record)


def renamed_call(call: ToolCall, k: int) -> ToolCall:
    """A merged call gets an id unique across samples."""
    return ToolCall(call.name, dict(call.params), id=f"{call.id or 'call'}_k{k}", raw=call.raw,
                    raw_str=call.raw_str)


def relay_deltas(call: Any, stream_callback: Callable[[dict[str, Any]], None]) -> None:
    """Pass each streamed text piece of ``call`` to ``stream_callback``, with the text so far."""
    so_far: dict[int, str] = {}
    for delta in getattr(call, "iter_deltas", tuple)():  # an adapter of a test may not stream
        if not delta.content:
            continue
        so_far[delta.sample] = so_far.get(delta.sample, "") + delta.content
        stream_callback({"type": "delta", "sample": delta.sample, "delta": delta.content,
                         "content": so_far[delta.sample]})


def truncated_responses(error: ModelResponseTruncatedError, k: int) -> list[ModelResponse]:
    """The K responses of a step in which one was cut by the length limit."""
    kept = list(getattr(error, "responses", None) or [])
    kept += list(getattr(error, "truncated_responses", None) or [])
    by_sample = {response.sample: response for response in kept}
    sample = error.sample or 1
    if sample not in by_sample:
        by_sample[sample] = ModelResponse(
            content=error.partial_message, tool_calls=tuple(error.tool_calls),
            message={"role": "assistant", "content": error.partial_message},
            finish_reason="length", sample=sample)
    return [by_sample[i] for i in sorted(by_sample) if 1 <= i <= k]


def pad_responses(responses: list[ModelResponse], k: int) -> list[ModelResponse]:
    """Exactly K responses, numbered 1..K: missing samples become empty responses (still nodes)."""
    padded = [_numbered(response, index) for index, response in enumerate(responses[:k], 1)]
    while len(padded) < k:
        padded.append(ModelResponse(content="", message={"role": "assistant", "content": ""},
                                    finish_reason="missing", sample=len(padded) + 1))
    return padded


def _numbered(response: ModelResponse, sample: int) -> ModelResponse:
    if response.sample == sample:
        return response
    return replace(response, sample=sample)

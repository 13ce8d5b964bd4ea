"""SRAgent: the R-C-L-K search, written once as step functions over BranchState.

A refinement step is three calls, each a method a subclass may override:

1. :meth:`SRAgent.open_step` -- ``prepare_iteration``, ``prepare_model_messages``
   and ``request_llm``: the prompt and the K model responses (a StepPlan);
2. :meth:`SRAgent.execute_tool_calls` -- every sample's tool calls, through
   the run's :class:`~srh_core.seams.ToolExecutor`;
3. :meth:`SRAgent.record_and_advance` -- ``record_search_iteration``,
   ``collect_candidates``, ``update_conversation`` and ``finish_iteration``.

The embedded runner calls them in a loop (:mod:`srh_core.agent.runner`); the
Celery runtime calls them one task at a time with the same hooks, so both
produce the same nodes and result. The three error families stay apart:
the model's mistakes are fed back as messages; programmer and configuration
errors raise; budgets (steps, time, exact fit) end branches or the run.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from srh_core.agent.branch import BranchState
from srh_core.agent.candidates import choose_sample, is_evaluation, sample_candidates
from srh_core.agent.lifecycle import AgentLifecycle
from srh_core.agent.prompt_hooks import PromptHooks
from srh_core.agent.settings import SearchSettings
from srh_core.agent.steps import StepPlan
from srh_core.api import ModelResponse
from srh_core.errors import ModelResponseTruncatedError
from srh_core.ranking import ExactFitRule, RankingPolicy
from srh_core.seams import CandidateStore, ToolExecutor
from srh_core.types import CandidateRecord, ParentLink, ToolCall, ToolCallResult

logger = logging.getLogger("srh.agent")

Message = dict[str, Any]
Observer = Callable[[Mapping[str, Any]], None]

class SRAgent(AgentLifecycle, PromptHooks):
    """Agent that runs an R-C-L-K symbolic-regression search.

    Settings are the reference's (see :class:`SearchSettings` for each one),
    passed as keyword arguments or as a ready ``settings`` object. Runtime
    objects (``context``, ``skill_manager``, a model ``api``) are separate
    arguments because they are not settings.

    Args:
        settings: Validated settings; built from ``settings_values`` when None.
        context: Shared data and workspace; a new context when None.
        skill_manager: Skill registry for the ``read_skill`` tool.
        api: A ready model adapter (tests inject a scripted one).
        **settings_values: Any :class:`SearchSettings` field.
    """

    DEFAULT_TOOLS: tuple[str, ...] = (
        "statistics_analysis", "relationship_analysis", "evaluate_formula", "submit_formula",
        "polynomial_fit", "power_law_fit", "rational_fit", "constant_fit",
        "harmonic_interaction_fit", "monomial_sum_fit", "call_sindy", "evaluate_eic",
        "evaluate_code",
        "read_skill", "call_pysr",
    )

    def __init__(self, settings: SearchSettings | None = None, *, context: Any = None,
                 skill_manager: Any = None, api: Any = None, **settings_values: Any) -> None:
        if settings is not None and settings_values:
            settings = settings.replace(**settings_values)
        self.settings = settings or SearchSettings.build(**settings_values)
        self.context = context
        self.skill_manager = skill_manager
        self.api = api
        self.strong_api: Any = None
        self.parser: Any = None
        self.tools: dict[str, Any] = {}
        self.store: CandidateStore | None = None
        self.executor: ToolExecutor | None = None
        self.router: Any = None
        self.task_route: tuple[float, list[str]] = (0.0, [])
        self.policy = RankingPolicy(self.settings.ranking_metric, self.settings.larger_is_better)
        self.exact_fit = ExactFitRule(self.settings.exact_fit_metric,
                                      self.settings.exact_fit_threshold,
                                      self.settings.exact_fit_metric in ("r2", "pearson",
                                                                         "spearman"))
        self.problem_description = ""
        self.deadline: float | None = None
        self.observers: list[Observer] = []

    # ------------------------------------------------------------ helpers
    @property
    def K(self) -> int:
        return self.settings.local_sample_size

    def node_id(self, R: int, C: int, L: int, K: int) -> str:
        assert self.store is not None, "the run has not started"
        return self.store.node_id(R, C, L, K)

    def seconds_left(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.monotonic()

    def emit(self, event: str, **fields: Any) -> None:
        """Tell observers (progress displays, loggers) what happened."""
        for observer in self.observers:
            observer({"event": event, **fields})

    # ------------------------------------------------------- opening steps
    def prepare_iteration(self, buffer: list[Message], R: int, L: int, C: int
                          ) -> str | None:
        """Hook: apply control changes before the prompt is built.

        Returns None to continue, or a reason that stops this branch.
        """
        seconds = self.seconds_left()
        if seconds is not None and seconds <= 0:
            return "time_limit"
        return None

    def prepare_model_messages(self, buffer: list[Message], R: int, L: int, C: int
                               ) -> list[Message]:
        """The messages sent to the model; adds forced diagnostics at L=1."""
        if self.settings.force_initial_diagnostics and L == 1:
            buffer.append(self.run_initial_diagnostics(R, L, C))
        return [dict(message) for message in buffer]

    def run_initial_diagnostics(self, R: int, L: int, C: int) -> dict[str, str]:
        """Run the opening analysis tools and the method skill; one user message."""
        calls = [ToolCall("statistics_analysis", {}), ToolCall("relationship_analysis", {}),
                 ToolCall("read_skill", {"name": "discover-symbolic-laws"})]
        calls = [call for call in calls if call.name in self.tools]
        results = self.executor.run(calls) if self.executor is not None else []
        self.record_tool_calls(calls, results, R, L, C, forced=True)
        sections = [f"## {c.name}\n{r.result_str}" for c, r in zip(calls, results, strict=True)]
        return {"role": "user", "content": "[Initial diagnostics run by the harness]\n\n"
                + "\n\n".join(sections)}

    def request_llm(self, prompt: list[Message], R: int, L: int, C: int,
                    stream_callback: Callable[[dict[str, Any]], None] | None = None,
                    ) -> tuple[list[ModelResponse], dict[str, Any]]:
        """Request K responses; a truncated response is kept with what arrived."""
        api, route = self.route_model(L)
        options = {"n": self.K, "max_tokens": self.settings.llm_max_tokens,
                   "temperature": self.settings.llm_temperature,
                   "seed": self.sampling_seed(R, C, L)}
        try:
            call = api(prompt, **options)
            responses, usage = list(call.responses), dict(call.usage or {})
        except ModelResponseTruncatedError as error:
            responses, usage = truncated_responses(error, self.K), dict(error.usage)
        responses = pad_responses(responses, self.K)
        self.emit("responses", R=R, C=C, L=L, route=route, usage=usage)
        return responses, usage

    def sampling_seed(self, R: int, C: int, L: int) -> int:
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
        """Open step L of a branch; None when ``prepare_iteration`` stops the branch."""
        reason = self.prepare_iteration(branch.buffer, branch.R, branch.L, branch.C)
        if reason is not None:
            branch.status, branch.stop_reason = "stopped", reason
            return None
        prompt = self.prepare_model_messages(branch.buffer, branch.R, branch.L, branch.C)
        responses, usage = self.request_llm(prompt, branch.R, branch.L, branch.C)
        return StepPlan(branch.R, branch.C, branch.L, prompt, responses, list(branch.parents),
                        usage)

    # ------------------------------------------------------ tool execution
    def execute_tool_calls(self, response_list: Sequence[ModelResponse], R: int, L: int,
                           C: int) -> list[list[ToolCallResult]]:
        """Run every sample's calls as one batch; results grouped by sample, in order."""
        calls = [call for response in response_list for call in response.tool_calls]
        results = self.run_calls(calls)
        self.record_tool_calls(calls, results, R, L, C)
        grouped, start = [], 0
        for response in response_list:
            grouped.append(results[start:start + len(response.tool_calls)])
            start += len(response.tool_calls)
        return grouped

    def run_calls(self, calls: Sequence[ToolCall]) -> list[ToolCallResult]:
        assert self.executor is not None, "the run has not started"
        timeout = self.settings.tool_timeout
        seconds = self.seconds_left()
        if seconds is not None:
            timeout = max(1.0, min(timeout, seconds))
        return self.executor.run(calls, timeout=timeout)

    def record_tool_calls(self, tool_calls: Sequence[ToolCall], results: Sequence[ToolCallResult],
                          R: int, L: int, C: int, forced: bool = False) -> None:
        """Hook: observe executed calls (the run directory logs them)."""
        self.emit("tool_calls", coordinate={"R": R, "C": C, "L": L}, forced=forced,
                  calls=list(tool_calls), results=list(results))

    # ------------------------------------------------ recording, advancing
    def record_search_iteration(self, response_list: Sequence[ModelResponse],
                                results_list: Sequence[Sequence[ToolCallResult]],
                                parent_nodes: Sequence[ParentLink], prompt: list[Message],
                                usage: Mapping[str, Any] | None, R: int, L: int, C: int
                                ) -> None:
        """Record one node per sample."""
        for k, (response, results) in enumerate(zip(response_list, results_list, strict=True), 1):
            self.record_sample(response, results, parent_nodes, prompt, usage, R, C, L, k)

    def record_sample(self, response: ModelResponse, results: Sequence[ToolCallResult],
                      parents: Sequence[ParentLink], prompt: list[Message] | None,
                      usage: Mapping[str, Any] | None, R: int, C: int, L: int, K: int
                      ) -> bool:
        store = self.store
        node = store.build_node(response, results, tuple(parents), R=R, C=C, L=L, K=K,
                                prompt=prompt if K == 1 else None, usage=usage)
        return store.record_node(node)

    def collect_candidates(self, response_list: Sequence[ModelResponse],
                           results_list: Sequence[Sequence[ToolCallResult]], R: int, L: int,
                           C: int) -> list[CandidateRecord]:
        """Push every sample's eligible candidates; return the ranked pool."""
        for k, (response, results) in enumerate(zip(response_list, results_list, strict=True), 1):
            for candidate in self.sample_candidates(response, results, R, C, L, k):
                self.store.push_candidate(candidate)
        return self.store.ranked_candidates()

    def sample_candidates(self, response: ModelResponse, results: Sequence[ToolCallResult],
                          R: int, C: int, L: int, K: int) -> list[CandidateRecord]:
        return sample_candidates(response.tool_calls, results, self.node_id(R, C, L, K),
                                 self.context.target)

    def update_conversation(self, buffer: list[Message], response_list: Sequence[ModelResponse],
                            results_list: Sequence[Sequence[ToolCallResult]],
                            node_parents: Sequence[ParentLink], R: int, L: int, C: int
                            ) -> tuple[list[Message], list[ParentLink]]:
        """Continue with the best sample; merge the others' analysis output.

        Returns:
            The new buffer and the parent links of the next step's nodes.
        """
        candidates = [self.sample_candidates(r, res, R, C, L, k) for k, (r, res) in
                      enumerate(zip(response_list, results_list, strict=True), 1)]
        errors = [sum(not r.ok for r in results) + len(response.parse_issues or ())
                  for response, results in zip(response_list, results_list, strict=True)]
        chosen = choose_sample(candidates, errors, self.policy)
        parents = [ParentLink(self.node_id(R, C, L, chosen + 1), "continuation")]
        calls = list(response_list[chosen].tool_calls)
        results = list(results_list[chosen])
        for k, (response, sample_results) in enumerate(zip(response_list, results_list,
                                                           strict=True)):
            merged = [(c, r) for c, r in zip(response.tool_calls, sample_results, strict=True)
                      if k != chosen and r.ok and not is_evaluation(r)]
            if merged:
                parents.append(ParentLink(self.node_id(R, C, L, k + 1), "context_merge"))
                calls += [renamed_call(c, k + 1) for c, _ in merged]
                results += [r for _, r in merged]
        buffer = list(buffer)
        buffer += self.conversation_messages(response_list[chosen], calls, results)
        buffer += self.build_response_followup_messages(response_list, results_list,
                                                        R=R, L=L, C=C, chosen=chosen)
        buffer.append(self.build_progress_message(L))
        return buffer, parents

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
        """A reason that ends the search after this step, or None to go on."""
        if self.settings.early_stop and self.exact_fit.reached(self.store.best_candidate()):
            return "early_stopped"
        seconds = self.seconds_left()
        if seconds is not None and seconds <= 0:
            return "time_limit"
        return None

    def record_and_advance(self, branch: BranchState, plan: StepPlan,
                           results_list: Sequence[Sequence[ToolCallResult]]) -> BranchState:
        """Record the step's nodes and candidates, then advance the branch."""
        R, C, L = plan.R, plan.C, plan.L
        self.record_search_iteration(plan.responses, results_list, plan.parents, plan.prompt,
                                     plan.usage, R, L, C)
        self.collect_candidates(plan.responses, results_list, R, L, C)
        return self.advance(branch, plan, results_list)

    def advance(self, branch: BranchState, plan: StepPlan,
                results_list: Sequence[Sequence[ToolCallResult]]) -> BranchState:
        """``update_conversation`` and ``finish_iteration``: the branch's next state."""
        R, C, L = plan.R, plan.C, plan.L
        with self.active_branch(branch):
            buffer, parents = self.update_conversation(branch.buffer, plan.responses,
                                                       results_list, plan.parents, R, L, C)
            reason = self.finish_iteration(buffer, R, L, C)
        after = BranchState(branch.run_id, R, C, L + 1, buffer, parents, seeds=branch.seeds)
        if reason is not None:
            after.status, after.stop_reason = "stopped", reason
        elif L >= self.settings.max_refinement_depth:
            after.status, after.stop_reason = "done", "depth"
        best = self.store.best_candidate()
        self.emit("step", R=R, C=C, L=L, nodes=self.store.node_count,
                  best=best.formula if best else None, status=after.status)
        return after

    def run_step(self, branch: BranchState) -> BranchState:
        """One whole refinement step in this process."""
        plan = self.open_step(branch)
        if plan is None:
            return branch
        results_list = self.execute_tool_calls(plan.responses, plan.R, plan.L, plan.C)
        return self.record_and_advance(branch, plan, results_list)


def renamed_call(call: ToolCall, k: int) -> ToolCall:
    """A merged call gets an id unique across samples."""
    return ToolCall(call.name, dict(call.params), id=f"{call.id or 'call'}_k{k}", raw=call.raw,
                    raw_str=call.raw_str)


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
    """Exactly K responses: missing samples become empty responses (still nodes)."""
    padded = list(responses[:k])
    while len(padded) < k:
        padded.append(ModelResponse(content="", message={"role": "assistant", "content": ""},
                                    finish_reason="missing", sample=len(padded) + 1))
    return padded

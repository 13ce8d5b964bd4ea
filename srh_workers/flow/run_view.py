"""A run as a worker process sees it: its spec, its store, its data, and its agents.

Every task builds the run's agent the one way an agent is built
(``agent_class(settings=..., context=..., store=..., executor=...)``, which
binds the run through ``SRAgent.bind_run``), from the class named in the
spec, so a user's SRAgent subclass runs on the workers exactly as it runs
embedded. What is expensive to rebuild (the decoded data, the model
adapter) is kept per process in a small cache of runs.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from redis import Redis

from srh_core.agent import SRAgent, load_agent_class
from srh_core.agent.outcome import failed_reason
from srh_core.agent.settings import SearchSettings
from srh_core.api.cancel import cancel_when
from srh_core.api.endpoints import EndpointAccessError
from srh_core.context import AgentContext
from srh_core.embedded.executor import SerialToolExecutor
from srh_core.embedded.run_dir import path_inside, run_path
from srh_core.errors import ModelRequestCancelledError, ModelRequestError, SRHarnessError
from srh_core.types import ToolCall, ToolCallResult
from srh_workers.control.parking import agent_options
from srh_workers.endpoints import worker_access
from srh_workers.errors import AgentBuildError
from srh_workers.reliability import is_transient
from srh_workers.spec import RunSpec, load_spec
from srh_workers.store import RedisRunStore

logger = logging.getLogger("srh.workers")

RUN_CACHE_SIZE = 8
Granularity = Literal["step", "run"]
CUT_POLL_SECONDS = 1.0
#: Seconds left before a task's soft time limit (None: no limit). A step task passes its
#: own to :meth:`WorkerRunView.bounded_requests`: the threads pool enforces no limit, so a
#: model request that never answers is cut there.
Budget = Callable[[], float | None]


def resolve_granularity(settings: SearchSettings) -> Granularity:
    """How a run is cut into tasks: the setting, with "auto" meaning "run" for the offline model.

    The offline proposer answers in milliseconds, so a step's work is
    comparable to what distributing a step costs (several task hops); a
    model endpoint answers in seconds, and then every step should be its own
    tasks so that branches and samples run on as many workers as there are.
    """
    if settings.granularity != "auto":
        return settings.granularity
    return "run" if settings.llm_provider == "offline" else "step"


class StoredResultsExecutor:
    """A tool task's executor: a sample whose results are stored is answered from them.

    Args:
        inner: Runs the calls of a sample that has no stored results.
        stored: Stored results by batch key (the sample's node id).
    """

    def __init__(self, inner: Any, stored: Mapping[str, list[ToolCallResult]]) -> None:
        self.inner = inner
        self.stored = dict(stored)

    def run(self, calls: Sequence[ToolCall], *, timeout: float | None = None,
            key: str | None = None) -> list[ToolCallResult]:
        if key is not None and key in self.stored:
            return list(self.stored[key])
        return self.inner.run(calls, timeout=timeout, key=key)

    def close(self) -> None:
        self.inner.close()


class WorkerRunView:
    """One run in a worker: spec, store, cached data and model adapter, agent factory.

    Args:
        client: Redis of the run's store.
        spec: The run's specification.
        runs_dir: Where finished runs are written when their settings name no
            ``save_path`` (the worker's ``SRH_RUNS_DIR``); None writes nothing.
    """

    def __init__(self, client: Redis, spec: RunSpec, runs_dir: Path | None = None) -> None:
        self.client = client
        self.spec = spec
        self.runs_dir = runs_dir
        #: runs_dir is the operator's artifact root: compact the run once its directory is
        #: written (srh_workers.artifacts).
        self.artifacts = False
        self.settings = spec.search_settings()
        self.store = RedisRunStore(client, spec.run_id, self.settings.ranking_metric,
                                   self.settings.larger_is_better, register=False)
        self.agent_class = load_agent_class(spec.agent_class)
        self.granularity = resolve_granularity(self.settings)
        self._contexts: OrderedDict[int | None, Any] = OrderedDict()  # by data revision
        self._evaluator: Any = None  # the run's sandboxed custom evaluator, built once
        self._api: Any = None
        self._thread_api = threading.local()  # a bounded step's client: one per worker thread
        self._access: Any = None
        self._lock = threading.Lock()
        self._clock_start: float | None = None  # a "fit" clock's start, once read or set

    @property
    def run_id(self) -> str:
        return self.spec.run_id

    @property
    def width(self) -> int:
        return self.settings.global_width

    @property
    def context(self) -> Any:
        """The run's data context in the version its record names (a data refresh publishes
        a new version: srh_core.agent.data_refresh)."""
        return self.context_at(None)

    def context_at(self, revision: int | None) -> Any:
        """The run's context of data revision ``revision`` (None: the one its record names),
        decoded once per version and process (the newest RUN_CACHE_SIZE versions kept)."""
        if revision is None:
            revision = self.store.data_revision()
        with self._lock:
            context = self._contexts.get(revision)
            if context is None:
                if self._evaluator is None:
                    self._evaluator = self.spec.evaluator() or False  # False: the default
                context = AgentContext.from_payload(self.store.payload(revision),
                                                    evaluator=self._evaluator or None)
                self._contexts[revision] = self._contexts[context.revision] = context
                while len(self._contexts) > RUN_CACHE_SIZE:
                    self._contexts.popitem(last=False)
            return context

    def agent(self, stored: Mapping[str, list[ToolCallResult]] | None = None, *,
              bounded: bool = False, revision: int | None = None) -> SRAgent:
        """The run's agent, bound to its store, with a serial executor over its tools.

        Args:
            stored: Results already stored for samples, by node id (a tool task's).
            bounded: The agent's model requests will be cut (:meth:`bounded_requests`).
            revision: The data revision to bind (a step's samples and close use the one
                the step was opened on); None: the version the run's record names.

        Raises:
            AgentBuildError: The run's spec cannot make an agent here (:func:`build_failure`).
        """

        def executor(tools: Mapping[str, Any]) -> Any:
            serial = SerialToolExecutor(tools)
            if stored or self.granularity != "run":  # no ``start``: a step's tools are warmed
                return StoredResultsExecutor(serial, stored or {})  # in the tool tasks
            return serial

        # A bounded step cuts its request by cancelling its client's calls in flight, so
        # it must not share a client with the other threads' steps; a client of its own
        # per thread (kept: building one costs an HTTP client and a TLS context, tens of ms)
        # is cut alone, and calls made after a cancel are not affected.
        shared = getattr(self._thread_api, "api", None) if bounded else self._api
        try:
            context = self.context_at(revision)
            agent = self.agent_class(settings=self.settings, context=context,
                                     evaluator=context.evaluator,
                                     api=shared,
                                     store=self.store, executor=executor,
                                     problem_description=self.spec.description,
                                     deadline=self.deadline(), model_access=self.model_access,
                                     **self.agent_options())
        except BUILD_ERRORS as error:
            failure = build_failure(self.run_id, error)
            if failure is None:
                raise
            raise failure from error
        if agent.deadline is None and self.fit_clock:  # the run's first task starts it,
            agent.warm_up(wait=True)  # once ready: a whole run's tools, a baseline's package
            agent.deadline = self.deadline(start=True)
        if self.granularity == "run":  # one agent runs many steps: data may be refreshed
            agent.context_source = lambda: self.context
        if bounded:
            self._thread_api.api = agent.api
        else:
            with self._lock:
                self._api = self._api or agent.api
        return agent

    @contextlib.contextmanager
    def bounded_requests(self, agent: SRAgent, budget: Budget | None) -> Iterator[None]:
        """Cut ``agent``'s model requests at the task's soft time limit or at a stop request.

        The limit is ``budget``'s (None: not cut); the run's stop flag (``srh cancel``,
        a failed branch) and the time are read every :data:`CUT_POLL_SECONDS` by the one
        watcher (:func:`srh_core.api.cancel.cancel_when`), so a cancel does not wait for
        a model that never answers. ``agent`` is built with ``bounded=True``.

        Raises:
            ModelRequestError: The model had not answered when the time was up
                or the run was stopped (not retryable: the branch ends with the reason).
        """
        seconds = None if budget is None else budget()
        if seconds is None:
            yield
            return
        cut = RequestCut(self, seconds)
        with cancel_when(cut, lambda: cancel_requests(agent), poll_seconds=CUT_POLL_SECONDS,
                         name="srh-request-cut"):
            try:
                yield
            except ModelRequestCancelledError as error:
                if cut.reason is None:  # cancelled by something else (a force-pause)
                    raise
                raise ModelRequestError(f"The model request was cut: {cut.reason}.",
                                        retryable=False) from error

    @property
    def model_access(self) -> Any:
        """The endpoints and keys this run may use here (never the worker's keys elsewhere)."""
        if self._access is None:
            self._access = worker_access(self.spec, self.client)
        return self._access

    def agent_options(self) -> dict[str, Any]:
        """Further constructor arguments: an interactive agent's Redis controls and options."""
        return agent_options(self)

    @property
    def fit_clock(self) -> bool:
        """The run's time limit is a "fit" clock, started by its first task (the spec
        has no deadline: :func:`srh_workers.submit.wall_deadline`)."""
        return (self.spec.deadline is None and self.settings.time_limit is not None
                and self.settings.time_limit_clock == "fit")

    def clock_start(self, *, start: bool = False) -> float | None:
        """Epoch seconds when the run's "fit" clock started; ``start``: start it now
        unless a task did (None: not started, or no fit clock)."""
        if self._clock_start is None and self.fit_clock:
            self._clock_start = (self.store.start_clock(time.time()) if start
                                 else self.store.clock_started())
        return self._clock_start

    def deadline(self, *, start: bool = False) -> float | None:
        """The run's deadline as a ``time.monotonic()`` value of this process: the spec's
        for a wall clock, the stored start's for a "fit" clock (``start``: see
        :meth:`clock_start`); None when it has none (yet)."""
        started = self.clock_start(start=start)
        ends = self.spec.deadline if started is None else started + (self.settings.time_limit or 0)
        return None if ends is None else time.monotonic() + (ends - time.time())

    @property
    def run_dir(self) -> Path | None:
        """The run directory: the settings' save_path, else ``runs_dir/run_id``.

        A worker writes only inside its ``runs_dir``: a save_path chosen by the
        submitter is taken relative to it and must stay inside it.

        Raises:
            ConfigurationError: The run id or save_path would leave ``runs_dir``.
        """
        if self.runs_dir is None:
            return None
        if self.settings.save_path:
            return path_inside(self.runs_dir, self.settings.save_path)
        return run_path(self.runs_dir, self.spec.run_id)


class RequestCut:
    """When a bounded step's model request is cut, and why (the watcher's condition).

    Args:
        rt: The run (its stop flag).
        seconds: Seconds left before the step task's soft limit.
    """

    def __init__(self, rt: WorkerRunView, seconds: float) -> None:
        self.rt = rt
        self.seconds = seconds
        self.end = time.monotonic() + seconds
        self.reason: str | None = None
        self._asked = False

    def __call__(self) -> bool:
        """True once the run is stopped or the time is up; records which in ``reason``.

        The watcher's first ask (at once) reads only the clock: the scheduler's gate read
        the stop flag to open this step, so reading it again would only cost Redis a command
        per step (``scripts/redis_commands_per_step.py``)."""
        stop = _stop_reason(self.rt) if self._asked else None
        self._asked = True
        if stop is None and time.monotonic() < self.end:
            return False
        self.reason = stop or (f"no answer within the step task's time limit "
                               f"({self.seconds:.0f} s left of SRH_BRANCH_SOFT_LIMIT)")
        return True


def cancel_requests(agent: SRAgent) -> None:
    """Cancel the model requests ``agent``'s adapters have in flight."""
    for api in (agent.api, getattr(agent, "strong_api", None)):
        if api is not None and callable(getattr(api, "cancel", None)):
            api.cancel()


def _stop_reason(rt: WorkerRunView) -> str | None:
    try:
        return rt.store.flow.stop_reason()
    except Exception:  # a Redis blip must not cut the request; the time limit still does
        return None


#: What building a run's view or agent raises when the run's spec is wrong (a setting, a
#: skill, a tool, the data payload, the agent class), the same on every delivery: errors of
#: code and input, never of the machine (OSError, MemoryError) or of Redis.
BUILD_ERRORS: tuple[type[Exception], ...] = (SRHarnessError, TypeError, ValueError, LookupError,
                                             AttributeError, ImportError)


def build_failure(run_id: str, error: Exception) -> AgentBuildError | None:
    """The :class:`AgentBuildError` a failed build of ``run_id``'s view or agent raises.

    A deterministic error becomes one, and the task bodies' boundary
    (:mod:`srh_workers.flow.tasks`) ends the run failed with it; None (raise ``error``
    as it is) for a transient error (:func:`srh_workers.reliability.is_transient`: the
    task is retried) and for an endpoint refusal (its own handler refuses the run).
    """
    if is_transient(error) or isinstance(error, EndpointAccessError):
        return None
    reason = failed_reason(error)
    return AgentBuildError(f"Run {run_id}: its agent cannot be built on this worker "
                           f"({reason.removeprefix('failed: ')}).", run_id=run_id,
                           reason=reason)


_CACHE: OrderedDict[str, WorkerRunView] = OrderedDict()
_CACHE_LOCK = threading.Lock()


def run_view_for(client: Redis, run_id: str, runs_dir: Path | None = None) -> WorkerRunView:
    """The cached view of ``run_id`` in this process (data decoded once per process).

    Raises:
        SearchStateError: The run has no spec (never submitted, or expired).
        AgentBuildError: Its spec's settings or agent class do not load here.
    """
    with _CACHE_LOCK:
        cached = _CACHE.get(run_id)
        if cached is not None:
            _CACHE.move_to_end(run_id)
            return cached
    spec = load_spec(RedisRunStore(client, run_id, register=False))
    try:
        view = WorkerRunView(client, spec, runs_dir)
    except BUILD_ERRORS as error:
        failure = build_failure(run_id, error)
        if failure is None:
            raise
        raise failure from error
    with _CACHE_LOCK:
        _CACHE[run_id] = view
        while len(_CACHE) > RUN_CACHE_SIZE:
            _CACHE.popitem(last=False)
    return view


def forget_run(run_id: str) -> None:
    with _CACHE_LOCK:
        _CACHE.pop(run_id, None)

"""In-process ToolExecutors: serial, and a process pool that can cut calls.

Both resolve a call's tool by name among the run's enabled tools; an
unknown name becomes an ``ok=False`` result listing the available tools, so
the model can correct itself. :class:`ToolRunAbort` propagates.

The process pool rebuilds the tools in each worker from their registry
names and the run's context payload (sent once, at worker start), the same
way a Celery tool worker does, with the values the agent gave the tools
(settings, model access, skills: :data:`WORKER_VALUES`); a call's
``conversation`` (the calling branch's messages, for the tools that ask for
them) travels with the call. A call that overruns its timeout gets an
``ok=False`` result and the pool is replaced, which kills the runaway. The
workers end with the process that owns them, and :meth:`ProcessToolExecutor.close`
is bounded: a call still running when the run ends is killed, never waited on.
"""

from __future__ import annotations

import importlib
import logging
import multiprocessing
import os
import pickle
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import CancelledError, Future, ProcessPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures import wait as wait_futures
from concurrent.futures.process import BrokenProcessPool
from dataclasses import replace
from typing import Any

from srh_core.errors import ToolRunAbort, did_you_mean
from srh_core.tools.base import BaseTool, call_conversation, call_deadline
from srh_core.tools.custom_tools import CustomTool, load_custom_tool
from srh_core.types import ToolCall, ToolCallResult
from srh_engine.processes import end_with_parent, stop_pool

logger = logging.getLogger("srh.agent")


def unknown_tool_result(call: ToolCall, available: Sequence[str]) -> ToolCallResult:
    """The ``ok=False`` answer to a call naming a tool that is not enabled."""
    message = (f"Unknown tool {call.name!r}.{did_you_mean(call.name, available)} "
               f"Available tools: {', '.join(sorted(available))}.")
    return ToolCallResult.failure(message, tool=call.name, error_type="UnknownTool")


def run_call(tools: Mapping[str, BaseTool], call: ToolCall) -> ToolCallResult:
    """Run one call against the enabled tools (never raises but ToolRunAbort)."""
    tool = tools.get(call.name)
    if tool is None:
        return unknown_tool_result(call, list(tools))
    params = call.params if isinstance(call.params, Mapping) else {"_": call.params}
    with call_conversation(call.conversation), call_deadline(call.deadline):
        return tool(**params)


class SerialToolExecutor:
    """Runs calls one after another in this process (the default).

    A ``timeout`` cannot cut a call running in this process; it is checked
    between calls, and calls left when it has passed are reported as not run.
    """

    def __init__(self, tools: Mapping[str, BaseTool]) -> None:
        self.tools = dict(tools)

    def run(self, calls: Sequence[ToolCall], *, timeout: float | None = None,
            key: str | None = None) -> list[ToolCallResult]:
        deadline = None if timeout is None else time.monotonic() + timeout
        ends = _ends_at(timeout)
        results = []
        for call in calls:
            if deadline is not None and time.monotonic() > deadline:
                results.append(_not_run(call, timeout))
                continue
            results.append(run_call(self.tools, _with_deadline(call, ends)))
        return results

    def start(self, *, wait: bool = False, timeout: float = 0.0) -> float:
        """Warm the tools up in this process (:meth:`~BaseTool.warm_up`); the seconds spent."""
        started = time.monotonic()
        warm_tools(self.tools, wait)
        return time.monotonic() - started

    def close(self) -> None:
        return None


#: Seconds a call's deadline (``ToolCall.deadline``) falls before its executor's time limit:
#: the result travels back and is collected before the limit cuts the call.
DEADLINE_MARGIN_SECONDS = 0.25


def _ends_at(timeout: float | None) -> float | None:
    """The ``ToolCall.deadline`` of calls run now under ``timeout`` (epoch seconds)."""
    return None if timeout is None else time.time() + max(0.0, timeout - DEADLINE_MARGIN_SECONDS)


def _with_deadline(call: ToolCall, ends: float | None) -> ToolCall:
    """``call`` carrying ``ends`` as its deadline (the earlier one when it has one)."""
    if ends is None or (call.deadline is not None and call.deadline <= ends):
        return call
    return replace(call, deadline=ends)


def _not_run(call: ToolCall, timeout: float | None) -> ToolCallResult:
    return ToolCallResult.failure(
        f"Tool {call.name!r} was not run: the time budget ({timeout:.1f}s) ran out.",
        tool=call.name, error_type="TimeBudget")


def _timed_out(call: ToolCall, timeout: float) -> ToolCallResult:
    return ToolCallResult.failure(
        f"Tool {call.name!r} exceeded its time limit of {timeout:.1f}s and was stopped.",
        tool=call.name, error_type="TimeoutError")


_WORKER_TOOLS: dict[str, BaseTool] = {}


#: Seconds a closing pool's workers get to end before they are terminated (a run closes
#: its executor when it ends or is interrupted: a call still running then is not waited on).
CLOSE_SECONDS = 0.5


#: The run's parts an agent gives its tools besides the context (Agent.bind_tool_values)
#: that a worker's tools get too: the model's settings and access, the skills.
WORKER_VALUES = ("settings", "model_access", "skill_manager")


def worker_values(tools: Mapping[str, BaseTool]) -> dict[str, dict[str, Any]]:
    """Each tool's :data:`WORKER_VALUES` that can be sent to a worker (pickled)."""
    sent: dict[str, dict[str, Any]] = {}
    for name, tool in tools.items():
        values = {}
        for key in WORKER_VALUES:
            if tool.values.get(key) is None:
                continue
            try:
                pickle.dumps(tool.values[key])
            except Exception:  # noqa: BLE001 - a value that cannot travel stays behind
                continue
            values[key] = tool.values[key]
        sent[name] = values
    return sent


def _init_worker(owner_pid: int, modules: Sequence[str], names: Sequence[str],
                 build_context: Callable[..., Any], payload: Any,
                 custom_tools: Sequence[str] = (),
                 values: Mapping[str, Mapping[str, Any]] | None = None) -> None:
    end_with_parent(owner_pid)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    for module in modules:
        importlib.import_module(module)
    if custom_tools:  # a skill's tool.py is registered from its file, not by an import

        for path in custom_tools:
            load_custom_tool(path)
    context = build_context(payload)
    _WORKER_TOOLS.clear()
    _WORKER_TOOLS.update({name: BaseTool.create(name, context, **dict((values or {}).get(name)
                                                                      or {}))
                          for name in names})


def _run_in_worker(call: ToolCall) -> ToolCallResult:
    return run_call(_WORKER_TOOLS, call)


def warm_tools(tools: Mapping[str, BaseTool], wait: bool) -> None:
    """Each tool's :meth:`~BaseTool.warm_up`; one that fails is logged and left cold."""
    for name, tool in tools.items():
        try:
            tool.warm_up(wait=wait)
        except Exception:  # noqa: BLE001 - a warm-up is an optimisation: the call starts it
            logger.warning("Tool %r could not warm up; its first call starts it.", name,
                           exc_info=True)


def _worker_ready(wait: bool) -> int:
    """Answered by a worker once its initializer ran (tools imported and built) and its
    tools warmed up (ready, with ``wait``)."""
    warm_tools(_WORKER_TOOLS, wait)
    return os.getpid()


#: Most seconds :meth:`ProcessToolExecutor.start` waits for its workers to be ready.
START_SECONDS = 120.0


class ProcessToolExecutor:
    """Runs calls in a pool of worker processes; calls can be cut at a timeout.

    Safe to share between threads (the embedded runtime's concurrent
    branches do). Cutting a call kills the pool; calls of other threads that
    die with it are run once more on the new pool, so only a call that
    crashes its worker twice is reported as a crash.

    Args:
        tools: The enabled tools (their classes and names are what workers use).
        max_workers: Pool size.
        build_context: Picklable callable turning ``payload`` into the tools'
            context inside each worker.
        payload: Picklable description of the context (arrays + metadata).
    """

    def __init__(self, tools: Mapping[str, BaseTool], max_workers: int,
                 build_context: Callable[..., Any], payload: Any) -> None:
        self.names = list(tools)
        self.modules = sorted({type(tool).__module__ for tool in tools.values()})
        self.max_workers = max(1, max_workers)

        custom = [tool.spec.path for tool in tools.values() if isinstance(tool, CustomTool)]
        self._init_args = (os.getpid(), self.modules, self.names, build_context, payload, custom,
                           worker_values(tools))
        self._pool: ProcessPoolExecutor | None = None
        self._lock = threading.Lock()
        self._closed = False

    def _started_pool(self) -> ProcessPoolExecutor:
        """The pool, created when there is none (called with the lock held)."""
        if self._pool is None:
            self._pool = ProcessPoolExecutor(
                max_workers=self.max_workers, mp_context=multiprocessing.get_context("spawn"),
                initializer=_init_worker, initargs=self._init_args)
        return self._pool

    def _submit(self, call: ToolCall) -> Future | None:
        """The call's future on the pool; None once the executor is closed."""
        with self._lock:
            if self._closed:
                return None
            return self._started_pool().submit(_run_in_worker, _plain(call))

    def start(self, *, wait: bool = False, timeout: float = START_SECONDS) -> float:
        """Start the worker processes now rather than at the first call.

        A worker imports the tools' modules and builds the run's context when it
        starts (seconds on a busy machine); started here, that overlaps whatever
        the run does before its first call. With ``wait``, return once the
        workers answered a first request (a worker answers only after its start),
        or after ``timeout`` seconds (a worker that failed to start is not waited
        for: the first call reports it).

        Returns:
            The seconds spent here.
        """
        started = time.monotonic()
        with self._lock:
            if self._closed:
                return 0.0
            pool = self._started_pool()
            futures = [pool.submit(_worker_ready, wait) for _ in range(self.max_workers)]
        if wait:
            wait_futures(futures, timeout=timeout)
        return time.monotonic() - started

    def run(self, calls: Sequence[ToolCall], *, timeout: float | None = None,
            key: str | None = None) -> list[ToolCallResult]:
        deadline = None if timeout is None else time.monotonic() + timeout
        results = self._run_once(calls, deadline, timeout)
        if self._closed:  # the run is stopping: this step is not recorded, it is redone
            raise ToolRunAbort("The run is stopping; the step's tool calls were cut.")
        crashed = [index for index, result in enumerate(results)
                   if result.meta_data.get("error_type") == "BrokenPool"]
        if crashed:
            again = self._run_once([calls[i] for i in crashed], deadline, timeout)
            for index, result in zip(crashed, again, strict=True):
                results[index] = result
        return results

    def _run_once(self, calls: Sequence[ToolCall], deadline: float | None,
                  timeout: float | None) -> list[ToolCallResult]:
        if not calls:
            return []
        ends = _ends_at(None if deadline is None else deadline - time.monotonic())
        futures = {id(call): self._submit(_with_deadline(call, ends)) for call in calls
                   if call.name in self.names}
        results = [self._collect(call, futures.get(id(call)), deadline, timeout)
                   for call in calls]
        if any(r.meta_data.get("error_type") in ("TimeoutError", "BrokenPool") for r in results):
            self._kill_pool()
        return results

    def _collect(self, call: ToolCall, future: Future | None, deadline: float | None,
                 timeout: float | None) -> ToolCallResult:
        if call.name not in self.names:
            return unknown_tool_result(call, self.names)
        if future is None:
            return _closed(call)
        remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
        try:
            return future.result(timeout=remaining)
        except FutureTimeout:
            return _timed_out(call, timeout or 0.0)
        except BrokenProcessPool as error:
            if self._closed:
                return _closed(call)
            return ToolCallResult.failure(
                f"Tool {call.name!r} crashed its worker process ({error}).",
                tool=call.name, error_type="BrokenPool")
        except CancelledError:
            # another batch's timeout replaced the shared pool (:meth:`_kill_pool`) before
            # this call started: it never ran, so it is run again like a crashed one
            if self._closed:
                return _closed(call)
            return ToolCallResult.failure(
                f"Tool {call.name!r} was cancelled before it started (the tool processes "
                "were restarted).", tool=call.name, error_type="BrokenPool")

    def _kill_pool(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        stop_pool(pool, timeout=0.0)

    def close(self, timeout: float = CLOSE_SECONDS) -> None:
        """End the pool within about ``timeout`` seconds; later calls are not run.

        Calls still running after ``timeout`` are killed, and :meth:`run` raises
        :class:`ToolRunAbort` for their batch (the step is cut, not recorded: a
        resumed run does it again).
        """
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
        stop_pool(pool, timeout)


def _closed(call: ToolCall) -> ToolCallResult:
    return ToolCallResult.failure(
        f"Tool {call.name!r} was not run to its end: the run was stopping.",
        tool=call.name, error_type="RunStopping")


def _plain(call: ToolCall) -> ToolCall:
    """The picklable part of a call (provider-native ``raw`` objects stay behind)."""
    return ToolCall(name=call.name, params=dict(call.params or {}), id=call.id,
                    raw_str=call.raw_str, conversation=call.conversation, deadline=call.deadline)

"""SRAgentInteractive: an SRAgent whose step hooks honour the researcher's controls.

Everything happens in the reference's hooks, so the same subclass works in
both runtimes once they call them at the same boundaries:

- whether a step may open is not a hook's decision: the runtime asks the
  scheduler's gate (:func:`srh_core.agent.scheduler.gate`), which holds the
  branch while a pause is asked (embedded: :meth:`SRAgentInteractive.pause_gate`,
  the runner waits on its thread; on a cluster the step task parks it);
- ``prepare_iteration`` is the safe boundary after that: it applies the
  runtime settings queued (a ``settings`` command, or
  :meth:`SRAgentInteractive.queue_runtime_settings`; :data:`RUNTIME_SETTINGS` may change, checked by
  :func:`srh_core.agent.runtime_settings.changed_settings`, the authoring agents'
  check too) and publishes ``settings_applied`` / ``settings_failed``, inserts the
  queued messages into the branch's buffer (so they reach the next model
  request) and returns a queued ``next_c`` / ``next_r``, which ends the
  branch (``next_r``: every branch of the restart) as done;
- ``request_llm`` runs the model request under ``cancellable`` (a
  force-pause calls the adapter's ``cancel()``: streamed replies stop at the
  next chunk, retries stop waiting) and publishes the assistant events
  (``assistant_delta`` with the text so far while a streaming adapter's reply
  arrives, see docs/interactive-events.md); a
  cancelled step's samples are kept as empty "cancelled" nodes;
- ``refresh_data`` publishes ``workspace_changed`` (``"what": "data"``) when the run's
  data changed, and a workspace-writing tool's successful call one with
  ``"what": "files"`` (see docs/interactive-events.md);
- ``execute_tool_calls`` publishes tool events; tools see the force-pause
  through ``context.cancel_event`` (``BaseTool.cancelled``), so a running
  tool stops at its next cancellation check and the step's calls are
  reported as cancelled;
- ``update_conversation`` asks for a pause after a tool-free reply and (unless
  ``pause_on_truncated=False``) after a truncated one and tells the model when a
  force-pause cut its step, from the step's responses and results alone.

The hooks reach the controls through an :class:`~srh_core.interactive.AgentControls`
(see :mod:`srh_core.interactive.controls`). Embedded, that is the run's
:class:`SRInteractionManager`, fed by a :class:`~srh_core.interactive.ControlChannel`:
by default the run directory's files (``srh web`` and ``srh run
--interactive`` use them), or an :class:`~srh_core.interactive.InProcessChannel`
for a controller in this process. The run's start is its first boundary and
its end the agent's ``finished`` event, so no runner internals are touched.
On a cluster the workers pass the run's Redis controls instead
(``srh_workers.control``), and the same hooks run in the step tasks.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from srh_core.agent.runtime_settings import changed_settings, previous_values
from srh_core.agent.settings import SearchSettings
from srh_core.agent.sragent import SRAgent
from srh_core.api import ModelResponse
from srh_core.errors import ConfigurationError, ModelRequestCancelledError, ToolRunAbort
from srh_core.interactive.channel import ControlChannel
from srh_core.interactive.controls import AgentControls, BoundaryDecision, LocalControls
from srh_core.interactive.manager import PendingMessage
from srh_core.interactive.sr_manager import SRInteractionManager
from srh_core.seams import PauseGate
from srh_core.types import CandidateRecord, ToolCall, ToolCallResult, json_value

Message = dict[str, Any]
PREVIEW_CHARS = 4000
TOP_K_EVENT = 5
DELTA_INTERVAL = 0.1  # seconds between two assistant_delta events of one sample
#: Tools that may write the workspace's files: a successful call publishes workspace_changed.
WORKSPACE_WRITERS = frozenset({"workspace_shell", "workspace_code_executor", "edit_skill",
                               "edit_tool", "create_skill"})
#: What a settings command may change while a search runs: the sampling of each model
#: request, taken at the step's boundary in both runtimes (the search's shape and budgets
#: are the scheduler's, fixed for the run).
RUNTIME_SETTINGS = frozenset({"llm_max_tokens", "llm_temperature"})
MESSAGE_PREFIX = "[Message from the researcher]"
FORCE_PAUSE_NOTICE = ("[Harness] The researcher force-paused this step: its model response and "
                      "tool calls were cut, so there are no results from it.")


class SRAgentInteractive(SRAgent):
    """SRAgent whose step hooks honour the researcher's controls.

    Args:
        llm_provider: As for :class:`SRAgent` (a ready SearchSettings too).
        llm_model: As for :class:`SRAgent`.
        interaction_manager: The run's manager (embedded); a new one when None.
        control_channel: Where commands come from (embedded); None uses the run
            directory's files when the run has one (``save_path``).
        controls: Where the interaction state lives; None keeps it in
            ``interaction_manager`` (a Celery worker passes the run's Redis
            controls here).
        pause_on_tool_free: Pause after a step whose replies call no tool
            (the reference's behaviour: the model is waiting for the human).
        pause_on_truncated: Pause after a step with a reply cut by the
            length limit (default True, the reference's ``pause_on_truncated_response``).
        **kwargs: Everything else :class:`SRAgent` takes.
    """

    def __init__(self, llm_provider: Any = None, llm_model: str | None = None,
                 interaction_manager: SRInteractionManager | None = None, *,
                 control_channel: ControlChannel | None = None,
                 controls: AgentControls | None = None, pause_on_tool_free: bool = True,
                 pause_on_truncated: bool = True, **kwargs: Any) -> None:
        manager = interaction_manager or SRInteractionManager()
        if not isinstance(manager, SRInteractionManager):
            raise ConfigurationError("interaction_manager must be an SRInteractionManager. Got "
                                     f"{type(manager).__name__} instead.",
                                     setting="interaction_manager")
        # set before SRAgent's constructor: binding a run (a worker's agent) binds the tools
        self.interaction_manager = manager
        self.control_channel = control_channel
        self.controls: AgentControls = controls or LocalControls(manager, control_channel)
        self.pause_on_tool_free = pause_on_tool_free
        self.pause_on_truncated = pause_on_truncated
        self._lock = threading.Lock()
        self._step_flags: dict[tuple[int, int, int], set[str]] = {}
        self._step_settings: dict[tuple[int, int, int], SearchSettings] = {}
        super().__init__(llm_provider, llm_model, **kwargs)
        self.observers.append(self._on_agent_event)

    # ------------------------------------------------------------ lifecycle
    def initialize_tools(self, context: Any) -> None:
        """Bind the tools, and let them see a force-pause through ``context.cancel_event``."""
        super().initialize_tools(context)
        context.cancel_event = self.controls.cancel_signal

    def _on_agent_event(self, event: Mapping[str, Any]) -> None:
        if event.get("event") == "finished":
            self.controls.finish(event.get("status"), event.get("reason"))

    def refresh_data(self) -> dict[str, Any] | None:
        """SRAgent's refresh, and a ``workspace_changed`` event (``"what": "data"``) when the
        data changed."""
        change = super().refresh_data()
        if change is not None:
            self.controls.start(self.settings.save_path)
            self.controls.publish_event("workspace_changed", {"what": "data", **change})
        return change

    # --------------------------------------------------------- the boundary
    def pause_gate(self) -> PauseGate | None:
        """The run's controls when they live in this process (the embedded runtime holds
        paused branches on them); None with a cluster's controls (its step tasks park)."""
        if not isinstance(self.controls, LocalControls):
            return None
        self.controls.start(self.settings.save_path)  # the run's start is its first boundary
        return self.controls

    def prepare_iteration(self, buffer: list[Message], R: int, L: int, C: int) -> str | None:
        """Insert queued messages, take a pending next_c / next_r (the gate held any pause)."""
        controls = self.controls
        controls.start(self.settings.save_path)
        controls.publish_event("search_position_changed", {"R": R, "C": C, "L": L})
        reason = super().prepare_iteration(buffer, R, L, C)
        if reason is not None:
            return reason
        decision = controls.boundary(R, C, L)
        self._apply_settings(decision, {"R": R, "C": C, "L": L})
        if decision.transition is not None:
            return decision.transition
        for message in decision.messages:
            self._insert_message(buffer, message, R, C, L)
        return super().prepare_iteration(buffer, R, L, C)

    # ------------------------------------------------------ runtime settings
    def queue_runtime_settings(self, settings: Mapping[str, Any]) -> None:
        """Queue settings for the next step boundary (a ``settings`` command in this process).

        Args:
            settings: Any of :data:`RUNTIME_SETTINGS`.

        Raises:
            ConfigurationError: A name that may not change during a search, a value
                the settings refuse (nothing is queued then), or a run whose controls
                live elsewhere (send a settings command through its channel).
        """
        changes = dict(settings)
        changed_settings(self.settings, changes, RUNTIME_SETTINGS, during="a search")
        if not isinstance(self.controls, LocalControls):
            raise ConfigurationError("This run's controls live on the cluster: send a settings "
                                     "command (srh settings RUN_ID name=value).",
                                     setting="settings")
        self.controls.manager.command("settings", settings=changes)

    def step_settings(self, *, R: int, C: int, L: int) -> SearchSettings:
        """The run's settings with the runtime settings in force at step (R, C, L)'s boundary."""
        with self._lock:
            return self._step_settings.get((R, C, L), self.settings)

    def _apply_settings(self, decision: BoundaryDecision, coord: Mapping[str, int]) -> None:
        """Put the logged settings in force for the step; publish the outcome of the ones
        taken here.

        The log is replayed onto the run's settings at every boundary, so an agent
        rebuilt for each task (a cluster's) uses the same settings as one kept for the
        whole run; a change refused here is refused wherever it is replayed. The step's
        settings are kept by coordinate (in place, not on ``self``: the step's phase
        changes no attribute) until its close.
        """
        if not decision.settings_log:
            return
        in_force, events = self.settings, []
        first_new = len(decision.settings_log) - decision.new_settings
        for index, changes in enumerate(decision.settings_log):
            try:
                updated = changed_settings(in_force, changes, RUNTIME_SETTINGS,
                                           during="a search")
            except ConfigurationError as error:
                if index >= first_new:
                    events.append(("settings_failed", {
                        "settings": json_value(changes), "coord": dict(coord),
                        "error": str(error), "error_type": type(error).__name__}))
                continue
            if index >= first_new:
                events.append(("settings_applied", {
                    "settings": json_value(changes), "coord": dict(coord),
                    "previous": json_value(previous_values(in_force, changes))}))
            in_force = updated
        if in_force is not self.settings and decision.transition is None:
            with self._lock:
                self._step_settings[coord["R"], coord["C"], coord["L"]] = in_force
        if events:
            self.controls.publish_events(events)

    def _insert_message(self, buffer: list[Message], message: PendingMessage, R: int, C: int,
                        L: int) -> None:
        prompt = {"role": "user", "content": f"{MESSAGE_PREFIX}\n{message.content}"}
        buffer.append(prompt)
        self.controls.publish_event("prompt_added", {
            "coord": {"R": R, "C": C, "L": L}, "message": prompt})

    def on_buffer_messages_added(self, messages: list[Message], **coordinate: int) -> None:
        """Publish each system or user message as it enters a buffer (``prompt_added``)."""
        super().on_buffer_messages_added(messages, **coordinate)
        events = [("prompt_added", {"coord": dict(coordinate), "message": dict(message)})
                  for message in messages if message.get("role") in ("system", "user")]
        if events:
            self.controls.start(self.settings.save_path)  # a restart's prompts come first
            self.controls.publish_events(events)

    # -------------------------------------------------------- model request
    def request_llm(self, prompt: list[Message], R: int, L: int, C: int,
                    stream_callback: Any = None) -> tuple[list[ModelResponse], dict[str, Any]]:
        """The model request, cancellable by a force-pause, with assistant events."""
        controls = self.controls
        coord = {"R": R, "C": C, "L": L}
        ids = {K: self.node_id(R=R, C=C, L=L, K=K) for K in range(1, self.K + 1)}
        controls.publish_events([
            ("context", {"coord": coord, "n_messages": len(prompt),
                         "last_message": _preview(prompt[-1] if prompt else {})}),
            *[("assistant_started", {"response_id": response_id, "coord": {**coord, "K": K}})
              for K, response_id in ids.items()]])
        try:
            with controls.cancellable(lambda: self._cancel_step(R, C, L)):
                if "interrupted" in self._flags(R, C, L):
                    raise ModelRequestCancelledError("A force-pause came before the request.")
                relay = self._delta_publisher(ids, coord, stream_callback)
                responses, usage = super().request_llm(prompt, R, L, C, relay)
        except ModelRequestCancelledError as error:
            if "interrupted" not in self._flags(R, C, L):
                self._publish_failed(ids, coord, error)
                raise
            self._publish_failed(ids, coord, error, interrupted=True)
            return cancelled_responses(self.K), {}
        except Exception as error:
            self._publish_failed(ids, coord, error)
            raise
        controls.publish_events([("assistant_completed", {
            "response_id": ids[K], "coord": {**coord, "K": K},
            "content": _clip(response.content), "finish_reason": response.finish_reason,
            "tool_calls": [_call_view(call) for call in response.tool_calls], "usage": usage})
            for K, response in zip(ids, responses, strict=False)])
        return responses, usage

    def _delta_publisher(self, ids: Mapping[int, str], coord: Mapping[str, int],
                         stream_callback: Any) -> Any:
        """A stream callback publishing ``assistant_delta`` (the text so far of one sample),
        at most one per sample every DELTA_INTERVAL seconds: the timeline keeps only the
        newest delta of a response, and ``assistant_completed`` carries the whole text."""
        published: dict[int, float] = {}

        def relay(update: dict[str, Any]) -> None:
            if stream_callback is not None:
                stream_callback(update)
            K = update["sample"]
            now = time.monotonic()
            if K not in ids or (K in published and now - published[K] < DELTA_INTERVAL):
                return
            published[K] = now
            self.controls.publish_event("assistant_delta", {
                "response_id": ids[K], "coord": {**coord, "K": K},
                "delta": update["delta"], "content": _clip(update["content"])})
        return relay

    def _cancel_step(self, R: int, C: int, L: int) -> None:
        self._flag(R, C, L, "interrupted")
        for api in (self.api, self.strong_api):
            cancel = getattr(api, "cancel", None)
            if callable(cancel):
                cancel()

    def _publish_failed(self, ids: Mapping[int, str], coord: Mapping[str, int],
                        error: Exception, *, interrupted: bool = False) -> None:
        self.controls.publish_events([("assistant_failed", {
            "response_id": response_id, "coord": {**coord, "K": K},
            "error": f"{type(error).__name__}: {error}", "interrupted": interrupted})
            for K, response_id in ids.items()])

    # ---------------------------------------------------------------- tools
    def execute_tool_calls(self, response_list: Sequence[ModelResponse], R: int, L: int,
                           C: int) -> list[list[ToolCallResult]]:
        """Run the step's calls; a force-pause cuts them (every call reported cancelled)."""
        controls = self.controls
        coord = {"R": R, "C": C, "L": L}
        controls.publish_events([  # one sample per call, or all K: K is response.sample
            ("tool_started", {"coord": {**coord, "K": response.sample}, "call": _call_view(call)})
            for response in response_list for call in response.tool_calls])
        try:
            with controls.cancellable(lambda: self._flag(R, C, L, "interrupted")):
                grouped = super().execute_tool_calls(response_list, R, L, C)
        except ToolRunAbort:
            if not (controls.cancel_signal.is_set()
                    or "interrupted" in self._flags(R, C, L)):
                raise
            grouped = self._cancelled_calls(response_list, R, L, C)
        done = [(response.sample, call, result)
                for response, results in zip(response_list, grouped, strict=True)
                for call, result in zip(response.tool_calls, results, strict=True)]
        controls.publish_events([("tool_completed", {
            "coord": {**coord, "K": K}, "call": _call_view(call), "ok": result.ok,
            "result_str": _clip(result.result_str),
            "elapsed_s": result.meta_data.get("elapsed_s")}) for K, call, result in done])
        changed = [("workspace_changed", {
            "what": "files", "coord": {**coord, "K": K}, "tool": call.name, "call_id": call.id})
            for K, call, result in done if result.ok and call.name in WORKSPACE_WRITERS]
        if changed:
            controls.publish_events(changed)
        return grouped

    def _cancelled_calls(self, response_list: Sequence[ModelResponse], R: int, L: int,
                         C: int) -> list[list[ToolCallResult]]:
        grouped = [[ToolCallResult.failure(
            f"Tool {call.name!r} was cancelled by a force-pause.", tool=call.name,
            error_type="Cancelled") for call in response.tool_calls]
            for response in response_list]
        calls = [call for response in response_list for call in response.tool_calls]
        self.record_tool_calls(calls, [r for results in grouped for r in results], R, L, C)
        return grouped

    # ------------------------------------------------------------ recording
    def collect_candidates(self, response_list: Sequence[ModelResponse],
                           results_list: Sequence[Sequence[ToolCallResult]], R: int, L: int,
                           C: int) -> list[CandidateRecord]:
        collected = super().collect_candidates(response_list, results_list, R, L, C)
        metric = self.settings.ranking_metric
        top = self.store.top_k(TOP_K_EVENT) if self.store is not None else []
        self.controls.publish_event("topk_updated", {
            "coord": {"R": R, "C": C, "L": L}, "new_candidates": len(collected),
            "records": [{"formula": record.formula, "complexity": record.complexity,
                         "node_id": record.node_id, metric: record.metric(metric, "train")}
                        for record in top]})
        return collected

    def update_conversation(self, buffer: list[Message], response_list: Sequence[ModelResponse],
                            results_list: Sequence[Sequence[ToolCallResult]],
                            node_parents: Sequence[Any], R: int, L: int, C: int,
                            **kwargs: Any) -> tuple[list[Message], list[Any]]:
        """Continue the conversation; tell the model when a force-pause cut the step, or ask
        for a pause after a tool-free (or, with ``pause_on_truncated``, a truncated) reply.

        Decided from the step's responses and results alone, here, so nothing is
        kept on ``self`` for a later hook (on a cluster the agent is rebuilt for
        each task): the same in both runtimes.
        """
        self._pop_flags(R, C, L)  # the step's force-pause flag, if any, is done with
        with self._lock:
            self._step_settings.pop((R, C, L), None)
        buffer, parents = super().update_conversation(buffer, response_list, results_list,
                                                      node_parents, R, L, C, **kwargs)
        cut = any(response.finish_reason == "cancelled" for response in response_list) or any(
            result.meta_data.get("error_type") == "Cancelled"
            for results in results_list for result in results)
        tool_free = not any(response.tool_calls for response in response_list)
        truncated = any(response.finish_reason == "length" for response in response_list)
        if cut:
            buffer.append({"role": "user", "content": FORCE_PAUSE_NOTICE})
        elif (tool_free and self.pause_on_tool_free) or (truncated and self.pause_on_truncated):
            self.controls.request_pause()
        return buffer, parents

    # ---------------------------------------------------------------- flags
    def _flag(self, R: int, C: int, L: int, flag: str) -> None:
        with self._lock:
            self._step_flags.setdefault((R, C, L), set()).add(flag)

    def _flags(self, R: int, C: int, L: int) -> set[str]:
        with self._lock:
            return set(self._step_flags.get((R, C, L), ()))

    def _pop_flags(self, R: int, C: int, L: int) -> set[str]:
        with self._lock:
            return self._step_flags.pop((R, C, L), set())


def cancelled_responses(k: int) -> list[ModelResponse]:
    """The K samples of a step whose request a force-pause cancelled (kept as nodes)."""
    return [ModelResponse(content="", message={"role": "assistant", "content": ""},
                          finish_reason="cancelled", sample=index) for index in range(1, k + 1)]


def _clip(text: Any, limit: int = PREVIEW_CHARS) -> str:
    text = "" if text is None else str(text)
    return text if len(text) <= limit else text[:limit] + f"... [{len(text) - limit} more]"


def _preview(message: Mapping[str, Any]) -> dict[str, Any]:
    return {"role": message.get("role"), "content": _clip(message.get("content"))}


def _call_view(call: ToolCall) -> dict[str, Any]:
    return {"id": call.id, "name": call.name, "params": call.params}

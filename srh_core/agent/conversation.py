"""The authoring agents' loop: one conversation with tools, until the model yields control.

:class:`ConversationAgent` is what :class:`~srh_core.agent.data_preparation.DataPreparationAgent`
and :class:`~srh_core.agent.evaluator_construction.EvaluatorConstructionAgent` share. A
call of :meth:`ConversationAgent.run` adds the user's instruction to a persistent buffer,
then repeats: one model response (K = 1), its tool calls run in order, the assistant
message and the tool results appended; a response without a tool call ends the turn
unless :meth:`ConversationAgent.completion_blocked` says what must be done first (the
model reads why and goes on). ``max_steps`` bounds the responses of one turn;
:meth:`ConversationAgent.queue_runtime_settings` changes the model or its limits
before the next response (the safe boundary: no request or tool in flight). These
agents run in the submitting process only (no cluster runtime): they author files in
a workspace, which the search then uses.

The offline provider is a rule-based proposer for the search, not a language model: it
cannot author data or evaluators, and these agents refuse it with a ConfigurationError
rather than pretend. With an ``interaction_manager`` the turn is published as events
(``prompt_added``, ``assistant_completed``, ``tool_started``, ``tool_completed``,
``settings_applied``, ``settings_failed``, ``workspace_changed``, ``execution_completed``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from srh_core.agent.base import Agent, Message
from srh_core.agent.runtime_settings import changed_settings, previous_values
from srh_core.agent.settings import SearchSettings
from srh_core.api import ModelResponse
from srh_core.api.endpoints import build_api
from srh_core.errors import ConfigurationError, ModelResponseTruncatedError
from srh_core.parsers import BaseParser
from srh_core.skills import run_skill_manager
from srh_core.tools.base import BaseTool
from srh_core.types import ToolCall, ToolCallResult, json_value

logger = logging.getLogger("srh.agent")
#: What :meth:`ConversationAgent.queue_runtime_settings` may change between two responses.
RUNTIME_SETTINGS = frozenset({"llm_provider", "llm_model", "llm_max_tokens", "llm_temperature",
                              "base_url", "tool_parser", "max_steps"})
TRUNCATED_NOTICE = ("[Harness] Your previous response was cut by the length limit; complete "
                    "tool calls in it were run, the cut one was dropped. Be more concise.")


class ConversationAgent(Agent):
    """A persistent tool-using conversation that authors files in the context's workspace.

    Args:
        llm_provider: Model provider ("openai", "deepseek", ...; not "offline").
        llm_model: Model name.
        context: The shared context (its workspace is where files are written).
        tools: Registered tool names (or tool instances); None for the agent's defaults.
        tool_parser: How tool calls are exchanged (``openai``, ``json``, ``text``, ``xml``).
        llm_max_tokens: Maximum tokens per response.
        skills: Skills ``read_skill`` offers (None: the agent's default choice).
        interaction_manager: Receives the turn's events (None: none are published).
        max_steps: Model responses per call of :meth:`run` at most.
        base_url: Endpoint override for OpenAI-compatible providers.
        skills_dir: Folder of custom skills beside the built-in ones.
        api: A ready model adapter (tests inject one).
        model_access: Endpoints and keys (None: this process's operator).
    """

    DEFAULT_TOOLS: tuple[str, ...] = ()
    #: Built-in skills not offered unless ``skills`` names them.
    EXCLUDED_SKILLS: frozenset[str] = frozenset()

    def __init__(self, llm_provider: str, llm_model: str | None = None, *, context: Any,
                 tools: Sequence[str | BaseTool] | None = None, tool_parser: str = "openai",
                 llm_max_tokens: int = 4096, skills: list[str] | None = None,
                 interaction_manager: Any = None, max_steps: int = 16,
                 base_url: str | None = None, skills_dir: str | None = None, api: Any = None,
                 model_access: Any = None) -> None:
        if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
            raise ConfigurationError(f"max_steps must be an int >= 1. Got {max_steps!r} "
                                     "instead.", setting="max_steps")
        self.settings = SearchSettings.build(
            llm_provider=llm_provider, llm_model=llm_model, tool_parser=tool_parser,
            llm_max_tokens=llm_max_tokens, base_url=base_url)
        if self.settings.llm_provider == "offline":
            raise ConfigurationError(
                f"{type(self).__name__} needs a language model: the offline provider is the "
                "search's rule-based proposer and cannot author files. Give one with "
                "llm_provider / --llm PROVIDER:MODEL.", setting="llm_provider")
        self.requested_tools = list(tools) if tools is not None else list(self.DEFAULT_TOOLS)
        self.skill_manager = self.make_skill_manager(skills, skills_dir)
        self.interaction_manager = interaction_manager
        self.max_steps = max_steps
        self._queued_settings: list[dict[str, Any]] = []
        self._queue_lock = threading.Lock()
        self.api = api
        self.model_access = model_access
        self.messages: list[Message] = []
        self.tools = {}
        self.initialize_tools(context)
        self.buffer: list[Message] = [{"role": "system", "content": self.system_prompt()}]

    # ------------------------------------------------------------- set-up
    def make_skill_manager(self, skills: list[str] | None, skills_dir: str | None) -> Any:
        if skills is None and self.EXCLUDED_SKILLS:
            every = run_skill_manager(skills_dir, None).discover()[0]
            skills = sorted(name for name in every if name not in self.EXCLUDED_SKILLS)
        return run_skill_manager(skills_dir, skills)

    def enabled_tool_names(self) -> list[str]:
        """The requested tools that can run here (an unavailable one is left out, logged).

        Raises:
            ConfigurationError: A requested name is not a registered tool.
        """
        names = []
        for tool in self.requested_tools:
            name = tool.metadata.name if isinstance(tool, BaseTool) else str(tool)
            try:
                tool_class = BaseTool.get_class(name)
            except Exception as error:
                raise ConfigurationError(str(error), setting="tools") from error
            reason = tool_class.availability()
            if reason is None:
                names.append(tool_class.metadata.name)
            else:
                logger.warning("Tool %r is not available here (%s); it is not offered.", name,
                               reason)
        return list(dict.fromkeys(names))

    def initialize_tools(self, context: Any) -> None:
        """Bind the tools (ready instances are used as given, with this context)."""
        if getattr(context, "workspace", None) is None:
            raise ConfigurationError(f"{type(self).__name__} writes into the context's "
                                     "workspace; give the context one (workspace=DIR).",
                                     setting="workspace")
        super().initialize_tools(context)
        for tool in self.requested_tools:
            if isinstance(tool, BaseTool) and tool.metadata.name in self.tools:
                tool.context = context
                self.tools[tool.metadata.name] = tool
        self.bind_tool_values(self.tools.values())

    # ------------------------------------------------------------- settings
    def queue_runtime_settings(self, settings: Mapping[str, Any]) -> None:
        """Queue validated settings for the next safe boundary (before the next response).

        Args:
            settings: Any of :data:`RUNTIME_SETTINGS` (model, endpoint, parser, limits).

        Raises:
            ConfigurationError: An unknown setting, or a value the settings refuse
                (nothing is queued then).
        """
        changes = dict(settings)
        self.resolved_settings(changes)
        with self._queue_lock:
            self._queued_settings.append(changes)

    def resolved_settings(self, changes: Mapping[str, Any]) -> tuple[SearchSettings, int]:
        """The settings and ``max_steps`` after ``changes``.

        Raises:
            ConfigurationError: A value is refused (the offline provider included).
        """
        max_steps = changes.get("max_steps", self.max_steps)
        if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
            raise ConfigurationError(f"max_steps must be an int >= 1. Got {max_steps!r} "
                                     "instead.", setting="max_steps")
        settings = changed_settings(self.settings, changes, RUNTIME_SETTINGS,
                                    during="a conversation", own=frozenset({"max_steps"}))
        if settings.llm_provider == "offline":
            raise ConfigurationError("The offline provider cannot author files.",
                                     setting="llm_provider")
        return settings, max_steps

    def apply_queued_settings(self) -> None:
        """Apply the queued settings in order; each one applied or failed is published."""
        with self._queue_lock:
            queued, self._queued_settings = self._queued_settings, []
        for changes in queued:
            try:
                settings, max_steps = self.resolved_settings(changes)
                api = self.api if {"llm_provider", "llm_model", "base_url", "tool_parser"
                                   }.isdisjoint(changes) else self.rebuilt_api(settings)
            except ConfigurationError as error:
                self.publish("settings_failed", {"settings": json_value(changes),
                                                 "error": str(error),
                                                 "error_type": type(error).__name__})
                continue
            previous = previous_values(self.settings, changes, {"max_steps": self.max_steps})
            if settings.tool_parser != self.settings.tool_parser:
                self.parser = BaseParser.create(settings.tool_parser, tool_names=list(self.tools))
            self.settings, self.max_steps, self.api = settings, max_steps, api
            self.bind_tool_values(self.tools.values())
            self.publish("settings_applied", {"settings": json_value(changes),
                                              "previous": json_value(previous)})

    def rebuilt_api(self, settings: SearchSettings) -> Any:
        return build_api(settings, settings.llm_provider, settings.llm_model, self.model_access,
                         tool_list=[tool.metadata for tool in self.tools.values()],
                         tool_parser_name=settings.tool_parser)

    # ------------------------------------------------------------- hooks
    def system_prompt(self) -> str:
        """The conversation's system message."""
        return ""

    def completion_blocked(self) -> str | None:
        """Why the model may not end its turn yet (told to it), or None."""
        return None

    def after_tools(self, calls: Sequence[ToolCall], results: Sequence[ToolCallResult]) -> None:
        """Hook: a batch of calls ran."""

    def finish(self, message: str, turn: dict[str, Any]) -> dict[str, Any]:
        """The result of a turn; the base returns the turn's record."""
        return turn

    # ------------------------------------------------------------- the loop
    def run(self, instruction: str) -> dict[str, Any]:
        """Continue the conversation with ``instruction`` until the model yields control.

        Args:
            instruction: What the user asks for, in words.

        Returns:
            ``message`` (the model's last text), ``steps``, ``stopped`` ("done" or
            "max_steps"), ``usage``, ``tool_events``, and the agent's own fields.

        Raises:
            ConfigurationError: ``instruction`` is empty.
        """
        text = instruction.strip() if isinstance(instruction, str) else ""
        if not text:
            raise ConfigurationError("The instruction must be non-empty text.",
                                     setting="instruction")
        self.buffer.append({"role": "user", "content": text})
        self.publish("prompt_added", {"role": "user", "content": text})
        turn: dict[str, Any] = {"message": "", "steps": 0, "stopped": "max_steps",
                                "usage": {"total_tokens": 0, "price": 0.0}, "tool_events": []}
        while True:
            self.apply_queued_settings()
            if turn["steps"] >= self.max_steps:
                break
            turn["steps"] += 1
            response = self.respond(turn)
            turn["message"] = response.content
            if response.tool_calls:
                self.run_tools(list(response.tool_calls), turn)
                continue
            if response.parse_issues:  # a call that could not be read: told why, it retries
                continue
            notice = (TRUNCATED_NOTICE if response.finish_reason == "length"
                      else self.completion_blocked())
            if notice is None:
                turn["stopped"] = "done"
                break
            self.buffer.append({"role": "user", "content": notice})
        result = self.finish(turn["message"], turn)
        self.publish("execution_completed", {"stopped": turn["stopped"], "steps": turn["steps"]})
        return result

    def respond(self, turn: dict[str, Any]) -> ModelResponse:
        """One model response to the buffer; the assistant message (and parse notices) added."""
        self.set_messages(self.buffer)
        try:
            summary = self.api(self.buffer, n=1, max_tokens=self.settings.llm_max_tokens,
                               temperature=self.settings.llm_temperature).result()
            response = summary.responses[0] if summary.responses else ModelResponse(
                content="", message={"role": "assistant", "content": ""},
                finish_reason="missing")
            usage = summary.usage
            turn["usage"]["total_tokens"] += int(usage.total_tokens or 0)
            turn["usage"]["price"] += float(usage.price or 0.0)
        except ModelResponseTruncatedError as error:
            from srh_core.agent.sragent import truncated_responses

            response = truncated_responses(error, 1)[0]
        calls = list(response.tool_calls)
        if calls or response.content.strip():
            self.buffer.append(self.parser.assistant_message(response.content, calls))
        notice = self.parser.format_parse_issues(list(response.parse_issues or []))
        if notice:
            self.buffer.append(notice)
        self.publish("assistant_completed", {"content": response.content, "tool_calls": [
            {"name": call.name, "params": json_value(call.params)} for call in calls]})
        return response

    def run_tools(self, calls: list[ToolCall], turn: dict[str, Any]) -> None:
        results = []
        for call in calls:
            self.publish("tool_started", {"name": call.name, "params": json_value(call.params)})
            result = self.execute_action([call])[0]
            self.publish("tool_completed", {"name": call.name, "ok": result.ok,
                                            "result_str": result.result_str})
            turn["tool_events"].append({"name": call.name, "params": json_value(call.params),
                                        "ok": result.ok, "result_str": result.result_str})
            results.append(result)
        self.buffer += list(self.parser.format_tool_result_messages(calls, results))
        self.after_tools(calls, results)

    def publish(self, kind: str, payload: dict[str, Any]) -> None:
        if self.interaction_manager is not None:
            self.interaction_manager.publish_event(kind, payload)


def python_files(folder: Any) -> Iterable[Any]:
    """The ``.py`` files under ``folder`` (a Path), sorted; none when it does not exist."""
    return sorted(p for p in folder.rglob("*.py") if p.is_file()) if folder.is_dir() else []

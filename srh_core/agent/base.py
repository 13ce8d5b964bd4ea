"""The reference's ``Agent``: what every tool-using agent shares, and nothing of a task loop.

An agent owns its task loop (:class:`~srh_core.agent.SRAgent`'s R-C-L-K
search, the authoring agents' conversations); this base owns the mechanics
around it: binding one context to the tools, the parser and the model
adapter (:meth:`Agent.initialize_tools`), showing the current prompt to the
tools (:meth:`Agent.set_messages`) and running tool calls, serially or in
worker processes (:meth:`Agent.execute_action`,
:meth:`Agent.execute_action_parallel`). Every model adapter an agent builds
goes through :func:`srh_core.api.endpoints.build_api` with the agent's
``model_access`` (None: this process's operator, :meth:`ModelAccess.local`).
"""

from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from typing import Any

from srh_core.api.endpoints import build_api
from srh_core.context import AgentContext
from srh_core.errors import ConfigurationError
from srh_core.parsers import BaseParser
from srh_core.skills import CustomToolError
from srh_core.tools.base import BaseTool
from srh_core.types import ToolCall, ToolCallResult

Message = dict[str, Any]


class Agent(ABC):
    """Base class of tool-using agents (SRAgent and the authoring agents).

    Subclasses set ``settings`` (a :class:`~srh_core.agent.settings.SearchSettings`:
    provider, model, base URL, parser) before :meth:`initialize_tools`, and
    implement :meth:`run` and :meth:`enabled_tool_names`.

    Attributes:
        settings: The agent's settings (model, parser, endpoint).
        context: The shared :class:`~srh_core.context.AgentContext`.
        tools: Enabled tools by registered name.
        parser: The tool-call parser of ``settings.tool_parser``.
        api: The model adapter.
        model_access: Endpoints and keys the agent may use (None: this process's).
        skill_manager: Skills offered to ``read_skill`` (None: the default skills).
        messages: The current prompt, as :meth:`set_messages` last set it.
    """

    settings: Any
    context: Any = None
    tools: dict[str, BaseTool]
    parser: Any = None
    api: Any = None
    model_access: Any = None
    skill_manager: Any = None
    messages: list[Message]

    @abstractmethod
    def run(self, *args: Any, **kwargs: Any) -> Any:
        """Run the agent's task loop; the result is the concrete agent's."""

    def enabled_tool_names(self) -> list[str]:
        """Registered names of the tools this agent offers the model."""
        return []

    def custom_tool_names(self) -> list[str]:
        """Register the custom tools of the agent's skills (each skill's ``tool.py``, see
        :mod:`srh_core.tools.custom_tools`) and return their names.

        Raises:
            ConfigurationError: A tool file is invalid or two skills declare one tool name.
        """
        if self.skill_manager is None:
            return []
        from srh_core.tools.custom_tools import discover_custom_tools  # the code sandbox

        try:
            return [tool.metadata.name for tool in discover_custom_tools(self.skill_manager)]
        except CustomToolError as error:
            raise ConfigurationError(str(error), setting="skills_dir") from error

    def initialize_tools(self, context: Any) -> None:
        """Bind one shared context to every tool, the parser and the model adapter.

        Args:
            context: The shared agent and tool context.
        """
        self.context = context
        names = self.enabled_tool_names()
        self.tools = {name: BaseTool.create(name, context) for name in names}
        self.bind_tool_values(self.tools.values())
        self.parser = BaseParser.create(self.settings.tool_parser, tool_names=names)
        if self.api is None:
            self.api = self.make_api(self.settings.llm_provider, self.settings.llm_model,
                                     [tool.metadata for tool in self.tools.values()])

    def bind_tool_values(self, tools: Iterable[BaseTool]) -> None:
        """Give the tools the run's parts they read besides the context: the skills,
        the settings and the model access (``call_llm`` and ``subagent`` reach the
        model under the run's own rules)."""
        values = {"settings": self.settings, "model_access": self.model_access}
        if self.skill_manager is not None:
            values["skill_manager"] = self.skill_manager
        for tool in tools:
            for key, value in values.items():
                tool.values.setdefault(key, value)

    def make_api(self, provider: str, model: str | None, metadata: list[Any]) -> Any:
        """A model adapter for ``provider``; its address and key follow ``self.model_access``.

        Raises:
            EndpointAccessError: The agent asks for an endpoint its access does not allow.
        """
        return build_api(self.settings, provider, model, self.model_access, tool_list=metadata,
                         tool_parser_name=self.settings.tool_parser)

    def set_messages(self, messages: Sequence[Message]) -> None:
        """Expose the current prompt to the tools (``tool.values["messages"]``, a copy).

        Args:
            messages: Conversation messages in provider order.
        """
        self.messages = copy.deepcopy(list(messages))
        for tool in getattr(self, "tools", {}).values():
            tool.values["messages"] = self.messages

    def execute_action(self, actions: Sequence[ToolCall]) -> list[ToolCallResult]:
        """Run tool calls one after another in this process.

        Args:
            actions: The calls; one naming a tool that is not enabled gets an
                ``ok=False`` result listing the enabled tools.

        Returns:
            One result per call, in order.
        """
        from srh_core.embedded.executor import run_call  # the sandbox and process pools

        return [run_call(self.tools, action) for action in actions]

    def execute_action_parallel(self, actions: Sequence[ToolCall], max_workers: int
                                ) -> list[ToolCallResult]:
        """Run independent tool calls in up to ``max_workers`` worker processes.

        The workers rebuild the tools by name from the context's payload (as the
        embedded runtime's pool does), end with this process, and are shut down
        before this returns. ``max_workers <= 1`` or a single call runs here.

        Args:
            actions: The calls.
            max_workers: Worker processes at most.

        Returns:
            One result per call, in order.
        """
        if max_workers <= 1 or len(actions) <= 1:
            return self.execute_action(actions)
        from srh_core.embedded.executor import ProcessToolExecutor

        executor = ProcessToolExecutor(self.tools, min(max_workers, len(actions)),
                                       AgentContext.from_payload, self.context.to_payload())
        try:
            return executor.run(list(actions))
        finally:
            executor.close()

"""The public lifecycle of SRAgent: tools, run, search, resume, result.

Kept apart from the step hooks in :mod:`srh_core.agent.sragent` so each
module stays one concept; :class:`~srh_core.agent.sragent.SRAgent` inherits
these methods.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from srh_core.errors import ConfigurationError
from srh_core.tools.base import BaseTool
from srh_core.types import SearchResult

logger = logging.getLogger("srh.agent")


def _canonical_tool(name: str, setting: str) -> str:
    try:
        return BaseTool.canonical_name(name)
    except Exception as error:
        raise ConfigurationError(str(error), setting=setting) from error


class AgentLifecycle:
    """Run-level methods shared by every SRAgent."""

    DEFAULT_TOOLS: tuple[str, ...]

    def enabled_tool_names(self) -> list[str]:
        """Tool names of this run: the setting, or the available defaults.

        Raises:
            ConfigurationError: A requested tool is not registered.
        """
        import srh_core.tools.catalogue  # noqa: F401 - registers the built-in tools

        requested = self.settings.tools
        names = list(self.DEFAULT_TOOLS if requested is None else requested)
        banned = {_canonical_tool(name, "ban_tools") for name in self.settings.ban_tools}
        enabled = []
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
        from srh_core.api import ModelRouter
        from srh_core.parsers import BaseParser

        names = self.enabled_tool_names()
        self.tools = {name: BaseTool.create(name, context) for name in names}
        if self.skill_manager is not None:
            for tool in self.tools.values():
                tool.values.setdefault("skill_manager", self.skill_manager)
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

    def make_api(self, provider: str, model: str | None, metadata: list[Any]) -> Any:
        from srh_core.api import BaseAPI

        options: dict[str, Any] = {}
        if self.settings.base_url:
            options["base_url"] = self.settings.base_url
        return BaseAPI.create(provider, model=model, tool_list=metadata,
                              tool_parser_name=self.settings.tool_parser, **options)

    def run(self, X: Mapping[str, Any], y: Mapping[str, Any] | Any,
            problem_description: str = "") -> dict[str, Any]:
        """Run the whole search on ``X`` and ``y``; the result as a dict.

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
        """The R-C-L-K search of the embedded runtime (see :mod:`srh_core.agent.runner`)."""
        from srh_core.agent.runner import run_search

        self.result_ = run_search(self, X, y, problem_description)
        return self.result_.to_dict()

    @classmethod
    def resume(cls, path: str | Path, **overrides: Any) -> dict[str, Any]:
        """Continue an interrupted run directory; finished steps are not repeated."""
        from srh_core.agent.runner import resume_search

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
        if R is None and getattr(self.store, "latest_coordinate", None) is not None:
            latest = self.store.latest_coordinate
            R, L, C = latest.R, latest.L, latest.C
        progress = (f"{self.format_progress(R, L, C)}; "
                    f"{self.store.node_count}/{self.settings.max_nodes} nodes")
        return self.store.result(status, progress, stop_reason=stop_reason)

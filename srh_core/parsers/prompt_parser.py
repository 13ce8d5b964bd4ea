"""Shared behaviour of the prompt-based modes (``text``, ``json``, ``xml``).

In these modes the endpoint gets no ``tools=`` schema: the tool catalogue and
the exact calling convention go into the leading system message, and calls
are recovered from the reply text.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any

from srh_core.parsers.base import BaseParser
from srh_core.parsers.tool_docs import (
    ToolLike,
    example_arguments,
    render_tool_catalog,
    tool_metadata,
)
from srh_core.types import ToolMetadata

TOOLS_HEADER = "## Tools"
"""First line of every prompt-mode tool description (lets callers find it)."""


class PromptParser(BaseParser):
    """A parser whose calling convention is explained in the system prompt."""

    def format_tools(self, tools: Sequence[ToolLike] | None = None) -> str:
        """Return the tool documentation for the leading system message.

        Args:
            tools: Tools to describe; defaults to the parser's own tools.

        Returns:
            Markdown text: the calling convention with an example, then one
            section per tool.
        """
        metadata = [tool_metadata(tool) for tool in tools] if tools is not None else list(
            self.tools)
        example = metadata[0] if metadata else ToolMetadata("tool_name")
        catalog = render_tool_catalog(metadata) if metadata else "(no tools are available)"
        return "\n\n".join([
            TOOLS_HEADER,
            self.calling_convention(),
            "Example:\n" + self.render_call(example.name, example_arguments(example)),
            "## Available tools",
            catalog,
        ])

    @abstractmethod
    def calling_convention(self) -> str:
        """The rules of this calling format, in words a weak model follows."""

    @abstractmethod
    def render_call(self, name: str, arguments: Mapping[str, Any]) -> str:
        """Write one call in this format (used for the example)."""

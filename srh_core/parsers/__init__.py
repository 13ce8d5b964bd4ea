"""Tool-call parsers: tools -> model format, model output -> ToolCalls, results -> messages.

``BaseParser.create(name, tools)`` builds one of the registered modes:

- ``openai``: native function calling (``tools=`` schema, structured calls);
- ``json``: ``{"name": ..., "arguments": {...}}`` objects in the reply text;
- ``text``: ``CALL tool_name {...}`` lines;
- ``xml``: ``<tool_call name="..."><param name="...">...</param></tool_call>``.
"""

from __future__ import annotations

from srh_core.parsers.base import (
    BaseParser,
    ParseIssue,
    ParseIssueKind,
    ParseOutcome,
    ToolParserName,
)
from srh_core.parsers.json_parser import JSONParser
from srh_core.parsers.openai_parser import OpenAIParser
from srh_core.parsers.prompt_parser import TOOLS_HEADER, PromptParser
from srh_core.parsers.text_parser import TextParser
from srh_core.parsers.tool_docs import ToolLike, tool_metadata
from srh_core.parsers.xml_parser import XMLParser

__all__ = [
    "TOOLS_HEADER",
    "BaseParser",
    "JSONParser",
    "OpenAIParser",
    "ParseIssue",
    "ParseIssueKind",
    "ParseOutcome",
    "PromptParser",
    "TextParser",
    "ToolLike",
    "ToolParserName",
    "XMLParser",
    "tool_metadata",
]

"""``json`` mode: calls are JSON objects ``{"name": ..., "arguments": {...}}`` in the reply.

Tolerated, because models write them: code fences with or without a
language, prose before and after, several objects or one array of them, an
envelope ``{"tool_calls": [...]}``, the native shape ``{"function": {...}}``,
``"parameters"``/``"args"``/``"params"``/``"input"`` for ``"arguments"``,
arguments given as a JSON string, trailing commas, single quotes and
Python's ``True``/``None``. When the tool names are known, a flat object
``{"name": "evaluate", "formula": "x"}`` is read as a call too.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from srh_core.parsers.arguments import decode_arguments, guess_tool_name
from srh_core.parsers.base import BaseParser, ParseIssue, clip
from srh_core.parsers.lenient_json import (
    BracketSpan,
    iter_json_spans,
    loads_lenient,
    looks_like_call,
)
from srh_core.parsers.prompt_parser import PromptParser
from srh_core.types import ToolCall

NAME_KEYS = ("name", "tool", "tool_name")
ARGUMENT_KEYS = ("arguments", "parameters", "args", "params", "input")
ENVELOPE_KEYS = ("tool_calls", "calls")
_META_KEYS = frozenset((*NAME_KEYS, "id", "type"))


@BaseParser.register("json")
class JSONParser(PromptParser):
    """Reads JSON tool-call objects from free text."""

    def calling_convention(self) -> str:
        return (
            "To call a tool, write a JSON object with the tool name and its arguments in a "
            "```json code block:\n\n"
            '```json\n{"name": "<tool name>", "arguments": {"<argument>": <value>}}\n```\n\n'
            "Rules:\n"
            '- "arguments" is a JSON object: double-quoted keys and strings, no comments. '
            "Use {} for a tool without arguments.\n"
            "- To make several calls, put the objects in one JSON array [{...}, {...}]; they "
            "run in order.\n"
            "- Text before or after the code block is fine; only the JSON is executed."
        )

    def render_call(self, name: str, arguments: Mapping[str, Any]) -> str:
        body = json.dumps({"name": name, "arguments": dict(arguments)}, ensure_ascii=False)
        return f"```json\n{body}\n```"

    def _extract(self, response: Any) -> Iterator[ToolCall | ParseIssue]:
        text, issues = self.bounded_text(response)
        yield from issues
        for span in iter_json_spans(text):
            yield from self._read_span(span)

    def _read_span(self, span: BracketSpan) -> Iterator[ToolCall | ParseIssue]:
        if not span.closed:
            yield ParseIssue(
                "truncated",
                "Your tool call stops before its JSON is complete (a bracket is never closed); "
                "it was not executed.",
                raw=clip(span.text), tool_name=guess_tool_name(span.text),
            )
            return
        try:
            value = loads_lenient(span.text)
        except ValueError as error:
            if looks_like_call(span.text):
                yield ParseIssue("invalid_json", f"Your tool call is not valid JSON ({error}).",
                                 raw=clip(span.text), tool_name=guess_tool_name(span.text))
            return
        yield from self._calls_in(value, span.text)

    def _calls_in(self, value: Any, raw: str) -> Iterator[ToolCall | ParseIssue]:
        if isinstance(value, list):
            for item in value:
                if isinstance(item, dict):
                    yield from self._calls_in(item, json.dumps(item, ensure_ascii=False))
            return
        if not isinstance(value, dict):
            return
        envelope = next((value[k] for k in ENVELOPE_KEYS if isinstance(value.get(k), list)), None)
        if envelope is not None:
            yield from self._calls_in(envelope, raw)
            return
        call = self._call_from_object(value, raw)
        if call is not None:
            yield call

    def _call_from_object(self, obj: dict[str, Any], raw: str) -> ToolCall | ParseIssue | None:
        """Read one object as a call; None when it is not meant as one."""
        call_id = obj.get("id") if isinstance(obj.get("id"), str) else None
        if isinstance(obj.get("function"), dict):
            obj = {**obj["function"], "id": call_id}
        name = next((obj[k] for k in NAME_KEYS if isinstance(obj.get(k), str)), None)
        arg_key = next((k for k in ARGUMENT_KEYS if k in obj), None)
        if name is None:
            return _missing_name(raw) if arg_key is not None else None
        if arg_key is not None:
            arguments = obj[arg_key]
        else:
            rest = {k: v for k, v in obj.items() if k not in _META_KEYS}
            if rest and name not in (self.tool_names or ()):
                return None
            arguments = rest
        decoded = decode_arguments(arguments, tool_name=name, raw=raw, call_id=call_id)
        if isinstance(decoded, ParseIssue):
            return decoded
        return ToolCall(name=name, params=decoded, id=call_id, raw=obj, raw_str=clip(raw))


def _missing_name(raw: str) -> ParseIssue:
    return ParseIssue(
        "malformed",
        'Your tool call has arguments but no tool name; write {"name": "<tool>", '
        '"arguments": {...}}.',
        raw=clip(raw),
    )

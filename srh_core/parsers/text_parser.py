"""``text`` mode: one ``CALL`` line per call, arguments as a JSON object.

The documented format (what the model is told)::

    CALL evaluate {"formula": "x0**2 + c0"}

Rules the parser follows, chosen for weak models:

- a call starts at the beginning of a line with the word ``CALL`` (upper
  case, optional colon), or ``call:`` / ``action:`` in any case (colon
  required, so prose like "Call me later" is not a call); list bullets,
  numbers (``1.``), ``>`` quotes and Markdown emphasis before it are ignored;
- the tool name follows, optionally in backticks or quotes;
- then the arguments: a JSON object on the same line or on the next lines
  (code fences around it are fine), or Python-style keywords
  ``evaluate(formula="x**2", n=3)`` (unquoted values such as
  ``formula=x**2`` are kept as text); nothing at all means no arguments;
- anything else after the tool name on the CALL line is a malformed call.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from srh_core.parsers.arguments import decode_arguments
from srh_core.parsers.base import BaseParser, ParseIssue, clip
from srh_core.parsers.lenient_json import MAX_DECODE_CHARS, as_json_value, balanced_span
from srh_core.parsers.prompt_parser import PromptParser
from srh_core.types import ToolCall
from srh_engine.source import parse_syntax

_CALL_LINE_RE = re.compile(
    r"^[ \t]*(?:(?:[-*>+]|\d{1,3}[.)])[ \t]+)?[*_`]*"
    r"(?:CALL\b[*_`]*[ \t]*:?|(?i:call|action)[*_`]*[ \t]*:)[ \t]*"
    r"[`'\"]?(?P<name>[A-Za-z_][\w\-]*(?:\.[\w\-]+)*)[`'\"]?(?P<rest>[^\n]*)$",
    re.MULTILINE,
)
_FILLER_RE = re.compile(r"(?:\s*```[\w-]*[ \t]*(?=\n|$))*\s*")
_JSON_WORDS = {"true": True, "false": False, "null": None, "none": None}


@BaseParser.register("text")
class TextParser(PromptParser):
    """Reads ``CALL tool_name {...}`` lines from free text."""

    def calling_convention(self) -> str:
        return (
            "To call a tool, write a line that starts with CALL, then the tool name, then its "
            "arguments as one JSON object:\n\n"
            'CALL <tool name> {"<argument>": <value>}\n\n'
            "Rules:\n"
            "- One call per CALL line. Write several CALL lines to make several calls; they run "
            "in order.\n"
            "- The arguments are a JSON object with double-quoted keys and strings. Use {} (or "
            "nothing) for a tool without arguments.\n"
            "- Put nothing else on the CALL line. Text on other lines is fine and is not executed."
        )

    def render_call(self, name: str, arguments: Mapping[str, Any]) -> str:
        return f"CALL {name} {json.dumps(dict(arguments), ensure_ascii=False)}"

    def _extract(self, response: Any) -> Iterator[ToolCall | ParseIssue]:
        text, issues = self.bounded_text(response)
        yield from issues
        position = 0
        while (match := _CALL_LINE_RE.search(text, position)) is not None:
            item, position = self._read_call(text, match)
            if item is not None:
                yield item

    def _read_call(self, text: str, match: re.Match[str]) -> tuple[ToolCall | ParseIssue | None,
                                                                    int]:
        """Read the call starting at ``match``; return it and where scanning resumes."""
        name = match.group("name")
        rest = match.group("rest").strip().lstrip("*_:").strip()
        line_end = match.end()
        if rest.startswith("{") or rest.startswith("("):
            return self._read_bracketed(text, name, text.index(rest[0], match.start("rest")))
        if rest and not rest.startswith("```"):
            return _malformed(name, match.group(0)), line_end
        after = _FILLER_RE.match(text, line_end)
        start = after.end() if after else line_end
        if text.startswith("{", start):
            return self._read_bracketed(text, name, start)
        return ToolCall(name=name, params={}, raw_str=match.group(0).strip()), line_end

    def _read_bracketed(self, text: str, name: str, start: int) -> tuple[ToolCall | ParseIssue,
                                                                          int]:
        span = balanced_span(text, start)
        if span is None or not span.closed:
            raw = text[start:]
            return ParseIssue(
                "truncated",
                f"Your call to {name!r} stops before its arguments are complete (a bracket is "
                "never closed); it was not executed.",
                raw=clip(raw), tool_name=name,
            ), len(text)
        paren = span.text.startswith("(")
        raw = f"CALL {name}{'' if paren else ' '}{span.text}"
        if paren:
            decoded: dict[str, Any] | ParseIssue = _keyword_arguments(span.text, name, raw)
        else:
            decoded = decode_arguments(span.text, tool_name=name, raw=raw)
        if isinstance(decoded, ParseIssue):
            return decoded, span.end
        return ToolCall(name=name, params=decoded, raw_str=clip(raw)), span.end


def _malformed(name: str, line: str) -> ParseIssue:
    return ParseIssue(
        "malformed",
        f"Your call to {name!r} has unexpected text after the tool name; write CALL {name} "
        'followed by a JSON object of arguments, e.g. CALL name {"argument": "value"}.',
        raw=clip(line.strip()), tool_name=name,
    )


def _keyword_arguments(source: str, name: str, raw: str) -> dict[str, Any] | ParseIssue:
    """Read ``(a=1, b="x")`` as keyword arguments, without evaluating anything."""
    try:
        return parse_keyword_arguments(source)
    except ValueError as error:
        return ParseIssue(
            "invalid_arguments",
            f"The arguments of your call to {name!r} could not be read ({error}); write them "
            'as a JSON object, e.g. CALL name {"argument": "value"}.',
            raw=clip(raw), tool_name=name,
        )


def parse_keyword_arguments(source: str) -> dict[str, Any]:
    """Parse a parenthesised keyword list such as ``(formula="x**2", n=3)``.

    Literal values are decoded (``true``/``false``/``null`` too); any other
    expression is kept as its source text, so ``formula=x**2`` gives the
    string ``"x**2"``. A single positional dict literal is accepted as the
    whole argument object.

    Raises:
        ValueError: On syntax errors, positional arguments or ``**kwargs``.
    """
    if len(source) > MAX_DECODE_CHARS:
        raise ValueError(f"arguments too long ({len(source)} chars)")
    code = "f" + source
    try:
        call = parse_syntax(code).body  # type: ignore[attr-defined]
    except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
        raise ValueError(f"not a keyword list: {error}") from None
    if not isinstance(call, ast.Call):
        raise ValueError("not a keyword list")
    if len(call.args) == 1 and not call.keywords and isinstance(call.args[0], ast.Dict):
        value = _literal(call.args[0], code)
        if isinstance(value, dict):
            return value
    if call.args or any(keyword.arg is None for keyword in call.keywords):
        raise ValueError("only name=value arguments are supported")
    return {str(keyword.arg): _literal(keyword.value, code) for keyword in call.keywords}


def _literal(node: ast.expr, code: str) -> Any:
    if isinstance(node, ast.Name) and node.id.lower() in _JSON_WORDS:
        return _JSON_WORDS[node.id.lower()]
    try:
        return as_json_value(ast.literal_eval(node))
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return ast.get_source_segment(code, node) or ""

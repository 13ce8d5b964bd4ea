"""Forgiving JSON reading for model output.

Models write almost-JSON: trailing commas, single quotes, Python's
``True``/``None``, objects buried in prose or code fences, and replies cut
off mid-object. The helpers here find bracketed spans in free text and decode
them leniently. Nothing is ever evaluated: the last fallback is
:func:`ast.literal_eval`, which only builds literals.

Every decoder raises ``ValueError`` (never anything else) on failure; callers
turn that into a parse issue for the model.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

MAX_DECODE_CHARS = 100_000
"""Longest span the decoders accept; longer text is rejected, not parsed."""

SCAN_BUDGET_FACTOR = 20
"""Bracket scanning stops after ``factor * len(text)`` characters (pathological input)."""

_OPENERS = {"{": "}", "[": "]", "(": ")"}
_CLOSERS = frozenset(_OPENERS.values())
_STRING_START_AFTER = frozenset("{[(,:=")
_PY_WORDS = {"true": "True", "false": "False", "null": "None"}
_PY_WORD_RE = re.compile(r"(\"(?:\\.|[^\"\\])*\"|'(?:\\.|[^'\\])*')|\b(true|false|null)\b")
_TRAILING_COMMA_RE = re.compile(r"(\"(?:\\.|[^\"\\])*\"|'(?:\\.|[^'\\])*')|,(\s*[}\]])")
_CALL_PREFIX_RE = re.compile(
    r"^[\[\s]*\{\s*(?:[\"']?(?:id|type)[\"']?\s*:\s*[\"'][^\"']*[\"']\s*,\s*)*"
    r"[\"']?(?:name|tool|tool_name|function|tool_calls|calls)[\"']?\s*:"
)


@dataclass(frozen=True, slots=True)
class BracketSpan:
    """A bracketed region of text starting at an opening bracket.

    Attributes:
        start: Index of the opening bracket.
        end: Index just past the closing bracket, or ``len(text)`` when unclosed.
        text: The span's text.
        closed: False when the text ended before the bracket was closed.
    """

    start: int
    end: int
    text: str
    closed: bool


def loads_lenient(text: str) -> Any:
    """Decode almost-JSON text into plain JSON values.

    Tries strict JSON, then JSON without trailing commas, then a Python
    literal (single quotes, ``True``/``None``; ``true``/``null`` are mapped).
    Tuples become lists; sets, bytes and complex numbers are rejected.

    Args:
        text: The candidate text, typically one bracketed span.

    Returns:
        The decoded value.

    Raises:
        ValueError: When no strategy yields a JSON value; the message is the
            strict JSON decoder's, which is the most useful to a model.
    """
    if len(text) > MAX_DECODE_CHARS:
        raise ValueError(f"text is too long to decode ({len(text)} > {MAX_DECODE_CHARS} chars)")
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as error:
        first_error = error
    try:
        return json.loads(strip_trailing_commas(text))
    except (ValueError, RecursionError):
        pass
    try:
        return as_json_value(ast.literal_eval(_python_literal_text(text).strip()))
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise ValueError(str(first_error)) from None


def strip_trailing_commas(text: str) -> str:
    """Remove commas that directly precede ``}`` or ``]`` outside strings."""
    return _TRAILING_COMMA_RE.sub(lambda m: m.group(1) or m.group(2), text)


def _python_literal_text(text: str) -> str:
    """Map bare ``true``/``false``/``null`` outside strings to Python, drop trailing commas."""
    mapped = _PY_WORD_RE.sub(lambda m: m.group(1) or _PY_WORDS[m.group(2)], text)
    return strip_trailing_commas(mapped)


def as_json_value(value: Any) -> Any:
    """Return ``value`` with tuples as lists; reject values JSON cannot hold."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [as_json_value(item) for item in value]
    if isinstance(value, dict) and all(isinstance(key, str) for key in value):
        return {key: as_json_value(item) for key, item in value.items()}
    raise ValueError(f"{type(value).__name__} is not a JSON value")


def looks_like_call(text: str) -> bool:
    """Whether a span starts like a tool-call object (``{"name": ...`` and friends)."""
    return bool(_CALL_PREFIX_RE.match(text[:200]))


def iter_json_spans(text: str) -> Iterator[BracketSpan]:
    """Yield the top-level ``{...}`` and ``[...]`` spans of free text, in order.

    A closed span is skipped over as a whole (its insides are not searched
    again). An unclosed span that starts like a tool call is yielded (the
    reply was cut) and ends the scan; other unclosed openers are prose and
    are stepped over.

    Args:
        text: Model output.

    Yields:
        Bracket spans; the last may have ``closed=False``.
    """
    scanner = BracketScanner(text)
    position = 0
    while (start := _next_opener(text, position, "{[")) is not None:
        span = scanner.span_at(start)
        if span is None:
            return
        if span.closed:
            yield span
            position = span.end
        elif looks_like_call(span.text):
            yield span
            return
        else:
            position = start + 1


def _next_opener(text: str, position: int, openers: str) -> int | None:
    indices = [i for i in (text.find(o, position) for o in openers) if i >= 0]
    return min(indices) if indices else None


class BracketScanner:
    """Finds the bracket that closes an opening bracket, skipping string literals.

    Double-quoted strings always count as strings; a single quote starts a
    string only where a value or key may begin (after ``{ [ ( , : =``), so
    apostrophes in prose do not swallow the rest of the text. Total work is
    bounded by :data:`SCAN_BUDGET_FACTOR`.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.budget = SCAN_BUDGET_FACTOR * len(text) + 10_000

    def span_at(self, start: int) -> BracketSpan | None:
        """Return the span opened at ``start``, or None once the scan budget is spent."""
        end = self._closing_index(start)
        if end is None:
            return None
        closed = end > 0
        stop = end if closed else len(self.text)
        return BracketSpan(start, stop, self.text[start:stop], closed)

    def _closing_index(self, start: int) -> int | None:
        """Index past the matching closer, -1 when unclosed, None when out of budget."""
        text, depth, quote, previous = self.text, 0, "", ""
        index = start
        while index < len(text):
            self.budget -= 1
            if self.budget < 0:
                return None
            char = text[index]
            if quote:
                index, still_open = self._in_string(index, quote)
                previous, quote = (previous, quote) if still_open else (quote, "")
                continue
            if char == '"' or (char == "'" and previous in _STRING_START_AFTER):
                quote = char
            elif char in _OPENERS:
                depth += 1
            elif char in _CLOSERS:
                depth -= 1
                if depth == 0:
                    return index + 1
            if not char.isspace():
                previous = char
            index += 1
        return -1

    def _in_string(self, index: int, quote: str) -> tuple[int, bool]:
        """Step over one character of a string literal; report whether it is still open."""
        char = self.text[index]
        if char == "\\":
            return index + 2, True
        return index + 1, char != quote


def balanced_span(text: str, start: int) -> BracketSpan | None:
    """Return the bracket span opened at ``text[start]`` (``{``, ``[`` or ``(``)."""
    return BracketScanner(text).span_at(start)

"""Formula text checks and rewriting done before Python's ``ast`` sees it.

* size limit and empty input;
* bracket nesting depth, measured on tokens so that ``ast.parse`` is never
  asked to recurse absurdly deep;
* ``^`` (power in formula notation) becomes ``**`` at token level, so
  ``x^2+1`` keeps its mathematical precedence;
* one top-level ``=`` (an equation ``y = f``) becomes ``==`` so the whole text
  parses as one expression; the parser then splits the comparison.

Columns of every rewrite are recorded so that error positions point into the
text the user wrote.
"""

from __future__ import annotations

import ast
import io
import re
import threading
import tokenize
from dataclasses import dataclass
from typing import Literal

from .errors import ParseError

__all__ = ["MAX_PAREN_DEPTH", "MAX_SOURCE_LENGTH", "PreparedSource", "parse_syntax",
           "prepare_source"]

# CPython 3.11's AST constructor keeps its recursion depth in interpreter-wide
# state, so concurrent ast.parse calls on threads can fail with "AST
# constructor recursion depth mismatch" (python/cpython#106905). Every
# ast.parse of ours goes through this lock; parsing a formula takes microseconds.
_AST_LOCK = threading.Lock()


def parse_syntax(text: str, mode: Literal["eval", "exec"] = "eval") -> ast.AST:
    """``ast.parse`` that is safe to call from several threads at once."""
    with _AST_LOCK:
        return ast.parse(text, mode=mode)

MAX_SOURCE_LENGTH = 10_000
"""Longest accepted formula text, in characters."""

MAX_PAREN_DEPTH = 100
"""Deepest accepted bracket nesting; checked on tokens before ``ast.parse``."""

_SURROGATE = re.compile("[\ud800-\udfff]")
_OPENING = frozenset("([{")
_CLOSING = frozenset(")]}")
_REWRITES = {"^": "**", "=": "=="}


@dataclass(frozen=True, slots=True)
class PreparedSource:
    """Rewritten text plus what is needed to map positions back.

    Attributes:
        source: The text as given.
        text: The rewritten text handed to ``ast.parse``.
        equals: Number of top-level ``=`` signs rewritten to ``==``.
        line_offset: Lines of leading whitespace removed.
        column_offset: Columns of leading whitespace removed on the first line.
        insertions: Per rewritten line (1-based), the columns of inserted
            characters, in rewritten coordinates.
    """

    source: str
    text: str
    equals: int
    line_offset: int
    column_offset: int
    insertions: dict[int, tuple[int, ...]]

    def original_position(self, line: int, column: int) -> tuple[int, int]:
        """Map a rewritten ``(line, 0-based char column)`` to the given text, 1-based."""
        inserted = sum(1 for at in self.insertions.get(line, ()) if at <= column)
        column -= inserted
        if line == 1:
            column += self.column_offset
        return line + self.line_offset, column + 1

    def node_position(self, lineno: int, byte_column: int) -> tuple[int, int]:
        """Map an ``ast`` position (1-based line, UTF-8 byte column) to the given text."""
        lines = self.text.split("\n")
        line_text = lines[lineno - 1] if 0 < lineno <= len(lines) else ""
        column = len(line_text.encode()[:byte_column].decode(errors="ignore"))
        return self.original_position(lineno, column)


def _fail(message: str, source: str, construct: str,
          position: tuple[int, int] | None = None) -> ParseError:
    where = f" at line {position[0]}, column {position[1]}" if position else ""
    return ParseError(f"{construct}: {message}{where}", source=source, position=position,
                      construct=construct)


def _check_characters(source: str) -> None:
    """Refuse lone surrogates: text, but no Unicode character (``ast`` cannot encode them)."""
    found = _SURROGATE.search(source)
    if found is None:
        return
    before = source[:found.start()]
    position = (before.count("\n") + 1, found.start() - (before.rfind("\n") + 1) + 1)
    raise _fail(f"formula contains an invalid character {found.group()!r} (a lone surrogate, "
                "not a Unicode character: remove it)", source, "invalid character", position)


def _check_size(source: object) -> str:
    if not isinstance(source, str):
        raise ParseError(f"non-string input: formula must be a string, got "
                         f"{type(source).__name__}",
                         source=repr(source), construct="non-string input")
    if len(source) > MAX_SOURCE_LENGTH:
        raise ParseError(
            f"source length: formula is {len(source)} characters long; at most "
            f"{MAX_SOURCE_LENGTH} are "
            "accepted", source=source[:200], construct="source length")
    if not source.strip():
        raise ParseError("empty input: expected an expression such as 'a*x**2 + b'",
                         source=source, construct="empty input")
    return source


def _scan(text: str, source: str, shift: tuple[int, int]) -> list[tuple[int, int, str]]:
    """Return the rewrites ``(line, column, token)`` and enforce bracket limits."""
    rewrites: list[tuple[int, int, str]] = []
    depth = 0

    def where(row: int, column: int) -> tuple[int, int]:
        return row + shift[0], column + 1 + (shift[1] if row == 1 else 0)

    tokens = tokenize.generate_tokens(io.StringIO(text).readline)
    try:
        for token in tokens:
            if token.type != tokenize.OP:
                continue
            if token.string in _OPENING:
                depth += 1
                if depth > MAX_PAREN_DEPTH:
                    raise _fail(f"brackets nested deeper than {MAX_PAREN_DEPTH} levels",
                                source, "nesting depth", where(*token.start))
            elif token.string in _CLOSING:
                depth -= 1
                if depth < 0:
                    raise _fail(f"{token.string!r} has no matching opening bracket",
                                source, "unbalanced brackets", where(*token.start))
            elif token.string == "^" or (token.string == "=" and depth == 0):
                rewrites.append((*token.start, token.string))
    except (tokenize.TokenError, SyntaxError) as error:
        construct = "unbalanced brackets" if depth > 0 else "syntax"
        detail = "unclosed bracket" if depth > 0 else f"cannot tokenize: {error}"
        raise _fail(detail, source, construct) from None
    return rewrites


def _apply(text: str, rewrites: list[tuple[int, int, str]],
           ) -> tuple[str, dict[int, tuple[int, ...]]]:
    lines = text.split("\n")
    insertions: dict[int, list[int]] = {}
    for row, column, token in sorted(rewrites, reverse=True):
        line = lines[row - 1]
        lines[row - 1] = line[:column] + _REWRITES[token] + line[column + 1:]
    for row, column, _ in sorted(rewrites):
        before = len(insertions.get(row, []))
        insertions.setdefault(row, []).append(column + before + 1)
    return "\n".join(lines), {row: tuple(cols) for row, cols in insertions.items()}


def prepare_source(source: str) -> PreparedSource:
    """Check limits and rewrite ``^`` and a top-level ``=`` for ``ast.parse``.

    Args:
        source: The formula text.

    Returns:
        The rewritten text with its position map.

    Raises:
        ParseError: Not a string, empty, too long, holding a lone surrogate,
            brackets too deep or unbalanced, or more than one top-level ``=``.
    """
    _check_size(source)
    _check_characters(source)
    text = source.lstrip()
    removed = source[: len(source) - len(text)]
    shift = (removed.count("\n"), len(removed) - (removed.rfind("\n") + 1))
    rewrites = _scan(text, source, shift)
    equals = [rewrite for rewrite in rewrites if rewrite[2] == "="]
    if len(equals) > 1:
        row, column, _ = equals[1]
        raise _fail("more than one '=': expected a formula or a single equation 'y = f(x)'",
                    source, "chained assignment",
                    (row + shift[0], column + 1 + (shift[1] if row == 1 else 0)))
    rewritten, insertions = _apply(text, rewrites)
    return PreparedSource(source, rewritten, len(equals), shift[0], shift[1], insertions)

"""Bounds on untrusted JSON text, checked before it is parsed.

Python's ``json`` parser recurses once per nesting level and raises
``RecursionError`` somewhere near a thousand levels (fewer when the caller is
already deep in its own stack), so text from outside (a sandboxed program's
result, a manifest) is measured first, without recursion, and refused with a
message that says what the limit is.

The measure is one pass over the text in chunks of :data:`SCAN_CHUNK_CHARS`,
carrying only the in-string, pending-escape and depth state between chunks:
linear time, and extra memory bounded by the chunk whatever the text's size
(a 40 MB result must not cost gigabytes to check).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

#: Characters scanned at once; the scan's extra memory is a small multiple of this.
SCAN_CHUNK_CHARS = 1 << 18
_SPECIAL = re.compile(r'["\\\[\]{}]')
_QUOTE, _BACKSLASH = ord('"'), ord("\\")
_OPEN_ARRAY, _OPEN_OBJECT = ord("["), ord("{")
_CLOSE_ARRAY, _CLOSE_OBJECT = ord("]"), ord("}")


@dataclass
class _ScanState:
    """What one chunk hands to the next."""

    in_string: bool = False
    escaped: bool = False  # the next character is escaped by an odd run of backslashes
    depth: int = 0
    deepest: int = 0


def nesting_depth(text: str, stop_above: int | None = None) -> int:
    """The deepest nesting of arrays and objects in JSON ``text`` (0 for a scalar).

    Brackets inside strings do not count. For text that is not valid JSON the
    number is only an estimate (exact up to the first error, which is as far
    as a parser gets); the parser reports such text anyway.

    Args:
        text: The JSON text.
        stop_above: Stop once the depth exceeds this; the number returned is
            then more than ``stop_above`` but may be less than the deepest.
    """
    state = _ScanState()
    for start in range(0, len(text), SCAN_CHUNK_CHARS):
        chunk = text[start:start + SCAN_CHUNK_CHARS]
        if _SPECIAL.search(chunk) is None:
            state.escaped = False  # a pending escape took the chunk's first character
            continue
        _scan_chunk(np.frombuffer(chunk.encode("utf-8", "surrogatepass"), dtype=np.uint8),
                    state)
        if stop_above is not None and state.deepest > stop_above:
            break
    return state.deepest


def _escaped_positions(codes: np.ndarray, state: _ScanState) -> np.ndarray:
    """Whether each byte follows an odd run of backslashes (runs may span chunks)."""
    slashes = codes == _BACKSLASH
    escaped = np.zeros(codes.size, dtype=bool)
    escaped[0] = state.escaped
    if not slashes.any():
        state.escaped = False
        return escaped
    index = np.arange(codes.size, dtype=np.int64)
    # The run carried in from the previous chunk counts as starting one byte earlier.
    last_other = np.maximum.accumulate(np.where(slashes, -1 - int(state.escaped), index))
    run = index - last_other  # backslashes ending at each byte, itself included
    escaped[1:] = (run[:-1] & 1).astype(bool)
    state.escaped = bool(run[-1] & 1)
    return escaped


def _scan_chunk(codes: np.ndarray, state: _ScanState) -> None:
    escaped = _escaped_positions(codes, state)
    quotes = (codes == _QUOTE) & ~escaped
    inside = (np.cumsum(quotes, dtype=np.int64) + int(state.in_string)) & 1
    state.in_string = bool(inside[-1])
    outside = inside == 0
    opens = ((codes == _OPEN_ARRAY) | (codes == _OPEN_OBJECT)) & outside
    closes = ((codes == _CLOSE_ARRAY) | (codes == _CLOSE_OBJECT)) & outside
    positions = np.flatnonzero(opens | closes)
    if positions.size == 0:
        return
    running = state.depth + np.cumsum(np.where(opens[positions], 1, -1), dtype=np.int64)
    state.depth = int(running[-1])
    state.deepest = max(state.deepest, int(running.max()))


def depth_problem(text: str, max_depth: int, what: str) -> str | None:
    """Why ``text`` is refused (nested deeper than ``max_depth``), or None."""
    depth = nesting_depth(text)
    if depth <= max_depth:
        return None
    return (f"{what} is nested {depth} levels deep; at most {max_depth} levels of arrays "
            "and objects are allowed.")

"""Bounds on untrusted JSON text, checked before it is parsed.

Python's ``json`` parser recurses once per nesting level and raises
``RecursionError`` somewhere near a thousand levels (fewer when the caller is
already deep in its own stack), so text from outside (a sandboxed program's
result, a manifest) is measured first, without recursion, and refused with a
message that says what the limit is.
"""

from __future__ import annotations

import re

import numpy as np

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_OPEN = (ord("["), ord("{"))
_CLOSE = (ord("]"), ord("}"))


def nesting_depth(text: str) -> int:
    """The deepest nesting of arrays and objects in JSON ``text`` (0 for a scalar).

    Brackets inside strings do not count. For text that is not valid JSON the
    number is only an estimate; the parser reports such text anyway.
    """
    skeleton = _STRING.sub("", text).encode("utf-8", "ignore")
    codes = np.frombuffer(skeleton, dtype=np.uint8)
    brackets = codes[np.isin(codes, (*_OPEN, *_CLOSE))]
    if brackets.size == 0:
        return 0
    steps = np.where(np.isin(brackets, _OPEN), 1, -1).astype(np.int64)
    return int(max(np.cumsum(steps).max(), 0))


def depth_problem(text: str, max_depth: int, what: str) -> str | None:
    """Why ``text`` is refused (nested deeper than ``max_depth``), or None."""
    depth = nesting_depth(text)
    if depth <= max_depth:
        return None
    return (f"{what} is nested {depth} levels deep; at most {max_depth} levels of arrays "
            "and objects are allowed.")

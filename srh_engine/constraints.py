"""PySR's ``nested_constraints`` and size ``constraints`` checked on an engine tree.

``nested``: ``{outer: {inner: most}}``, at most ``most`` ``inner`` operators along any
path inside an ``outer`` one (-1: no limit). ``sizes``: ``{op: most}`` for a unary
operator's argument, ``{op: [left, right]}`` for a binary one's (nodes; -1: no limit).
Names are PySR's canonical ones (``+ - * / ^``, ``sqrt square cube exp log sin cos tanh
abs inv neg``); an engine node counts as every operator that can write it (``x**2`` is
``^`` and ``square``, ``-x`` is ``neg``). The harness validates the names
(:mod:`srh_core.operators`); here unknown names simply never match.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .nodes import Binary, Expression, Function, Number, Unary
from .transform import complexity

__all__ = ["constraint_violations", "nesting", "pysr_names", "size_breaches"]

_SPECIAL_POWERS = {2.0: "square", 3.0: "cube", 0.5: "sqrt", -1.0: "inv"}


def constraint_violations(expression: Expression,
                          nested: Mapping[str, Mapping[str, int]] | None,
                          constraints: Mapping[str, Any] | None) -> list[str]:
    """How ``expression`` breaks the run's ``nested_constraints`` and ``constraints``."""
    found: dict[str, None] = {}
    for node in expression.iter_preorder():
        names = pysr_names(node)
        for name in names:
            for inner, most in (nested or {}).get(name, {}).items():
                depth = max((nesting(child, inner) for child in node.operands), default=0)
                if most >= 0 and depth > most:
                    found[f"{inner} nested {depth} time(s) in {name} (at most {most})"] = None
            limit = (constraints or {}).get(name)
            if limit is not None:
                found.update(dict.fromkeys(size_breaches(node, name, limit)))
    return list(found)


def size_breaches(node: Expression, name: str, limit: Any) -> list[str]:
    """How the arguments of ``node`` (PySR operator ``name``) exceed its size ``limit``."""
    limits = list(limit) if isinstance(limit, list | tuple) else [limit]
    operands = node.operands if len(limits) == len(node.operands) else node.operands[:1]
    sides = ("argument",) if len(limits) == 1 else ("left argument", "right argument")
    return [f"the {side} of {name} of size {complexity(child)} (at most {most})"
            for child, most, side in zip(operands, limits, sides, strict=False)
            if most >= 0 and complexity(child) > most]


def nesting(node: Expression, name: str) -> int:
    """The most ``name`` operators along one path from ``node`` down."""
    below = max((nesting(child, name) for child in node.operands), default=0)
    return below + (name in pysr_names(node))


def pysr_names(node: Expression) -> tuple[str, ...]:
    """The PySR operators an engine node is (``x**2``: ``^`` and ``square``)."""
    if isinstance(node, Binary):
        if node.operator != "**":
            return (node.operator,)
        exponent = node.right.value if isinstance(node.right, Number) else None
        special = None if exponent is None else _SPECIAL_POWERS.get(exponent)
        return ("^", special) if special else ("^",)
    if isinstance(node, Unary):
        return ("neg",)
    if isinstance(node, Function):
        return (node.name,)
    return ()

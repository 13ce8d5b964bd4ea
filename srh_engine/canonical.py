"""Canonical keys: one string per formula up to trivial rewrites.

The key is equal for formulas that differ only by commutativity and
associativity of ``+`` and ``*``, constant folding, like terms and like
factors (``x + x`` ~ ``2*x``, ``x*x`` ~ ``x**2``), integer powers of
products (``(2*x)**2`` ~ ``4*x**2``), ``x - y`` ~ ``x + (-1)*y``,
``x / y`` ~ ``x * y**-1`` ~ ``x*inv(y)``, and float noise (numbers are rounded to
``KEY_SIGNIFICANT_DIGITS`` significant digits). It uses only string sorting
and float arithmetic, so it is identical across processes and machines (no
``hash()``), and it needs no SymPy.

Bound parameters count as their value (a fitted formula keys like its
numeric form); unbound parameters are keyed by name.

Indexed formulas key up to renaming of indices: the indices bound by a
``sum[...]`` or ``gather`` are renamed by nesting depth and first appearance
(``sum[j](A[i, j], x[j])`` ~ ``sum[k](A[i, k], x[k])``, ``sum[j, k]`` ~
``sum[k, j]``), free indices by first appearance; ``aggr`` keys like its
lowered form.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .desugaring import desugar
from .functions import FUNCTIONS
from .graph_nodes import Delay, Gather, Index, Indexed, Reduction
from .nodes import Binary, Expression, Function, GroupedParameter, Number, Parameter, Symbol, Unary

__all__ = ["KEY_SIGNIFICANT_DIGITS", "canonical_key"]

KEY_SIGNIFICANT_DIGITS = 12
"""Numbers in keys are rounded to this many significant digits."""


@dataclass(frozen=True, slots=True)
class _Form:
    """A node of the canonical form; ``key`` is its canonical string."""

    key: str
    kind: str  # "num", "atom", "add", "mul", "pow", "fn"
    value: float = 0.0
    children: tuple[_Form, ...] = ()


def _format(value: float) -> str:
    text = format(value, f".{KEY_SIGNIFICANT_DIGITS}g")
    return "0" if text in ("0", "-0") else text


def _num(value: float) -> _Form:
    return _Form(_format(value), "num", float(value))


def _is(form: _Form, text: str) -> bool:
    return form.kind == "num" and form.key == text


def _compound(kind: str, children: list[_Form], label: str | None = None) -> _Form:
    return _Form(f"{label or kind}({','.join(c.key for c in children)})", kind,
                 children=tuple(children))


def _flatten(kind: str, items: list[_Form]) -> list[_Form]:
    flat: list[_Form] = []
    for item in items:
        flat.extend(item.children if item.kind == kind else (item,))
    return flat


def _split_coefficient(term: _Form) -> tuple[float, _Form]:
    if term.kind == "mul" and term.children[0].kind == "num":
        rest = list(term.children[1:])
        return term.children[0].value, rest[0] if len(rest) == 1 else _compound("mul", rest)
    return 1.0, term


def _add(items: list[_Form]) -> _Form:
    constant = 0.0
    terms: dict[str, list[Any]] = {}
    for term in _flatten("add", items):
        if term.kind == "num":
            constant += term.value
            continue
        coefficient, rest = _split_coefficient(term)
        terms.setdefault(rest.key, [0.0, rest])[0] += coefficient
    parts = [_mul([_num(c), rest]) for c, rest in terms.values() if not _is(_num(c), "0")]
    if not _is(_num(constant), "0"):
        parts.append(_num(constant))
    if len(parts) <= 1:
        return parts[0] if parts else _num(0.0)
    return _compound("add", sorted(parts, key=lambda form: form.key))


def _mul(items: list[_Form]) -> _Form:
    coefficient = 1.0
    bases: dict[str, list[Any]] = {}
    for factor in _flatten("mul", items):
        if factor.kind == "num":
            coefficient *= factor.value
            continue
        base, exponent = factor, 1.0
        if factor.kind == "pow" and factor.children[1].kind == "num":
            base, exponent = factor.children[0], factor.children[1].value
        bases.setdefault(base.key, [0.0, base])[0] += exponent
    if _is(_num(coefficient), "0"):
        return _num(0.0)
    parts = sorted((_power(base, _num(e)) for e, base in bases.values()
                    if not _is(_num(e), "0")), key=lambda form: form.key)
    if not _is(_num(coefficient), "1"):
        parts.insert(0, _num(coefficient))
    if len(parts) <= 1:
        return parts[0] if parts else _num(coefficient)
    return _compound("mul", parts)


def _power(base: _Form, exponent: _Form) -> _Form:
    if base.kind == "num" and exponent.kind == "num":
        with np.errstate(all="ignore"):
            value = float(np.float64(base.value) ** exponent.value)
        if np.isfinite(value):
            return _num(value)
    if _is(exponent, "1"):
        return base
    if _is(exponent, "0"):
        return _num(1.0)
    integral = exponent.kind == "num" and float(exponent.value).is_integer()
    if integral and base.kind == "pow" and base.children[1].kind == "num":
        return _power(base.children[0], _num(base.children[1].value * exponent.value))
    if integral and base.kind == "mul":
        return _mul([_power(factor, exponent) for factor in base.children])
    return _compound("pow", [base, exponent])


def _function(name: str, arguments: list[_Form]) -> _Form:
    if name == "inv":
        return _power(arguments[0], _num(-1.0))
    if all(argument.kind == "num" for argument in arguments):
        with np.errstate(all="ignore"):
            value = float(FUNCTIONS[name].compute(*(a.value for a in arguments)))
        if np.isfinite(value):
            return _num(value)
    return _compound("fn", arguments, label=name)


def _canon_binary(node: Binary) -> _Form:
    left, right = _canon(node.left), _canon(node.right)
    if node.operator == "+":
        return _add([left, right])
    if node.operator == "-":
        return _add([left, _mul([_num(-1.0), right])])
    if node.operator == "*":
        return _mul([left, right])
    if node.operator == "/":
        return _mul([left, _power(right, _num(-1.0))])
    return _power(left, right)


def _canon_parameter(node: Parameter) -> _Form:
    return _num(node.value) if node.value is not None else _Form(f"param:{node.name}", "atom")


def _canon_grouped(node: GroupedParameter) -> _Form:
    values = ";".join(f"{k!r}={_format(v)}" for k, v in node.value or ())
    default = "" if node.default is None else _format(node.default)
    return _Form(f"grouped({_canon(node.by).key},{node.family},{values},{default})", "atom")


def _atom(label: str, *parts: Expression | None) -> _Form:
    keys = ";".join("" if part is None else _canon(part).key for part in parts)
    return _Form(f"{label}({keys})", "atom")


def _names(indices: tuple[Index, ...]) -> str:
    return ",".join(index.name for index in indices)


_CANONICALISERS: dict[type, Callable[[Any], _Form]] = {
    Indexed: lambda node: _atom(f"idx[{_names(node.indices)}]", node.base),
    Reduction: lambda node: _atom(f"sum[{_names(node.indices)}]", node.relation, node.operand),
    Gather: lambda node: _atom("gather", node.relation, node.operand),
    Delay: lambda node: _atom("delay", node.value, node.delta),
    Number: lambda node: _num(node.value),
    Symbol: lambda node: _Form(node.name, "atom"),
    Parameter: _canon_parameter,
    GroupedParameter: _canon_grouped,
    Unary: lambda node: _mul([_num(-1.0), _canon(node.operand)]),
    Binary: _canon_binary,
    Function: lambda node: _function(node.name, [_canon(a) for a in node.arguments]),
}


def _canon(node: Expression) -> _Form:
    return _CANONICALISERS[type(node)](node)


def canonical_key(expression: Expression) -> str:
    """Deterministic key, equal for formulas that are the same up to trivial rewrites.

    ``x*y + 1``, ``1 + y*x`` and ``(2 - 1) + x*y`` share a key; so do
    ``x + x`` and ``2*x``. Different formulas get different keys (beyond the
    rewrites listed in the module docstring, no algebra is attempted).

    Args:
        expression: The tree.

    Returns:
        The key, e.g. ``"add(1,mul(x,y))"``.
    """
    expression = desugar(expression)
    if any(isinstance(node, Indexed | Reduction | Gather) for node in expression.iter_preorder()):
        expression = _renamed(expression, 0, {}, {})
    return _canon(expression).key


def _first_names(parts: tuple[Expression | None, ...], wanted: set[str]) -> list[str]:
    seen: dict[str, None] = {}
    for part in parts:
        for node in part.iter_preorder() if part is not None else ():
            if isinstance(node, Indexed | Reduction):
                seen.update((i.name, None) for i in node.indices if i.name in wanted)
    return list(seen)


def _renamed(node: Expression, depth: int, bound: dict[str, str], free: dict[str, str],
             ) -> Expression:
    """Rename indices: bound ones by depth and first appearance, free ones by appearance."""
    if isinstance(node, Reduction | Gather):
        relation, operand = node.relation, node.operand
        names = [i.name for i in node.indices] if isinstance(node, Reduction) else \
            [i.name for n in relation.iter_preorder() if isinstance(n, Indexed)
             for i in n.indices]
        order = _first_names((relation, operand), set(names))
        order += [name for name in dict.fromkeys(names) if name not in order]
        local = {**bound, **{old: f"b{depth}_{k}" for k, old in enumerate(order)}}
        new_relation = None if relation is None else _renamed(relation, depth + 1, local, free)
        new_operand = _renamed(operand, depth + 1, local, free)
        if isinstance(node, Gather):
            return Gather(new_relation, new_operand)  # type: ignore[arg-type]
        indices = tuple(Index(local[name]) for name in order)
        return Reduction(indices, new_operand, new_relation)
    if isinstance(node, Indexed):
        base = _renamed(node.base, depth, bound, free)
        names = [bound.get(i.name) or free.setdefault(i.name, f"f{len(free)}")
                 for i in node.indices]
        return Indexed(base, tuple(Index(name) for name in names))
    if not node.operands:
        return node
    return node.with_operands(tuple(_renamed(c, depth, bound, free) for c in node.operands))

"""Text, LaTeX and tree rendering.

Text output is parseable: ``parse(to_str(e))`` rebuilds a tree that
evaluates bit for bit like ``e``. Floats render with ``repr`` (shortest
round trip), ``math.pi``/``math.e`` render as ``pi``/``e``, parentheses are
added exactly where Python's precedence would otherwise change the tree
(``a - (b - c)``, ``a/(b*c)``, ``(-2)**x``, ``(a**b)**c``), plus around a
negative right operand of ``+ - * /`` for readability. A negative number or a
product led by one, right of ``+`` or ``-``, prints with the sign folded into
the operator: ``a + -0.5*t`` prints ``a - 0.5*t`` and ``a - -2`` prints
``a + 2``; IEEE negation is exact, so the values stay bit for bit the same.
An integral float exponent prints as an int (``x**2.0`` prints ``x**2``).
Parameters render as
``param("a")`` / ``param("a", 1.5)`` (the form ``parse`` accepts) unless
another ``parameter_style`` is asked for.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any, Literal

from .functions import FUNCTIONS
from .graph_nodes import Aggregate, Delay, Gather, Index, Indexed, Reduction, RelationLift
from .nodes import (
    Binary,
    Expression,
    Function,
    GroupedParameter,
    Number,
    Parameter,
    Symbol,
    Unary,
    integral_number,
)
from .transform import map_postorder

__all__ = ["ParameterStyle", "render", "to_str", "to_tree"]

ParameterStyle = Literal["call", "name", "value"]
"""``call``: ``param("a", 1.5)`` (round-trips); ``name``: ``a``; ``value``: ``1.5``."""

SUM, PRODUCT, UNARY, POWER, ATOM = 1, 2, 3, 4, 5
PRECEDENCE = {"+": SUM, "-": SUM, "*": PRODUCT, "/": PRODUCT, "**": POWER}
TEXT_OPERATORS = {"+": " + ", "-": " - ", "*": "*", "/": "/", "**": "**"}
NAMED_CONSTANTS = {math.pi: ("pi", "\\pi"), math.e: ("e", "e")}
INTEGRAL_EXPONENT_LIMIT = 1000
"""Integral float exponents up to this size print as ints (``x**2``, not ``x**2.0``)."""
FOLDED_SIGNS = {"+": "-", "-": "+"}
GREEK = frozenset(
    "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi pi rho sigma tau "
    "upsilon phi chi psi omega Gamma Delta Theta Lambda Xi Pi Sigma Upsilon Phi Psi Omega".split())


class _Renderer:
    """Recursive renderer; one instance per call holds the options."""

    def __init__(self, latex: bool, number_format: str, parameter_style: ParameterStyle) -> None:
        self.latex = latex
        self.number_format = number_format
        self.parameter_style = parameter_style
        self.handlers: dict[type, Callable[[Any], str]] = {
            Number: self.number, Symbol: self.symbol, Parameter: self.parameter,
            Binary: self.binary, Unary: self.unary, Function: self.function,
            GroupedParameter: self.grouped, Indexed: self.indexed, Reduction: self.reduction,
            Gather: self.gather, Delay: self.delay, Aggregate: self.aggregate,
            RelationLift: self.lift,
        }

    def render(self, node: Expression) -> str:
        return self.handlers[type(node)](node)

    def wrapped(self, node: Expression, parenthesise: bool) -> str:
        text = self.render(node)
        if not parenthesise:
            return text
        return f"\\left({text}\\right)" if self.latex else f"({text})"

    def number(self, node: Number) -> str:
        value = node.value
        if not self.number_format and isinstance(value, float) and abs(value) in NAMED_CONSTANTS:
            name = NAMED_CONSTANTS[abs(value)][1 if self.latex else 0]
            return "-" + name if value < 0 else name
        text = format(value, self.number_format) if self.number_format else repr(value)
        if self.latex and "e" in text and "inf" not in text:
            mantissa, exponent = text.split("e")
            return f"{mantissa} \\cdot 10^{{{int(exponent)}}}"
        return text

    def symbol(self, node: Symbol) -> str:
        return latex_name(node.name) if self.latex else node.name

    def parameter(self, node: Parameter) -> str:
        if self.latex or self.parameter_style != "call":
            return latex_name(node.name) if self.latex else node.name
        if node.value is None:
            return f'param("{node.name}")'
        return f'param("{node.name}", {node.value!r})'

    def grouped(self, node: GroupedParameter) -> str:
        by = self.render(node.by)
        if self.latex or self.parameter_style != "call":
            name = node.name or "theta"
            return f"{latex_name(name)}_{{{by}}}" if self.latex else f"{name}[{by}]"
        parts = [by]
        if node.name is not None:
            parts.append(f'name="{node.name}"')
        if node.value is not None:
            parts.append(f"value={dict(node.value)!r}")
        if node.default is not None:
            parts.append(f"default={node.default!r}")
        return f"grouped_param({', '.join(parts)})"

    def binary(self, node: Binary) -> str:
        operator = node.operator
        if self.latex and operator == "/":
            return f"\\frac{{{self.render(node.left)}}}{{{self.render(node.right)}}}"
        negated = _negated(node.right) if operator in FOLDED_SIGNS and not _int_zero_possible(
            node.right) else None
        if negated is not None:
            node = Binary(FOLDED_SIGNS[operator], node.left, negated)
            operator = node.operator
        own = PRECEDENCE[operator]
        left_precedence = precedence(node.left)
        right_precedence = precedence(node.right)
        if operator == "**":
            left_parens = left_precedence <= POWER
            right_parens = right_precedence < UNARY
        else:
            left_parens = left_precedence < own
            right_parens = right_precedence <= own or right_precedence == UNARY
        left = self.wrapped(node.left, left_parens)
        right = self.wrapped(_int_exponent(node.right) if operator == "**" else node.right,
                             right_parens)
        if self.latex:
            return _latex_binary(operator, left, right)
        return f"{left}{TEXT_OPERATORS[operator]}{right}"

    def unary(self, node: Unary) -> str:
        return "-" + self.wrapped(node.operand, precedence(node.operand) <= UNARY)

    def function(self, node: Function) -> str:
        arguments = [self.render(argument) for argument in node.arguments]
        if self.latex:
            return FUNCTIONS[node.name].latex.format(*arguments)
        return f"{node.name}({', '.join(arguments)})"


    # -- structured nodes ---------------------------------------------------
    def indices(self, indices: tuple[Index, ...]) -> str:
        names = [index.name for index in indices]
        return " ".join(latex_name(n) for n in names) if self.latex else ", ".join(names)

    def indexed(self, node: Indexed) -> str:
        base = self.wrapped(node.base, precedence(node.base) < ATOM or
                            isinstance(node.base, Indexed))
        if self.latex:
            return f"{{{base}}}_{{{self.indices(node.indices)}}}"
        return f"{base}[{self.indices(node.indices)}]"

    def reduction(self, node: Reduction) -> str:
        if self.latex:
            relation = "" if node.relation is None else self.wrapped(
                node.relation, precedence(node.relation) < PRODUCT) + " \\cdot "
            return (f"\\sum_{{{self.indices(node.indices)}}} {relation}"
                    f"{self.wrapped(node.operand, True)}")
        arguments = [node.operand] if node.relation is None else [node.relation, node.operand]
        return f"sum[{self.indices(node.indices)}]({self.arguments(arguments)})"

    def gather(self, node: Gather) -> str:
        if self.latex:
            return (f"\\left.{self.wrapped(node.operand, True)}\\right|_{{"
                    f"{self.render(node.relation)}}}")
        return f"gather({self.arguments([node.relation, node.operand])})"

    def delay(self, node: Delay) -> str:
        if self.latex:
            return f"{self.wrapped(node.value, True)}\\big|_{{t - {self.render(node.delta)}}}"
        return f"delay({self.arguments([node.value, node.delta])})"

    def aggregate(self, node: Aggregate) -> str:
        return self.call("aggr", [node.relation, node.operand])

    def lift(self, node: RelationLift) -> str:
        name = "targ" if node.role == "target" else "sour"
        return self.call(name, [node.operand] if node.relation is None
                         else [node.relation, node.operand])

    def call(self, name: str, arguments: list[Expression]) -> str:
        if self.latex:
            return f"\\operatorname{{{name}}}\\left({self.arguments(arguments)}\\right)"
        return f"{name}({self.arguments(arguments)})"

    def arguments(self, arguments: list[Expression]) -> str:
        return ", ".join(self.render(argument) for argument in arguments)


def _int_exponent(exponent: Expression) -> Expression:
    """An integral float exponent as an int Number (``2.0`` -> ``2``; :func:`integral_number`
    up to :data:`INTEGRAL_EXPONENT_LIMIT`)."""
    if isinstance(exponent, Number):
        return Number(integral_number(exponent.value, INTEGRAL_EXPONENT_LIMIT))
    return exponent


def _int_zero_possible(node: Expression) -> bool:
    """Whether ``node`` is Python-int arithmetic other than a nonzero literal: its zero has
    no sign, so ``a + -(0)`` and ``a - 0`` differ for ``a = -0.0``."""
    if isinstance(node, Number):
        return node.value == 0 and isinstance(node.value, int)
    return all(isinstance(n, Number) and isinstance(n.value, int) if not n.operands else
               isinstance(n, Binary | Unary) for n in node.iter_preorder())


def _negated(node: Expression) -> Expression | None:
    """``-node`` when that is exact and reads better (``-0.5*t`` -> ``0.5*t``), else None.

    A negative number, or a ``*``/``/`` chain whose leftmost factor is a negative
    number (negating that factor negates every partial product exactly, NaNs
    included). A unary minus stays: ``a + -(nan)`` and ``a - nan`` differ in the
    NaN's sign bit (:func:`srh_engine.readable` rewrites that tree instead).
    """
    if isinstance(node, Number):
        return Number(-node.value) if math.copysign(1.0, node.value) < 0 else None
    if isinstance(node, Binary) and node.operator in ("*", "/"):
        left = _negated(node.left)
        if left is not None:
            return Binary(node.operator, left, node.right)
    return None


LATEX_OPERATORS = {"+": " + ", "-": " - ", "*": " \\cdot "}


def _latex_binary(operator: str, left: str, right: str) -> str:
    if operator == "**":
        return f"{{{left}}}^{{{right}}}"
    return f"{left}{LATEX_OPERATORS[operator]}{right}"


def precedence(node: Expression) -> int:
    """Binding strength of a node as rendered (higher binds tighter)."""
    if isinstance(node, Binary):
        return PRECEDENCE[node.operator]
    if isinstance(node, Unary):
        return UNARY
    if isinstance(node, Number) and math.copysign(1.0, node.value) < 0:
        return UNARY
    return ATOM


def latex_name(name: str) -> str:
    """LaTeX for an identifier: Greek letters, ``x_1``/``x1`` subscripts."""
    base, _, subscript = name.partition("_")
    if not subscript:
        match = re.fullmatch(r"([A-Za-z]+)(\d+)", name)
        base, subscript = (match.group(1), match.group(2)) if match else (name, "")
    base = f"\\{base}" if base in GREEK else base if len(base) == 1 else f"\\mathrm{{{base}}}"
    return f"{base}_{{{subscript}}}" if subscript else base


def to_str(
    expression: Expression,
    *,
    latex: bool = False,
    number_format: str = "",
    parameter_style: ParameterStyle = "call",
) -> str:
    """Render an expression as parseable text or as LaTeX.

    Args:
        expression: The expression tree.
        latex: Render LaTeX instead of text.
        number_format: ``format`` spec for numbers (e.g. ``".4g"``); the
            default ``""`` uses ``repr``, which round-trips exactly.
        parameter_style: ``"call"`` renders ``param("a", 1.5)`` (parseable);
            ``"name"`` renders ``a``; ``"value"`` renders bound values as numbers.

    Returns:
        The rendered text.
    """
    renderer = _Renderer(latex, number_format, parameter_style)
    if parameter_style == "value":
        return renderer.render(_values_inlined(expression))
    return renderer.render(expression)


def _values_inlined(expression: Expression) -> Expression:
    def inline(node: Expression) -> Expression:
        if isinstance(node, Parameter) and node.value is not None:
            return Number(node.value)
        return node

    return map_postorder(expression, inline)


def render(expression: Expression, latex: bool = False) -> str:
    """Render an expression; shorthand for :func:`to_str`.

    Args:
        expression: The expression tree.
        latex: Render LaTeX instead of text.

    Returns:
        The rendered text.
    """
    return to_str(expression, latex=latex)


def _tree_label(node: Expression, number_format: str) -> str:
    if isinstance(node, Number):
        return f"Number({format(node.value, number_format) if number_format else node.value!r})"
    if isinstance(node, Symbol | Parameter):
        value = "" if node.value is None or isinstance(node, Symbol) else f"={node.value!r}"
        return f"{type(node).__name__}({node.name}{value})"
    if isinstance(node, Binary | Unary):
        return f"{type(node).__name__}({node.operator})"
    if isinstance(node, Function):
        return f"Function({node.name})"
    if isinstance(node, GroupedParameter):
        return f"GroupedParameter({node.family})"
    if isinstance(node, Indexed | Reduction):
        return f"{type(node).__name__}[{', '.join(index.name for index in node.indices)}]"
    return type(node).__name__


def to_tree(expression: Expression, *, number_format: str = "") -> str:
    """Render a compact preorder tree, one node per line, indented by depth.

    Args:
        expression: The expression tree.
        number_format: ``format`` spec for numbers.

    Returns:
        A multi-line string.
    """
    lines: list[str] = []
    stack: list[tuple[Expression, int]] = [(expression, 0)]
    while stack:
        node, depth = stack.pop()
        lines.append("  " * depth + _tree_label(node, number_format))
        stack.extend((child, depth + 1) for child in reversed(node.operands))
    return "\n".join(lines)

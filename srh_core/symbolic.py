"""Engine expressions as SymPy expressions, built node by node (never from text).

:func:`to_sympy` walks the engine tree and builds the SymPy object of each
node through one table (default deny: a node type or function not in it
raises :class:`SymbolicExportError` naming it), so formula text is never
handed to ``sympify``. Bound parameters become their numbers; unbound ones
become SymPy symbols of their name. SymPy is imported on call.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import srh_engine as engine
from srh_core.errors import SRHarnessError

__all__ = ["SymbolicExportError", "to_sympy"]


class SymbolicExportError(SRHarnessError, ValueError):
    """An engine expression has a node SymPy has no counterpart for."""


def _functions(sp: Any) -> dict[str, Callable[..., Any]]:
    """Engine function name -> builder of the SymPy expression."""
    return {
        "sin": sp.sin, "cos": sp.cos, "tan": sp.tan, "tanh": sp.tanh, "sinh": sp.sinh,
        "cosh": sp.cosh, "arcsin": sp.asin, "arccos": sp.acos, "arctan": sp.atan,
        "exp": sp.exp, "log": sp.log, "log10": lambda x: sp.log(x, 10), "sqrt": sp.sqrt,
        "abs": sp.Abs, "sigmoid": lambda x: 1 / (1 + sp.exp(-x)), "sign": sp.sign,
        "sec": sp.sec, "sech": sp.sech, "csc": sp.csc, "cot": sp.cot, "inv": lambda x: 1 / x,
        "arctan2": sp.atan2, "hypot": lambda y, x: sp.sqrt(y**2 + x**2),
    }


def _binary(sp: Any, operator: str, left: Any, right: Any) -> Any:
    if operator == "+":
        return left + right
    if operator == "-":
        return left - right
    if operator == "*":
        return left * right
    if operator == "/":
        return left / right
    return sp.Pow(left, right)


def _number(sp: Any, value: float) -> Any:
    if value == math.pi:
        return sp.pi
    if value == math.e:
        return sp.E
    return sp.Integer(value) if isinstance(value, int) else sp.Float(value)


class _Builder:
    """One SymPy build: the node-type table and the symbols made so far."""

    def __init__(self, symbols: Mapping[str, Any] | None) -> None:
        import sympy as sp

        self.sp = sp
        self.functions = _functions(sp)
        self.symbols = dict(symbols or {})
        self.handlers: dict[type, Callable[[Any], Any]] = {
            engine.Number: lambda node: _number(sp, node.value),
            engine.Symbol: self.symbol,
            engine.Parameter: lambda node: (sp.Symbol(node.name, real=True)
                                            if node.value is None else sp.Float(node.value)),
            engine.Binary: lambda node: _binary(sp, node.operator, self.build(node.left),
                                                self.build(node.right)),
            engine.Unary: lambda node: -self.build(node.operand),
            engine.Function: self.function,
        }

    def build(self, node: engine.Expression) -> Any:
        handler = self.handlers.get(type(node))
        if handler is None:
            raise SymbolicExportError(f"SymPy export does not support "
                                      f"{type(node).__name__} nodes.")
        return handler(node)

    def symbol(self, node: engine.Symbol) -> Any:
        return self.symbols.setdefault(node.name, self.sp.Symbol(node.name, real=True))

    def function(self, node: engine.Function) -> Any:
        builder = self.functions.get(node.name)
        if builder is None:
            raise SymbolicExportError(f"SymPy export does not support the function "
                                      f"{node.name!r}.")
        return builder(*[self.build(argument) for argument in node.arguments])


def to_sympy(expression: engine.Expression, *, symbols: Mapping[str, Any] | None = None) -> Any:
    """Build the SymPy expression of an engine expression.

    Args:
        expression: An engine expression (parse formula text with ``srh_engine.parse``).
        symbols: SymPy symbols to use by variable name; others are created
            (real-valued).

    Returns:
        A ``sympy.Expr``.

    Raises:
        SymbolicExportError: The expression holds a node or function SymPy cannot
            represent (grouped parameters, graph and delay nodes).
    """
    return _Builder(symbols).build(expression)

"""Convenience constructors: ``param``, ``grouped_param``, ``function``, ``sin``...

These only build nodes; nothing is evaluated.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .nodes import Expression, Function, GroupedParameter, Parameter, as_expression

__all__ = [
    "abs",
    "arccos",
    "arcsin",
    "arctan",
    "cos",
    "cosh",
    "cot",
    "csc",
    "exp",
    "function",
    "grouped_param",
    "inv",
    "log",
    "log10",
    "param",
    "sec",
    "sech",
    "sigmoid",
    "sign",
    "sin",
    "sinh",
    "sqrt",
    "tan",
    "tanh",
]


def param(name: str, value: float | None = None) -> Parameter:
    """Create a named scalar parameter.

    Args:
        name: Parameter name; every occurrence with this name shares one value.
        value: Optional initial (or fitted) value.

    Returns:
        The parameter node.
    """
    return Parameter(name, value)


def grouped_param(
    by: Any,
    *,
    name: str | None = None,
    value: Mapping[Any, float] | None = None,
    default: float | None = None,
) -> GroupedParameter:
    """Create a parameter with one fitted value per category of ``by``.

    Args:
        by: Expression (usually a Symbol) giving each sample's category label.
        name: Optional family name used as the key of fitted values.
        value: Optional initial values keyed by category.
        default: Value for categories absent from ``value``.

    Returns:
        The grouped parameter node.
    """
    return GroupedParameter(as_expression(by), name, value, default)


def function(name: str, *arguments: Any) -> Function:
    """Create a call of a supported function (aliases such as ``ln`` accepted).

    Args:
        name: Function name, e.g. ``"sin"`` or ``"arctan2"``.
        *arguments: Expressions or numbers.

    Returns:
        The function node.
    """
    return Function(name, tuple(as_expression(argument) for argument in arguments))


def _unary(name: str) -> Callable[[Any], Expression]:
    def build(argument: Any) -> Expression:
        return Function(name, (as_expression(argument),))

    build.__name__ = build.__qualname__ = name
    build.__doc__ = f"Build ``{name}(argument)``."
    return build


sin = _unary("sin")
cos = _unary("cos")
tan = _unary("tan")
tanh = _unary("tanh")
sinh = _unary("sinh")
cosh = _unary("cosh")
arcsin = _unary("arcsin")
arccos = _unary("arccos")
arctan = _unary("arctan")
exp = _unary("exp")
log = _unary("log")
log10 = _unary("log10")
sqrt = _unary("sqrt")
abs = _unary("abs")  # shadows builtins.abs in this module only; not used here
sigmoid = _unary("sigmoid")
sign = _unary("sign")
sec = _unary("sec")
sech = _unary("sech")
csc = _unary("csc")
cot = _unary("cot")
inv = _unary("inv")

"""Convenience constructors: ``param``, ``grouped_param``, ``function``, ``sin``...

These only build nodes; nothing is evaluated.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .desugaring import desugar, split_relation_factor
from .graph_nodes import Aggregate, Delay, Gather, Index, Reduction, RelationLift
from .nodes import Expression, Function, GroupedParameter, Parameter, as_expression

__all__ = [
    "abs",
    "aggr",
    "delay",
    "gather",
    "reduction",
    "sour",
    "targ",
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


# ------------------------------------------------------------- structured syntax
def reduction(indices: Index | str | tuple[Index | str, ...], operand: Any,
              relation: Any = None) -> Reduction:
    """Create an indexed sum ``sum[indices](relation, operand)``.

    Args:
        indices: The summed indices (``Index``, names, or a tuple of them).
        operand: The summand.
        relation: Optional relation expression binding the indices, e.g. ``A[i, j]``.

    Returns:
        The reduction node.
    """
    return Reduction(indices if isinstance(indices, tuple) else (indices,),  # type: ignore[arg-type]
                     as_expression(operand),
                     None if relation is None else as_expression(relation))


def gather(relation: Any, operand: Any) -> Gather:
    """Collect ``operand`` at the rows of a relation: an ``(..., E)`` entry field.

    Args:
        relation: Indexed relation (``A[i, j]``) or relation algebra.
        operand: Expression of the relation's indices.

    Returns:
        The gather node.
    """
    return Gather(as_expression(relation), as_expression(operand))


def aggr(relation: Any, operand: Any = None) -> Expression:
    """Build ``aggr(relation, operand)`` and lower it to an indexed sum.

    Args:
        relation: The relation symbol, or a product holding it first when
            ``operand`` is omitted (``aggr(A * sour(x))``).
        operand: Message summed over each target's incoming rows.

    Returns:
        The equivalent ``sum[j](A[i, j], ...)``.
    """
    if operand is None:
        relation, operand = split_relation_factor(as_expression(relation))
    return desugar(Aggregate(as_expression(relation), as_expression(operand)))


def _lift(role: str, arguments: tuple[Any, ...]) -> RelationLift:
    if len(arguments) not in (1, 2):
        name = "targ" if role == "target" else "sour"
        raise TypeError(f"{name}() takes (value) or (relation, value), got {len(arguments)} "
                        "arguments")
    if len(arguments) == 1:
        return RelationLift(role, as_expression(arguments[0]))  # type: ignore[arg-type]
    return RelationLift(role, as_expression(arguments[1]),  # type: ignore[arg-type]
                        as_expression(arguments[0]))


def sour(*arguments: Any) -> RelationLift:
    """``sour(x)`` or ``sour(A, x)``: node values at the source endpoint, inside ``aggr``."""
    return _lift("source", arguments)


def targ(*arguments: Any) -> RelationLift:
    """``targ(x)`` or ``targ(A, x)``: node values at the target endpoint, inside ``aggr``."""
    return _lift("target", arguments)


def delay(value: Any, delta: Any) -> Delay:
    """``delay(value, delta)``: ``value`` read at ``t - delta``.

    Args:
        value: Time-dependent expression to sample from the past.
        delta: Scalar or per-sample delay.

    Returns:
        The delay node.
    """
    return Delay(as_expression(value), as_expression(delta))

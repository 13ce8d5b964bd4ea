"""Dimensional consistency of an expression, given the dimensions of its variables.

The rules (the same as PySR's dimensional constraints):

* a variable has the dimension it is given; a variable given none is a
  *wildcard* (any dimension);
* a fitted constant (``Parameter``, a grouped parameter) or a literal
  number is a wildcard: it may carry whatever dimension makes the formula
  consistent, so ``c*x + y`` is consistent for any ``x`` and ``y``; a
  product or quotient with a wildcard factor is a wildcard;
* ``a + b``, ``a - b``, ``hypot(a, b)``, ``arctan2(a, b)``: both sides have
  the same dimension unless one of them is a wildcard (it takes the other's);
* ``a ** p``: ``p`` dimensionless; a dimensioned ``a`` needs a literal,
  rational ``p`` (``x**2``, ``x**0.5``, ``x**(-1/3)``), not a fitted or
  irrational one;
* ``sqrt`` halves the dimension, ``inv`` negates it, ``abs`` and ``-`` keep
  it, ``sign`` is dimensionless; every other function (exp, log, sin, tanh,
  ...) needs a dimensionless (or wildcard) argument and is dimensionless;
* a formula whose dimension is known must have the target's, when given.

A node the rules do not cover (graph relations, delays) makes the result a
wildcard: nothing is claimed about it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from .nodes import Binary, Expression, Function, GroupedParameter, Number, Parameter, Symbol, Unary
from .units import DIMENSIONLESS, Dimension, parse_units

__all__ = ["DimensionCheck", "check_dimensions"]

MAX_EXPONENT_DENOMINATOR = 12
"""A literal exponent is rational when it is within ``EXPONENT_TOLERANCE`` of a fraction
with at most this denominator."""
EXPONENT_TOLERANCE = 1e-9

_KEEP = frozenset({"abs"})
_SAME_ARGUMENTS = frozenset({"hypot", "arctan2"})


@dataclass(frozen=True, slots=True)
class DimensionCheck:
    """Whether a formula is dimensionally consistent.

    Attributes:
        consistent: False when a rule of the module docstring is broken.
        dimension: The formula's dimension; None when it is a wildcard (a constant
            may give it any dimension) or when the formula is inconsistent.
        reason: Why it is inconsistent (the first broken rule, naming the subformula),
            or "" when consistent.
    """

    consistent: bool
    dimension: Dimension | None
    reason: str = ""

    def to_dict(self, target: Dimension | None = None) -> dict[str, Any]:
        """``{consistent, dimension, target_dimension, reason}`` with dimensions as text."""
        return {"consistent": self.consistent,
                "dimension": None if self.dimension is None else str(self.dimension),
                "target_dimension": None if target is None else str(target),
                "reason": self.reason}


class _Inconsistent(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


Dim = Dimension | None  # None: a wildcard


def check_dimensions(expression: Expression, dimensions: Mapping[str, Any],
                     target: Any = None) -> DimensionCheck:
    """Check ``expression`` against the dimensions of its variables (and of the target).

    Args:
        expression: An engine expression.
        dimensions: Variable name -> :class:`Dimension` or unit text; variables not
            named are wildcards.
        target: The target's dimension or unit text, or None to check only the formula.

    Returns:
        The check: consistent or not, the formula's dimension and the reason.

    Raises:
        UnitError: Unit text in ``dimensions`` or ``target`` that does not parse.
    """
    known = {name: parse_units(value) for name, value in dimensions.items()}
    target_dimension = None if target is None else parse_units(target)
    try:
        dimension = _dimension(expression, known)
    except _Inconsistent as error:
        return DimensionCheck(False, None, error.reason)
    if dimension is not None and target_dimension is not None and dimension != target_dimension:
        return DimensionCheck(False, dimension, f"the formula is in {dimension}, the target "
                                                f"in {target_dimension}")
    return DimensionCheck(True, dimension)


def _text(node: Expression) -> str:
    from .rendering import to_str

    text = to_str(node)
    return text if len(text) <= 60 else text[:57] + "..."


def _dimension(node: Expression, known: Mapping[str, Dimension]) -> Dim:
    if isinstance(node, Symbol):
        return known.get(node.name)
    if isinstance(node, Number | Parameter | GroupedParameter):
        return None
    if isinstance(node, Unary):
        return _dimension(node.operand, known)
    if isinstance(node, Binary):
        return _binary(node, known)
    if isinstance(node, Function):
        return _function(node, known)
    return None  # a structure the rules do not cover: no claim


def _binary(node: Binary, known: Mapping[str, Dimension]) -> Dim:
    if node.operator == "**":
        return _power(node, known)
    left, right = _dimension(node.left, known), _dimension(node.right, known)
    if node.operator in ("+", "-"):
        return _same(node, left, right)
    if left is None or right is None:
        return None
    return left * right if node.operator == "*" else left / right


def _same(node: Expression, left: Dim, right: Dim) -> Dim:
    if left is not None and right is not None and left != right:
        operands = node.operands
        raise _Inconsistent(f"{_text(node)} combines {_text(operands[0])} in {left} with "
                            f"{_text(operands[1])} in {right}")
    return left if left is not None else right


def _power(node: Binary, known: Mapping[str, Dimension]) -> Dim:
    base, exponent = _dimension(node.left, known), _dimension(node.right, known)
    if exponent is not None and not exponent.dimensionless:
        raise _Inconsistent(f"the exponent of {_text(node)} is in {exponent}")
    if base is None or base.dimensionless:
        return base
    power = _rational(node.right)
    if power is None:
        raise _Inconsistent(f"{_text(node)} raises {_text(node.left)} in {base} to a power "
                            "that is not a rational number")
    return base ** power


def _rational(node: Expression) -> Fraction | None:
    """A literal exponent (``2``, ``0.5``, ``-1/3``, ``-(2)``) as a fraction, else None."""
    from .transform import fold_constants

    folded = fold_constants(node)
    if isinstance(folded, Unary) and isinstance(folded.operand, Number):
        value = -folded.operand.value
    elif isinstance(folded, Number):
        value = folded.value
    else:
        return None
    fraction = Fraction(value).limit_denominator(MAX_EXPONENT_DENOMINATOR)
    return fraction if abs(float(fraction) - value) <= EXPONENT_TOLERANCE else None


def _function(node: Function, known: Mapping[str, Dimension]) -> Dim:
    arguments = [_dimension(argument, known) for argument in node.arguments]
    if node.name in _SAME_ARGUMENTS:
        same = _same(node, arguments[0], arguments[1])
        return DIMENSIONLESS if node.name == "arctan2" else same
    argument = arguments[0]
    if node.name in _KEEP:
        return argument
    if node.name == "sqrt":
        return None if argument is None else argument ** Fraction(1, 2)
    if node.name == "inv":
        return None if argument is None else argument ** -1
    if node.name == "sign":
        return DIMENSIONLESS
    if argument is not None and not argument.dimensionless:
        raise _Inconsistent(f"{node.name}() needs a dimensionless argument; "
                            f"{_text(node.arguments[0])} is in {argument}")
    return DIMENSIONLESS

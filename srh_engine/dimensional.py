"""Dimensional consistency of an expression, given the dimensions of its variables.

Each subformula gets a *nominal* dimension (what it has if its constants are
pure numbers) and a flag, *free*, set when a constant could change it. The
rules (those of PySR's dimensional constraints, where constants are
wildcards):

* a variable has the dimension it is given (fixed); a fitted constant
  (``Parameter``, a grouped parameter), a literal number, or a variable
  given no units is dimensionless but free: it may carry whatever dimension
  makes the formula consistent, so ``c*x + y`` is consistent for any ``x``
  and ``y``; a product, quotient or power of a free factor is free;
* ``a + b``, ``a - b``, ``hypot(a, b)``, ``arctan2(a, b)``: both sides have
  the same dimension, unless a free side can take the other's (the sum is
  then fixed when the other side is);
* ``a ** p``: ``p`` dimensionless (or free); a fixed, dimensioned ``a``
  needs a literal, rational ``p`` (``x**2``, ``x**0.5``, ``x**(-1/3)``), not
  a fitted or irrational one;
* ``sqrt`` halves the dimension, ``inv`` negates it, ``abs`` and ``-`` keep
  it, ``sign`` is dimensionless; every other function (exp, log, sin, tanh,
  ...) needs a dimensionless (or free) argument and is dimensionless;
* against a target: the nominal dimension must be the target's, unless the
  formula is free (its constants then carry the difference, which the check
  reports as ``constant_units``).

A node the rules do not cover (graph relations, delays) is treated as a
free constant: nothing is claimed about it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from .nodes import Binary, Expression, Function, Number, Symbol, Unary
from .rendering import to_str
from .transform import fold_constants
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
        dimension: The formula's nominal dimension (its constants taken as pure numbers);
            None when it is inconsistent inside.
        free: Whether a constant of the formula could give it another dimension.
        constant_units: The dimension its constants must carry to give the target's
            (a free formula whose nominal dimension is not the target's), else None.
        reason: Why it is inconsistent (the first broken rule, naming the subformula),
            or "" when consistent.
    """

    consistent: bool
    dimension: Dimension | None
    free: bool = False
    constant_units: Dimension | None = None
    reason: str = ""

    def to_dict(self, target: Dimension | None = None) -> dict[str, Any]:
        """``{consistent, dimension, target_dimension, reason, constant_units}``, as text."""
        return {"consistent": self.consistent,
                "dimension": None if self.dimension is None else str(self.dimension),
                "target_dimension": None if target is None else str(target),
                "reason": self.reason,
                "constant_units": None if self.constant_units is None
                else str(self.constant_units)}


class _Inconsistent(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


Dim = tuple[Dimension, bool]  # (nominal dimension, free)
FREE: Dim = (DIMENSIONLESS, True)


def check_dimensions(expression: Expression, dimensions: Mapping[str, Any],
                     target: Any = None) -> DimensionCheck:
    """Check ``expression`` against the dimensions of its variables (and of the target).

    Args:
        expression: An engine expression.
        dimensions: Variable name -> :class:`Dimension` or unit text; variables not
            named are free, like constants.
        target: The target's dimension or unit text, or None to check only the formula.

    Returns:
        The check: consistent or not, the formula's dimension and the reason.

    Raises:
        UnitError: Unit text in ``dimensions`` or ``target`` that does not parse.
    """
    known = {name: parse_units(value) for name, value in dimensions.items()}
    wanted = None if target is None else parse_units(target)
    try:
        dimension, free = _dimension(expression, known)
    except _Inconsistent as error:
        return DimensionCheck(False, None, reason=error.reason)
    if wanted is None or dimension == wanted:
        return DimensionCheck(True, dimension, free)
    if free:
        return DimensionCheck(True, dimension, free, constant_units=wanted / dimension)
    return DimensionCheck(False, dimension, free,
                          reason=f"the formula is in {dimension}, the target in {wanted}")


def _text(node: Expression) -> str:
    text = to_str(node)
    return text if len(text) <= 60 else text[:57] + "..."


def _dimension(node: Expression, known: Mapping[str, Dimension]) -> Dim:
    if isinstance(node, Symbol):
        return (known[node.name], False) if node.name in known else FREE
    if isinstance(node, Unary):
        return _dimension(node.operand, known)
    if isinstance(node, Binary):
        return _binary(node, known)
    if isinstance(node, Function):
        return _function(node, known)
    return FREE  # numbers, parameters, and structures the rules do not cover


def _binary(node: Binary, known: Mapping[str, Dimension]) -> Dim:
    if node.operator == "**":
        return _power(node, known)
    (left, left_free), (right, right_free) = (_dimension(node.left, known),
                                              _dimension(node.right, known))
    if node.operator in ("+", "-"):
        return _same(node, (left, left_free), (right, right_free))
    product = left * right if node.operator == "*" else left / right
    return product, left_free or right_free


def _same(node: Expression, left: Dim, right: Dim) -> Dim:
    if left[0] == right[0]:
        return left[0], left[1] and right[1]
    if left[1]:  # a free side takes the other's dimension
        return right
    if right[1]:
        return left
    operands = node.operands
    raise _Inconsistent(f"{_text(node)} combines {_text(operands[0])} in {left[0]} with "
                        f"{_text(operands[1])} in {right[0]}")


def _power(node: Binary, known: Mapping[str, Dimension]) -> Dim:
    (base, base_free), (exponent, exponent_free) = (_dimension(node.left, known),
                                                    _dimension(node.right, known))
    if not exponent.dimensionless and not exponent_free:
        raise _Inconsistent(f"the exponent of {_text(node)} is in {exponent}")
    power = _rational(node.right)
    if power is not None:
        return base ** power, base_free
    if base.dimensionless or base_free:  # a free base can be made dimensionless
        return DIMENSIONLESS, base_free
    raise _Inconsistent(f"{_text(node)} raises {_text(node.left)} in {base} to a power "
                        "that is not a literal rational number")
def _rational(node: Expression) -> Fraction | None:
    """A literal exponent (``2``, ``0.5``, ``-1/3``, ``-(2)``) as a fraction, else None."""
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
        return (DIMENSIONLESS, False) if node.name == "arctan2" else same
    argument, free = arguments[0]
    if node.name in _KEEP:
        return argument, free
    if node.name == "sqrt":
        return argument ** Fraction(1, 2), free
    if node.name == "inv":
        return argument ** -1, free
    if node.name == "sign":
        return DIMENSIONLESS, False
    if not argument.dimensionless and not free:
        raise _Inconsistent(f"{node.name}() needs a dimensionless argument; "
                            f"{_text(node.arguments[0])} is in {argument}")
    return DIMENSIONLESS, False

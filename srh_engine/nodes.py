"""Expression node classes.

Every node is a frozen, slotted dataclass deriving from :class:`Expression`.
Children live in fields (``left``/``right``/``operand``) or tuples
(``arguments``), so rebuilding a node from its fields gives an equal node and
trees hash and deduplicate. Python operators on expressions build nodes
(``x + 1``, ``2 * x``, ``-x``, ``x ** 2``); ``==`` stays structural equality.

The convenience methods (``evaluate``, ``fit``, ``to_str``...) live in
:mod:`.expression_methods`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from numbers import Integral, Real
from typing import Any

from .errors import ExpressionError
from .expression_methods import ExpressionMethods
from .functions import FUNCTIONS, resolve_function_name

__all__ = [
    "BINARY_OPERATORS",
    "Binary",
    "Expression",
    "Function",
    "GroupedParameter",
    "Number",
    "Parameter",
    "Symbol",
    "UNARY_OPERATORS",
    "Unary",
    "Variable",
    "as_expression",
    "integral_number",
    "map_postorder",
]

BINARY_OPERATORS: frozenset[str] = frozenset({"+", "-", "*", "/", "**"})
UNARY_OPERATORS: frozenset[str] = frozenset({"-"})
INTEGRAL_LIMIT = 2.0**53
"""Integral floats up to this magnitude become ints (every int up to it is a float exactly)."""


def _real_number(value: Any, node_type: str, field_name: str) -> int | float:
    """Normalise a finite real (NumPy scalars included) to a Python int or float."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ExpressionError(
            f"{node_type}.{field_name} must be a finite int or float, got {value!r}",
            node_type=node_type, field=field_name)
    number = int(value) if isinstance(value, Integral) else float(value)
    if isinstance(number, float) and not math.isfinite(number):
        raise ExpressionError(
            f"{node_type}.{field_name} must be finite, got {number!r}",
            node_type=node_type, field=field_name)
    return number


def _check_name(name: Any, node_type: str) -> None:
    if not isinstance(name, str) or not name.isidentifier():
        raise ExpressionError(
            f"{node_type}.name must be a Python identifier such as 'x1', got {name!r}",
            node_type=node_type, field="name")


def _check_child(child: Any, node_type: str, field_name: str) -> None:
    if not isinstance(child, Expression):
        raise ExpressionError(
            f"{node_type}.{field_name} must be an Expression, got {type(child).__name__}",
            node_type=node_type, field=field_name)


def as_expression(value: Any) -> Expression:
    """Return ``value`` as an expression: numbers become :class:`Number` nodes.

    Args:
        value: An Expression, or a finite int/float (NumPy scalars included).

    Returns:
        The expression.

    Raises:
        ExpressionError: For anything else.
    """
    if isinstance(value, Expression):
        return value
    return Number(_real_number(value, "Number", "value"))


class Expression(ExpressionMethods):
    """Base class of every expression node.

    Besides the operators and traversal defined here, every node has the
    convenience methods of :class:`~srh_engine.expression_methods.ExpressionMethods`
    (``evaluate``, ``fit``, ``to_str``, ``fold_constants``, ...).
    """

    __slots__ = ()
    # Make NumPy defer to our reflected operators instead of building object
    # arrays of nodes for ``ndarray + expression``.
    __array_ufunc__ = None

    @property
    def operands(self) -> tuple[Expression, ...]:
        """The direct child nodes, in expression order."""
        return ()

    def with_operands(self, operands: tuple[Expression, ...]) -> Expression:
        """Return a node of the same kind and fields but with new children."""
        return self

    # -- operators build nodes -------------------------------------------
    def __add__(self, other: Any) -> Expression:
        return _binary("+", self, other)

    def __radd__(self, other: Any) -> Expression:
        return _binary("+", other, self)

    def __sub__(self, other: Any) -> Expression:
        return _binary("-", self, other)

    def __rsub__(self, other: Any) -> Expression:
        return _binary("-", other, self)

    def __mul__(self, other: Any) -> Expression:
        return _binary("*", self, other)

    def __rmul__(self, other: Any) -> Expression:
        return _binary("*", other, self)

    def __truediv__(self, other: Any) -> Expression:
        return _binary("/", self, other)

    def __rtruediv__(self, other: Any) -> Expression:
        return _binary("/", other, self)

    def __pow__(self, other: Any) -> Expression:
        return _binary("**", self, other)

    def __rpow__(self, other: Any) -> Expression:
        return _binary("**", other, self)

    def __neg__(self) -> Expression:
        return Unary("-", self)

    def __pos__(self) -> Expression:
        return self

    # -- traversal ---------------------------------------------------------
    def iter_preorder(self) -> Iterator[Expression]:
        """Yield this node, then its descendants, depth first, left to right."""
        stack: list[Expression] = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.operands))

    def iter_postorder(self) -> Iterator[Expression]:
        """Yield the descendants (left to right, children first), then this node."""
        stack: list[tuple[Expression, bool]] = [(self, False)]
        while stack:
            node, expanded = stack.pop()
            if expanded or not node.operands:
                yield node
                continue
            stack.append((node, True))
            stack.extend((child, False) for child in reversed(node.operands))


def _binary(operator: str, left: Any, right: Any) -> Expression:
    try:
        return Binary(operator, as_expression(left), as_expression(right))
    except ExpressionError:
        return NotImplemented


@dataclass(frozen=True, slots=True)
class Number(Expression):
    """A numeric literal: a finite Python ``int`` or ``float``.

    ``pi`` and ``e`` are Numbers holding ``math.pi`` / ``math.e`` exactly;
    they render back as ``pi`` and ``e``.
    """

    value: int | float

    def __post_init__(self) -> None:
        object.__setattr__(self, "value", _real_number(self.value, "Number", "value"))


def integral_number(value: float, limit: float = INTEGRAL_LIMIT) -> int | float:
    """``value`` as an int when it is exactly integral (``2.0`` -> ``2``), else unchanged.

    Args:
        value: A number of a tree (``-0.0`` becomes ``0``; ``1.5``, ``0.9999999`` stay).
        limit: The largest magnitude made an int (the printer uses a smaller one for
            exponents).

    Returns:
        The int of the same value, or ``value`` itself.
    """
    if isinstance(value, float) and value.is_integer() and abs(value) <= limit:
        return int(value)
    return value


@dataclass(frozen=True, slots=True)
class Symbol(Expression):
    """A data variable, looked up by name at evaluation time.

    Attributes:
        name: Identifier looked up in the ``values`` mapping.
        value: Optional bound data used when ``values`` lacks ``name``. It does
            not take part in equality or hashing (it may be an array).
    """

    name: str
    value: Any = field(default=None, compare=False)

    def __post_init__(self) -> None:
        _check_name(self.name, "Symbol")


Variable = Symbol
"""Alias of :class:`Symbol`."""


@dataclass(frozen=True, slots=True)
class Parameter(Expression):
    """A named scalar fitted by :func:`srh_engine.fit`.

    Attributes:
        name: Parameter name; occurrences with the same name share one value.
        value: Bound (fitted or initial) value, or None when unbound.
    """

    name: str
    value: float | None = None

    def __post_init__(self) -> None:
        _check_name(self.name, "Parameter")
        if self.value is not None:
            object.__setattr__(self, "value", float(_real_number(self.value, "Parameter",
                                                                  "value")))


@dataclass(frozen=True, slots=True)
class Binary(Expression):
    """``left <operator> right`` with operator one of ``+ - * / **``."""

    operator: str
    left: Expression
    right: Expression

    def __post_init__(self) -> None:
        if self.operator not in BINARY_OPERATORS:
            raise ExpressionError(
                f"Binary.operator must be one of {sorted(BINARY_OPERATORS)}, "
                f"got {self.operator!r}", node_type="Binary", field="operator")
        _check_child(self.left, "Binary", "left")
        _check_child(self.right, "Binary", "right")

    @property
    def operands(self) -> tuple[Expression, ...]:
        return (self.left, self.right)

    def with_operands(self, operands: tuple[Expression, ...]) -> Expression:
        return Binary(self.operator, operands[0], operands[1])


@dataclass(frozen=True, slots=True)
class Unary(Expression):
    """Unary minus: ``-operand`` (the only unary operator; unary plus is dropped)."""

    operator: str
    operand: Expression

    def __post_init__(self) -> None:
        if self.operator not in UNARY_OPERATORS:
            raise ExpressionError(
                f"Unary.operator must be '-', got {self.operator!r}",
                node_type="Unary", field="operator")
        _check_child(self.operand, "Unary", "operand")

    @property
    def operands(self) -> tuple[Expression, ...]:
        return (self.operand,)

    def with_operands(self, operands: tuple[Expression, ...]) -> Expression:
        return Unary(self.operator, operands[0])


@dataclass(frozen=True, slots=True)
class Function(Expression):
    """A call of a supported function; aliases (``ln``, ``asin``) are normalised."""

    name: str
    arguments: tuple[Expression, ...]

    def __post_init__(self) -> None:
        canonical = resolve_function_name(self.name) if isinstance(self.name, str) else None
        if canonical is None:
            raise ExpressionError(
                f"Function.name must be one of {sorted(FUNCTIONS)}, got {self.name!r}",
                node_type="Function", field="name")
        arguments = tuple(self.arguments)
        if len(arguments) != FUNCTIONS[canonical].arity:
            raise ExpressionError(
                f"{canonical}() takes {FUNCTIONS[canonical].arity} argument(s), "
                f"got {len(arguments)}", node_type="Function", field="arguments")
        for argument in arguments:
            _check_child(argument, "Function", "arguments")
        object.__setattr__(self, "name", canonical)
        object.__setattr__(self, "arguments", arguments)

    @property
    def operands(self) -> tuple[Expression, ...]:
        return self.arguments

    def with_operands(self, operands: tuple[Expression, ...]) -> Expression:
        return Function(self.name, tuple(operands))


GroupValues = tuple[tuple[Any, float], ...]


def _category_key(category: Any) -> Any:
    return category.item() if hasattr(category, "item") else category


def _group_values(value: Any) -> GroupValues | None:
    """Normalise a category -> value mapping (or pairs) to sorted hashable pairs."""
    if value is None:
        return None
    pairs = value.items() if isinstance(value, Mapping) else value
    normalised = {_category_key(key): float(_real_number(number, "GroupedParameter", "value"))
                  for key, number in pairs}
    return tuple(sorted(normalised.items(), key=lambda item: (type(item[0]).__name__, item[0])))


@dataclass(frozen=True, slots=True)
class GroupedParameter(Expression):
    """A parameter with one fitted value per category of a label array.

    Attributes:
        by: Expression giving the category label of each sample (usually a
            Symbol; labels may be strings or numbers).
        name: Family name (the key in fitted parameter mappings); when None the
            family is called ``grouped[<by>]``.
        value: Bound values as sorted ``(category, value)`` pairs (a mapping
            is accepted and normalised, so the node stays hashable).
        default: Value for categories absent from ``value``.
    """

    by: Expression
    name: str | None = None
    value: GroupValues | None = None
    default: float | None = None

    def __post_init__(self) -> None:
        _check_child(self.by, "GroupedParameter", "by")
        if self.name is not None:
            _check_name(self.name, "GroupedParameter")
        object.__setattr__(self, "value", _group_values(self.value))
        if self.default is not None:
            object.__setattr__(self, "default", float(_real_number(
                self.default, "GroupedParameter", "default")))

    @property
    def family(self) -> str:
        """The key of this parameter family in parameter mappings."""
        if self.name is not None:
            return self.name
        return f"grouped[{self.by.to_str()}]"

    @property
    def operands(self) -> tuple[Expression, ...]:
        return (self.by,)

    def with_operands(self, operands: tuple[Expression, ...]) -> Expression:
        return GroupedParameter(operands[0], self.name, self.value, self.default)


def map_postorder(expression: Expression, transform: Callable[[Expression], Expression],
                  ) -> Expression:
    """Rebuild a tree bottom-up, applying ``transform`` to every (rebuilt) node.

    Iterative, so it works on trees deeper than Python's recursion limit.
    A node whose children come back unchanged is passed on as the same object.

    Args:
        expression: The tree to rewrite.
        transform: Called on each node after its children were rewritten.

    Returns:
        The rewritten tree.
    """
    results: dict[int, Expression] = {}
    for node in expression.iter_postorder():
        if id(node) in results:
            continue
        children = node.operands
        rebuilt = node
        if children:
            new_children = tuple(results[id(child)] for child in children)
            if any(new is not old for new, old in zip(new_children, children, strict=True)):
                rebuilt = node.with_operands(new_children)
        results[id(node)] = transform(rebuilt)
    return results[id(expression)]

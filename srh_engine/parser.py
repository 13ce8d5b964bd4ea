"""Formula parser built on Python's ``ast`` module; nothing is ever executed.

The text is parsed by ``ast.parse`` (after the rewrites in :mod:`.source`)
and the syntax tree is walked through ONE table, :data:`HANDLERS`, mapping
each allowed ``ast`` node type to its handler. Anything not in the table is
rejected with a :class:`~srh_engine.errors.ParseError` naming the construct
(default deny, as in ``ast.literal_eval`` and simpleeval). Depth and size
limits are named constants checked before recursing; numeric literals and
constant powers are checked for magnitude before anything is computed.

Names: ``pi`` and ``e`` are the constants ``math.pi`` / ``math.e`` (as
:class:`Number` nodes), unless ``symbols`` maps them to something else, e.g.
``parse("e*x", symbols={"e": Symbol("e")})`` for a data column named ``e``.
The prefixes ``np.``, ``numpy.`` and ``math.`` are stripped from supported
functions and constants. ``param("a"[, value])`` and ``grouped_param(label,
name=..., value={...}, default=...)`` create parameters.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from numbers import Real
from typing import Any

from .desugaring import desugar
from .errors import ExpressionError, ParseError
from .evaluation import evaluate
from .functions import FUNCTION_ALIASES, FUNCTIONS, resolve_function_name
from .nodes import Binary, Expression, Function, Number, Symbol, Unary
from .parser_calls import PARAMETER_CALLS
from .parser_structure import (
    REDUCTION_NAME,
    STRUCTURE_CALLS,
    STRUCTURE_NAMES,
    visit_reduction,
    visit_subscript,
)
from .source import PreparedSource, parse_syntax, prepare_source

__all__ = [
    "CONSTANTS",
    "Equation",
    "HANDLERS",
    "MAX_CONSTANT_LOG10",
    "MAX_DEPTH",
    "MAX_INT_LITERAL_BITS",
    "MAX_LITERAL_MAGNITUDE",
    "MAX_NODES",
    "MODULE_PREFIXES",
    "parse",
    "parse_equation",
]

MAX_DEPTH = 200
"""Deepest accepted syntax tree; checked before recursing into a node."""

MAX_NODES = 2_000
"""Most syntax nodes visited for one formula."""

MAX_INT_LITERAL_BITS = 997
"""Integer literals must fit in this many bits (about 1e300)."""

MAX_LITERAL_MAGNITUDE = 1e300
"""Largest accepted absolute value of a numeric literal."""

SNIPPET_LENGTH = 60
"""Longest piece of the formula quoted in an error message."""

MAX_CONSTANT_LOG10 = 300
"""A constant power ``b**p`` is rejected when ``p*log10(|b|)`` exceeds this."""

CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e}
"""Named constants, parsed as :class:`Number` nodes."""

MODULE_PREFIXES = frozenset({"np", "numpy", "math"})
"""Module prefixes stripped from function and constant names."""

PARAMETER_BUILDERS = frozenset({"param", "grouped_param"})

ALLOWED = (
    "numbers, variable names, pi, e, + - * / ** (or ^), unary - and +, calls of "
    f"{', '.join(sorted(FUNCTIONS))} (aliases {', '.join(sorted(FUNCTION_ALIASES))}), "
    'param("name"[, value]) and grouped_param(label, name="k"); for graphs: x[i], A[i, j], '
    "sum[j](A[i, j], f), gather(A[i, j], f), aggr(A, sour(x) - targ(x)); delay(x, tau)")

BINARY_OPERATORS: dict[type[ast.operator], str] = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**",
}

REJECTED_NAMES: dict[type[ast.AST], str] = {
    ast.Slice: "slice", ast.Lambda: "lambda",
    ast.ListComp: "list comprehension", ast.SetComp: "set comprehension",
    ast.DictComp: "dict comprehension", ast.GeneratorExp: "generator expression",
    ast.BoolOp: "boolean operator", ast.Compare: "comparison",
    ast.Starred: "starred expression", ast.JoinedStr: "f-string",
    ast.FormattedValue: "f-string", ast.NamedExpr: "assignment expression (walrus)",
    ast.IfExp: "conditional expression", ast.List: "list", ast.Tuple: "tuple",
    ast.Set: "set", ast.Dict: "dict", ast.Await: "await", ast.Yield: "yield",
    ast.YieldFrom: "yield", ast.Attribute: "attribute access",
    ast.FloorDiv: "floor division '//'", ast.Mod: "modulo '%'",
    ast.MatMult: "matrix multiplication '@'", ast.LShift: "bit shift '<<'",
    ast.RShift: "bit shift '>>'", ast.BitOr: "bitwise operator '|'",
    ast.BitAnd: "bitwise operator '&'", ast.BitXor: "bitwise operator",
    ast.Not: "boolean operator 'not'", ast.Invert: "bitwise inversion '~'",
}


@dataclass(frozen=True, slots=True)
class Equation:
    """A parsed ``lhs = rhs``; ``lhs`` is None when the text had no ``=``.

    Attributes:
        lhs: Left-hand side expression, e.g. ``log(y)``, or None.
        rhs: Right-hand side expression.
    """

    lhs: Expression | None
    rhs: Expression


class _Parser:
    """Walks one syntax tree through :data:`HANDLERS`."""

    def __init__(self, prepared: PreparedSource, symbols: Mapping[str, Any]) -> None:
        self.prepared = prepared
        self.symbols = symbols
        self.nodes = 0

    def visit(self, node: ast.AST, depth: int) -> Expression:
        if depth > MAX_DEPTH:
            raise self.error(node, "nesting depth",
                             f"formula nested deeper than {MAX_DEPTH} levels")
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise self.error(node, "node count", f"formula has more than {MAX_NODES} nodes")
        handler = HANDLERS.get(type(node))
        if handler is None:
            raise self.rejected(node)
        return handler(self, node, depth + 1)

    def error(self, node: ast.AST | None, construct: str, detail: str,
              hint: str = "") -> ParseError:
        position = None
        if node is not None and hasattr(node, "lineno"):
            position = self.prepared.node_position(node.lineno, node.col_offset)
        where = f" at line {position[0]}, column {position[1]}" if position else ""
        return ParseError(f"{construct}: {detail}{where}{hint}", source=self.prepared.source,
                          position=position, construct=construct)

    def rejected(self, node: ast.AST, kind: ast.AST | None = None) -> ParseError:
        construct = REJECTED_NAMES.get(type(kind or node), type(kind or node).__name__.lower())
        return self.error(node, construct, f"`{self.snippet(node)}` is not allowed",
                          f"; allowed: {ALLOWED}")

    def snippet(self, node: ast.AST, limit: int = SNIPPET_LENGTH) -> str:
        """The source text of ``node``, shortened (never ``ast.unparse``: it recurses)."""
        text = ast.get_source_segment(self.prepared.text, node) or type(node).__name__
        text = " ".join(text.split())
        return text if len(text) <= limit else text[: limit - 3] + "..."


def _constant_value(expression: Expression) -> float | None:
    """Value of a closed numeric subtree, or None when it contains symbols."""
    if not all(isinstance(n, Number | Binary | Unary | Function)
               for n in expression.iter_preorder()):
        return None

    return evaluate(expression)


def _number(parser: _Parser, node: ast.AST, value: Any) -> Number:
    if isinstance(value, int) and value.bit_length() > MAX_INT_LITERAL_BITS:
        raise parser.error(node, "huge integer literal",
                           f"a literal with {value.bit_length()} bits",
                           f"; literals must be at most {MAX_LITERAL_MAGNITUDE:g} in magnitude")
    if not math.isfinite(value) or abs(value) > MAX_LITERAL_MAGNITUDE:
        raise parser.error(node, "huge numeric literal", f"`{value!r}` is out of range",
                           f"; literals must be finite and at most {MAX_LITERAL_MAGNITUDE:g} "
                           "in magnitude")
    return Number(value)


def _visit_expression(parser: _Parser, node: ast.Expression, depth: int) -> Expression:
    return parser.visit(node.body, depth)


def _visit_constant(parser: _Parser, node: ast.Constant, depth: int) -> Expression:
    value = node.value
    if isinstance(value, bool) or not isinstance(value, int | float):
        kind = {str: "string literal", bool: "boolean literal", complex: "complex literal",
                bytes: "bytes literal"}.get(type(value), f"{type(value).__name__} literal")
        raise parser.error(node, kind, f"`{parser.snippet(node)}` is not allowed",
                           f"; allowed: {ALLOWED}")
    return _number(parser, node, value)


def _check_power(parser: _Parser, node: ast.BinOp, left: Expression, right: Expression) -> None:
    base, exponent = _constant_value(left), _constant_value(right)
    if base is None or exponent is None or math.isnan(base) or math.isnan(exponent):
        return
    if abs(base) not in (0.0, 1.0) and exponent * math.log10(abs(base)) > MAX_CONSTANT_LOG10:
        raise parser.error(node, "huge constant power",
                           f"`{parser.snippet(node)}` would exceed 1e{MAX_CONSTANT_LOG10}",
                           f"; constant values must stay below {MAX_LITERAL_MAGNITUDE:g}")


def _visit_binop(parser: _Parser, node: ast.BinOp, depth: int) -> Expression:
    operator = BINARY_OPERATORS.get(type(node.op))
    if operator is None:
        raise parser.rejected(node, node.op)
    left = parser.visit(node.left, depth)
    right = parser.visit(node.right, depth)
    if operator == "**":
        _check_power(parser, node, left, right)
    return Binary(operator, left, right)


def _visit_unaryop(parser: _Parser, node: ast.UnaryOp, depth: int) -> Expression:
    if isinstance(node.op, ast.UAdd):
        return parser.visit(node.operand, depth)
    if not isinstance(node.op, ast.USub):
        raise parser.rejected(node, node.op)
    operand = parser.visit(node.operand, depth)
    # The negation of a number is a number: "-2", "-pi" and "-(-2)" are leaves.
    # Negation is exact, so this never changes a value.
    if isinstance(operand, Number):
        return Number(-operand.value)
    return Unary("-", operand)


def _symbol_value(parser: _Parser, node: ast.AST, name: str) -> Expression:
    value = parser.symbols[name]
    if isinstance(value, Expression):
        return value
    if isinstance(value, Real) and not isinstance(value, bool):
        return _number(parser, node, value)
    raise TypeError(f"symbols[{name!r}] must be an Expression or a real number, "
                    f"got {type(value).__name__}")


def _visit_name(parser: _Parser, node: ast.Name, depth: int) -> Expression:
    name = node.id
    if name in parser.symbols:
        return _symbol_value(parser, node, name)
    if name in CONSTANTS:
        return Number(CONSTANTS[name])
    if name.startswith("__"):
        raise parser.error(node, "dunder name", f"`{name}` is not allowed",
                           "; variable names must not start with '__'")
    if resolve_function_name(name) or name in PARAMETER_BUILDERS or name in MODULE_PREFIXES \
            or name in STRUCTURE_CALLS:
        raise parser.error(node, "function used as a value",
                           f"`{name}` is a function or module name",
                           f"; call it, e.g. `{name}(x)`" if name not in MODULE_PREFIXES else
                           f"; use a function such as `{name}.sin(x)`")
    return Symbol(name)


def _prefixed_name(parser: _Parser, node: ast.Attribute) -> str:
    """``np.sin`` -> ``sin``; anything but a module prefix is rejected."""
    if isinstance(node.value, ast.Name) and node.value.id in MODULE_PREFIXES:
        return node.attr
    raise parser.error(node, "attribute access", f"`{parser.snippet(node)}` is not allowed",
                       "; only the prefixes np., numpy. and math. of supported functions and "
                       f"constants are; allowed: {ALLOWED}")


def _visit_attribute(parser: _Parser, node: ast.Attribute, depth: int) -> Expression:
    name = _prefixed_name(parser, node)
    if name in CONSTANTS:
        return Number(CONSTANTS[name])
    raise parser.error(node, "attribute access", f"`{parser.snippet(node)}` is not allowed",
                       f"; allowed constants: {', '.join(CONSTANTS)}")


def _callee_name(parser: _Parser, node: ast.Call) -> str:
    func = node.func
    if isinstance(func, ast.Attribute):
        name = _prefixed_name(parser, func)
        if name in PARAMETER_BUILDERS:
            raise parser.error(func, "attribute access", f"`{parser.snippet(func)}`: {name}() "
                               "takes no module prefix")
        return name
    if isinstance(func, ast.Name):
        return func.id
    raise parser.error(node, "call of a non-function", f"`{parser.snippet(node.func)}` cannot be "
                       "called", f"; allowed: {ALLOWED}")


def _unknown_function(parser: _Parser, node: ast.Call, name: str) -> ParseError:
    import difflib

    known = sorted({*FUNCTIONS, *FUNCTION_ALIASES, *PARAMETER_BUILDERS, *STRUCTURE_NAMES})
    close = difflib.get_close_matches(name, known, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return parser.error(node, "unknown function", f"`{name}`",
                        f"{hint} Supported functions: {', '.join(known)}")


def _is_reduction(node: ast.Call) -> bool:
    func = node.func
    return isinstance(func, ast.Subscript) and isinstance(func.value, ast.Name) and \
        func.value.id == REDUCTION_NAME


def _visit_call(parser: _Parser, node: ast.Call, depth: int) -> Expression:
    if _is_reduction(node):
        return visit_reduction(parser, node, depth)
    name = _callee_name(parser, node)
    if name in PARAMETER_BUILDERS:
        return PARAMETER_CALLS[name](parser, node, depth)
    if name in STRUCTURE_CALLS:
        return STRUCTURE_CALLS[name](parser, node, depth)
    if name == REDUCTION_NAME:
        raise parser.error(node, "reduction", "sum needs its indices",
                           "; usage: sum[j](A[i, j], f) or sum[j](f)")
    canonical = resolve_function_name(name)
    if canonical is None:
        raise _unknown_function(parser, node, name)
    if node.keywords:
        raise parser.error(node.keywords[0], "keyword argument",
                           f"`{parser.snippet(node)}` passes a keyword argument",
                           f"; {canonical}() takes positional arguments only")
    arity = FUNCTIONS[canonical].arity
    if len(node.args) != arity:
        raise parser.error(node, "argument count", f"{canonical}() takes {arity} argument(s), "
                           f"got {len(node.args)} in `{parser.snippet(node)}`")
    return Function(canonical, tuple(parser.visit(arg, depth) for arg in node.args))


Handler = Callable[[_Parser, Any, int], Expression]

HANDLERS: dict[type[ast.AST], Handler] = {
    ast.Expression: _visit_expression,
    ast.Constant: _visit_constant,
    ast.Name: _visit_name,
    ast.Attribute: _visit_attribute,
    ast.BinOp: _visit_binop,
    ast.UnaryOp: _visit_unaryop,
    ast.Call: _visit_call,
    ast.Subscript: visit_subscript,
}
"""The only ``ast`` node types a formula may contain (default deny)."""


def _syntax_tree(prepared: PreparedSource) -> ast.Expression:
    try:
        return parse_syntax(prepared.text)  # type: ignore[return-value]
    except SyntaxError as error:
        position = None
        if error.lineno:
            position = prepared.original_position(error.lineno, max((error.offset or 1) - 1, 0))
        where = f" at line {position[0]}, column {position[1]}" if position else ""
        raise ParseError(f"syntax: {error.msg}{where}; expected a formula such as "
                         "'a*x**2 + sin(b*x)'", source=prepared.source, position=position,
                         construct="syntax") from None
    except UnicodeError as error:  # a safety net: prepare_source refuses lone surrogates
        character = error.object[error.start:error.end] if isinstance(error.object, str) \
            else "?"
        raise ParseError(f"invalid character: formula contains an invalid character "
                         f"{character!r} that Python's parser cannot read ({error.reason})",
                         source=prepared.source, construct="invalid character") from None
    except (RecursionError, MemoryError, ValueError, OverflowError):
        raise ParseError(f"nesting depth: formula is too deeply nested for Python's parser "
                         f"(limits: depth {MAX_DEPTH}, {MAX_NODES} nodes)",
                         source=prepared.source, construct="nesting depth") from None


def _parse(source: str, symbols: Mapping[str, Any] | None) -> tuple[Equation, bool]:
    """Parse text; also tell whether the left side (if any) is a bare name."""
    prepared = prepare_source(source)
    parser = _Parser(prepared, symbols or {})
    body = _syntax_tree(prepared).body
    try:
        return _equation(parser, body)
    except RecursionError:  # a safety net: the depth limits should make this unreachable
        raise ParseError(f"nesting depth: formula is too deeply nested (limits: depth "
                         f"{MAX_DEPTH}, {MAX_NODES} nodes)", source=prepared.source,
                         construct="nesting depth") from None
    except ExpressionError as error:
        raise ParseError(f"structure: {error}", source=prepared.source,
                         construct="structure") from None


def _equation(parser: _Parser, body: ast.expr) -> tuple[Equation, bool]:
    if not parser.prepared.equals:
        return Equation(None, desugar(parser.visit(body, 1))), False
    if not (isinstance(body, ast.Compare) and len(body.ops) == 1
            and isinstance(body.ops[0], ast.Eq)):
        raise parser.rejected(body)
    equation = Equation(desugar(parser.visit(body.left, 1)),
                        desugar(parser.visit(body.comparators[0], 1)))
    return equation, isinstance(body.left, ast.Name)


def parse_equation(source: str, symbols: Mapping[str, Any] | None = None) -> Equation:
    """Parse ``lhs = rhs`` (any left side, e.g. ``log(y) = a*x``) or a bare formula.

    Args:
        source: Formula text.
        symbols: Name -> Expression or number substituted for that name.

    Returns:
        The equation; ``lhs`` is None when the text has no ``=``.

    Raises:
        ParseError: The text is not an accepted formula; the message names
            the construct, its position and what is allowed.
        TypeError: ``symbols`` maps a name to something other than an
            Expression or a real number.
    """
    return _parse(source, symbols)[0]


def parse(source: str, symbols: Mapping[str, Any] | None = None) -> Expression:
    """Parse formula text into an expression tree, without evaluating anything.

    ``y = f`` is accepted when the left side is a bare name: the result is
    ``f``. Use :func:`parse_equation` for other left sides.

    Args:
        source: Formula text, e.g. ``"a*exp(-b*x) + c"`` or ``"y = x^2"``.
        symbols: Name -> Expression or number substituted for that name.

    Returns:
        The expression.

    Raises:
        ParseError: The text is not an accepted formula; the message names
            the construct, its position and what is allowed.
        TypeError: ``symbols`` maps a name to something other than an
            Expression or a real number.
    """
    equation, named_lhs = _parse(source, symbols)
    if equation.lhs is not None and not named_lhs:
        left = source.split("=", 1)[0].strip()
        left = left if len(left) <= SNIPPET_LENGTH else left[: SNIPPET_LENGTH - 3] + "..."
        raise ParseError(
            "equation left-hand side: parse() accepts an equation only as 'name = formula', got "
            f"`{left}`; use parse_equation() for other left sides",
            source=source, construct="equation left-hand side")
    return equation.rhs

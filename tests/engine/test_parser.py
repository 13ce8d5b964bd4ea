"""Parser: accepted formulas, rejected constructs, positions, equations."""

from __future__ import annotations

import math

import numpy as np
import pytest

from srh_engine import (
    Binary,
    Equation,
    Function,
    GroupedParameter,
    Number,
    Parameter,
    ParseError,
    Symbol,
    Unary,
    parse,
    parse_equation,
)
from srh_engine.errors import EngineError
from srh_engine.parser import MAX_DEPTH, MAX_NODES
from srh_engine.source import MAX_PAREN_DEPTH, MAX_SOURCE_LENGTH

x, y, z = Symbol("x"), Symbol("y"), Symbol("z")

ACCEPTED = [
    ("x + 1", Binary("+", x, Number(1))),
    ("x^2", Binary("**", x, Number(2))),
    ("x^2 + 1", Binary("+", Binary("**", x, Number(2)), Number(1))),
    ("2^3^x", Binary("**", Number(2), Binary("**", Number(3), x))),
    ("x ** 2", Binary("**", x, Number(2))),
    ("-x**2", Unary("-", Binary("**", x, Number(2)))),
    ("(-2)**x", Binary("**", Number(-2), x)),
    ("+x", x),
    ("-2", Number(-2)),
    ("--x", Unary("-", Unary("-", x))),
    ("-(-2)", Number(2)),
    ("-(-pi)", Number(math.pi)),
    ("1.5e-3 * x", Binary("*", Number(1.5e-3), x)),
    ("2E+10", Number(2e10)),
    (".5", Number(0.5)),
    ("a - (b - c)", Binary("-", Symbol("a"), Binary("-", Symbol("b"), Symbol("c")))),
    ("x/(y*z)", Binary("/", x, Binary("*", y, z))),
    ("sin(x)", Function("sin", (x,))),
    ("np.sin(x)", Function("sin", (x,))),
    ("numpy.exp(x)", Function("exp", (x,))),
    ("math.sqrt(x)", Function("sqrt", (x,))),
    ("math.pi", Number(math.pi)),
    ("np.e", Number(math.e)),
    ("pi * x", Binary("*", Number(math.pi), x)),
    ("-pi", Number(-math.pi)),
    ("e", Number(math.e)),
    ("ln(x)", Function("log", (x,))),
    ("asin(x) + acos(x) + atan(x)", Binary("+", Binary("+", Function("arcsin", (x,)),
                                                        Function("arccos", (x,))),
                                             Function("arctan", (x,)))),
    ("arctan2(y, x)", Function("arctan2", (y, x))),
    ("sigmoid(x) + sign(x) + inv(x)", Binary("+", Binary("+", Function("sigmoid", (x,)),
                                                         Function("sign", (x,))),
                                               Function("inv", (x,)))),
    ("log10(abs(x))", Function("log10", (Function("abs", (x,)),))),
    ("sec(x)*csc(x)*cot(x)*sech(x)",
     Binary("*", Binary("*", Binary("*", Function("sec", (x,)), Function("csc", (x,))),
                        Function("cot", (x,))), Function("sech", (x,)))),
    ('param("a")', Parameter("a")),
    ("param('a', 1.5)", Parameter("a", 1.5)),
    ('param("a", value=-2)', Parameter("a", -2.0)),
    ('param(name="a")', Parameter("a")),
    ('grouped_param(g, name="k")', GroupedParameter(Symbol("g"), "k")),
    ('grouped_param(g, value={0: 1.5, "b": -2}, default=0.5)',
     GroupedParameter(Symbol("g"), None, {0: 1.5, "b": -2.0}, 0.5)),
    ("y = x + 1", Binary("+", x, Number(1))),
    ("  x", x),
    ("\n  x + 1\n", Binary("+", x, Number(1))),
    ("(x +\n 1)", Binary("+", x, Number(1))),
    ("θ * x", Binary("*", Symbol("θ"), x)),
    ("1" + "0" * 299, Number(10**299)),
    ("10**300", Binary("**", Number(10), Number(300))),
    ("(-8)**(1/3)", Binary("**", Number(-8), Binary("/", Number(1), Number(3)))),
]


@pytest.mark.parametrize(("source", "expected"), ACCEPTED, ids=[a[0][:30] for a in ACCEPTED])
def test_accepted(source: str, expected: object) -> None:
    assert parse(source) == expected


REJECTED = [
    # (id, source, construct named in the error)
    ("attribute", "x.real", "attribute access"),
    ("nested-attribute", "np.random.rand()", "attribute access"),
    ("os-attribute", "os.system('ls')", "attribute access"),
    ("unknown-constant-attr", "np.inf", "attribute access"),
    ("dunder-call", "__import__('os')", "unknown function"),
    ("dunder-name", "__builtins__", "dunder name"),
    ("subscript", "x[0]", "subscript"),
    ("slice", "x[1:2]", "subscript"),
    ("call-of-lambda", "(lambda: 1)()", "call of a non-function"),
    ("bare-lambda", "lambda: x", "lambda"),
    ("list-comprehension", "[x for x in y]", "list comprehension"),
    ("generator", "sum(x for x in y)", "reduction"),
    ("dict-comprehension", "{x: 1 for x in y}", "dict comprehension"),
    ("string", "'abc'", "string literal"),
    ("string-in-sum", "x + 'a'", "string literal"),
    ("bytes", "b'abc'", "bytes literal"),
    ("boolean", "True", "boolean literal"),
    ("complex", "2j", "complex literal"),
    ("none", "None", "NoneType literal"),
    ("keyword-in-function", "sin(x=1)", "keyword argument"),
    ("unknown-keyword-param", 'param("a", init=1)', "keyword argument"),
    ("kwargs-param", 'param("a", **opts)', "keyword argument"),
    ("unknown-function", "sinn(x)", "unknown function"),
    ("unknown-function-2", "foo(x)", "unknown function"),
    ("bool-and", "x and y", "boolean operator"),
    ("bool-not", "not x", "boolean operator 'not'"),
    ("comparison", "x < y", "comparison"),
    ("equality", "x == y", "comparison"),
    ("bitwise-or", "x | y", "bitwise operator '|'"),
    ("bitwise-and", "x & y", "bitwise operator '&'"),
    ("invert", "~x", "bitwise inversion '~'"),
    ("shift", "x << 2", "bit shift '<<'"),
    ("floor-division", "x // 2", "floor division '//'"),
    ("modulo", "x % 2", "modulo '%'"),
    ("matmul", "x @ y", "matrix multiplication '@'"),
    ("starred", "sin(*x)", "starred expression"),
    ("f-string", "f'{x}'", "f-string"),
    ("walrus", "(a := 2)", "assignment expression (walrus)"),
    ("conditional", "x if y else z", "conditional expression"),
    ("tuple", "x, y", "tuple"),
    ("list", "[x]", "list"),
    ("dict", "{1: 2}", "dict"),
    ("set", "{x}", "set"),
    ("empty", "", "empty input"),
    ("blank", "   \n ", "empty input"),
    ("too-long", "x+" * (MAX_SOURCE_LENGTH // 2) + "x", "source length"),
    ("paren-depth", "(" * (MAX_PAREN_DEPTH + 1) + "x" + ")" * (MAX_PAREN_DEPTH + 1),
     "nesting depth"),
    ("tree-depth", "x" + "+x" * (MAX_DEPTH + 5), "nesting depth"),
    ("unary-chain", "-" * 9000 + "x", "nesting depth"),
    ("power-chain", "x" + "**x" * 3000, "nesting depth"),
    ("sum-chain-ast-limit", "x+" * 4900 + "x", "nesting depth"),
    ("huge-power-tower", "9**9**9", "huge constant power"),
    ("huge-power", "10**400", "huge constant power"),
    ("huge-power-caret", "2^5000", "huge constant power"),
    ("nested-huge-power", "(10**200)**2", "huge constant power"),
    ("overflowing-power", "(10**300)**(10**300)", "huge constant power"),
    ("overflowing-base", "(1e300*1e300)**2", "huge constant power"),
    ("huge-float", "1e999", "huge numeric literal"),
    ("float-out-of-range", "1e305", "huge numeric literal"),
    ("huge-int", "1" + "0" * 400, "huge integer literal"),
    ("int-over-python-limit", "1" * 5000, "syntax"),
    ("syntax", "x +", "syntax"),
    ("unbalanced-open", "sin(x", "unbalanced brackets"),
    ("unbalanced-close", "x)", "unbalanced brackets"),
    ("two-equals", "y = x = 1", "chained assignment"),
    ("augmented", "x ^= 2", "syntax"),
    ("statement", "import os", "syntax"),
    ("semicolon", "x; y", "syntax"),
    ("null-byte", "x\x00", "syntax"),
    ("function-as-value", "sin + 1", "function used as a value"),
    ("module-as-value", "np * 2", "function used as a value"),
    ("param-as-value", "param", "function used as a value"),
    ("param-non-string-name", "param(a)", "parameter name"),
    ("param-bad-name", 'param("not an id")', "parameter name"),
    ("param-missing-name", "param()", "argument count"),
    ("param-too-many", 'param("a", 1, 2)', "argument count"),
    ("param-value-not-number", 'param("a", x)', "parameter value"),
    ("param-duplicate", 'param("a", 1, value=2)', "keyword argument"),
    ("param-prefixed", 'np.param("a")', "attribute access"),
    ("grouped-no-label", 'grouped_param(name="k")', "argument count"),
    ("grouped-bad-value", "grouped_param(g, value=[1, 2])", "parameter value"),
    ("grouped-bad-key", "grouped_param(g, value={x: 1})", "category label"),
    ("arity", "sin(x, y)", "argument count"),
    ("arity-2", "arctan2(x)", "argument count"),
    ("lhs-not-name", "log(y) = x", "equation left-hand side"),
    ("non-string", 12, "non-string input"),
]


@pytest.mark.parametrize(("source", "construct"), [r[1:] for r in REJECTED],
                         ids=[r[0] for r in REJECTED])
def test_rejected(source: str, construct: str) -> None:
    with pytest.raises(ParseError) as caught:
        parse(source)
    error = caught.value
    assert error.construct == construct
    assert isinstance(error, EngineError)
    assert isinstance(error, ValueError)
    if construct not in ("source length", "non-string input"):
        assert construct in str(error)


def test_node_count_limit() -> None:
    # A balanced sum has small depth but many nodes.
    text = "x"
    while text.count("x") <= MAX_NODES:
        text = f"({text}+{text})"
    assert len(text) < MAX_SOURCE_LENGTH
    with pytest.raises(ParseError) as caught:
        parse(text)
    assert caught.value.construct == "node count"


def test_error_position_and_message() -> None:
    with pytest.raises(ParseError) as caught:
        parse("x + y[0]")
    error = caught.value
    assert error.position == (1, 5)
    assert "subscript" in str(error) and "line 1, column 5" in str(error)
    assert "allowed" in str(error)
    assert error.source == "x + y[0]"


def test_position_accounts_for_caret_rewrites_and_leading_space() -> None:
    with pytest.raises(ParseError) as caught:
        parse("  x^2^3 + y.attr")
    assert caught.value.position == (1, 11)


def test_position_on_second_line() -> None:
    with pytest.raises(ParseError) as caught:
        parse("(x +\n  y[0])")
    assert caught.value.position == (2, 3)


def test_did_you_mean_for_near_miss_function() -> None:
    with pytest.raises(ParseError, match="did you mean 'sin'"):
        parse("sinn(x)")
    with pytest.raises(ParseError, match="did you mean 'sqrt'"):
        parse("sqr(x)")


def test_caret_is_power_with_power_precedence() -> None:
    assert parse("x^2+1") == parse("x**2 + 1")
    assert parse("-x^2") == parse("-(x**2)")
    assert parse("2*x^-1") == parse("2*x**-1")


def test_caret_inside_string_is_not_rewritten() -> None:
    with pytest.raises(ParseError) as caught:
        parse('param("a^b")')
    assert caught.value.construct == "parameter name"


def test_equation_with_any_left_side() -> None:
    equation = parse_equation("log(y) = a*x")
    assert equation == Equation(Function("log", (y,)),
                                Binary("*", Symbol("a"), x))
    assert parse_equation("x + 1") == Equation(None, Binary("+", x, Number(1)))
    assert parse_equation("y = x").lhs == y


def test_keyword_equals_inside_call_is_not_an_equation() -> None:
    assert parse('y = param("a", value=2) * x') == Binary("*", Parameter("a", 2.0), x)


def test_symbols_mapping() -> None:
    a = Parameter("a")
    expression = parse("a*x + c", symbols={"a": a, "c": 2.5})
    assert expression == Binary("+", Binary("*", a, x), Number(2.5))


def test_data_variable_named_e_via_symbols() -> None:
    expression = parse("e * 2", symbols={"e": Symbol("e")})
    assert expression == Binary("*", Symbol("e"), Number(2))
    assert expression.evaluate({"e": np.array([1.0, 2.0])}).tolist() == [2.0, 4.0]


def test_symbols_mapping_rejects_other_values() -> None:
    with pytest.raises(TypeError, match="symbols"):
        parse("a", symbols={"a": "text"})


def test_parse_never_evaluates() -> None:
    # Names are only ever looked up by the evaluator, never resolved by Python.
    assert parse("open") == Symbol("open")
    assert parse("exec") == Symbol("exec")

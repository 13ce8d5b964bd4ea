"""Rendering: text (parseable), LaTeX, tree; parentheses and number formats."""

from __future__ import annotations

import math

import pytest

from srh_engine import (
    Binary,
    Function,
    GroupedParameter,
    Number,
    Parameter,
    Symbol,
    Unary,
    parse,
    render,
    to_str,
    to_tree,
)

x, y, z = Symbol("x"), Symbol("y"), Symbol("z")

TEXT = [
    ("neg-square", Unary("-", Binary("**", x, Number(2))), "-x**2"),
    ("square-of-neg", Binary("**", Unary("-", x), Number(2)), "(-x)**2"),
    ("neg-literal-base", Binary("**", Number(-2), x), "(-2)**x"),
    ("neg-float-base", Binary("**", Number(-0.5), x), "(-0.5)**x"),
    ("neg-zero", Binary("**", Number(-0.0), x), "(-0.0)**x"),
    ("sub-right-assoc", Binary("-", x, Binary("-", y, z)), "x - (y - z)"),
    ("sub-left-assoc", Binary("-", Binary("-", x, y), z), "x - y - z"),
    ("add-right-nested", Binary("+", x, Binary("+", y, z)), "x + (y + z)"),
    ("div-of-product", Binary("/", x, Binary("*", y, z)), "x/(y*z)"),
    ("product-of-div", Binary("*", Binary("/", x, y), z), "x/y*z"),
    ("power-right-assoc", Binary("**", x, Binary("**", y, z)), "x**y**z"),
    ("power-left-nested", Binary("**", Binary("**", x, y), z), "(x**y)**z"),
    ("negative-exponent", Binary("**", Number(2), Number(-1)), "2**-1"),
    ("neg-exponent-expr", Binary("**", x, Unary("-", y)), "x**-y"),
    ("sum-exponent", Binary("**", x, Binary("+", y, Number(1))), "x**(y + 1)"),
    ("neg-of-sum", Unary("-", Binary("+", x, y)), "-(x + y)"),
    ("neg-of-product", Unary("-", Binary("*", x, y)), "-(x*y)"),
    ("neg-of-neg", Unary("-", Unary("-", x)), "-(-x)"),
    ("minus-negative", Binary("-", x, Number(-2)), "x + 2"),
    ("plus-negative", Binary("+", x, Number(-2.5)), "x - 2.5"),
    ("plus-neg-kept", Binary("+", x, Unary("-", y)), "x + (-y)"),
    ("plus-negative-product", Binary("+", x, Binary("*", Number(-0.5), y)), "x - 0.5*y"),
    ("minus-negative-quotient", Binary("-", x, Binary("/", Binary("*", Number(-2), y), z)),
     "x + 2*y/z"),
    ("plus-negative-sum-kept", Binary("+", x, Binary("+", Number(-1), y)), "x + (-1 + y)"),
    ("integral-exponent", Binary("**", x, Number(2.0)), "x**2"),
    ("negative-integral-exponent", Binary("**", x, Number(-1.0)), "x**-1"),
    ("fractional-exponent", Binary("**", x, Number(0.5)), "x**0.5"),
    ("exponent-over-limit", Binary("**", x, Number(1001.0)), "x**1001.0"),
    ("gaussian", Function("exp", (Binary("+", Number(-0.9189385332046727), Binary(
        "*", Number(-0.5), Binary("**", x, Number(2.0)))),)),
     "exp(-0.9189385332046727 - 0.5*x**2)"),
    ("times-negative", Binary("*", x, Unary("-", y)), "x*(-y)"),
    ("neg-times", Binary("*", Unary("-", x), y), "-x*y"),
    ("pi-and-e", Binary("*", Number(math.pi), Number(math.e)), "pi*e"),
    ("minus-pi", Number(-math.pi), "-pi"),
    ("float-repr", Number(0.1), "0.1"),
    ("float-sci", Number(1e-5), "1e-05"),
    ("int", Number(3), "3"),
    ("integral-float", Number(3.0), "3.0"),
    ("function", Function("arctan2", (y, Binary("+", x, Number(1)))), "arctan2(y, x + 1)"),
    ("param-unbound", Parameter("a"), 'param("a")'),
    ("param-bound", Parameter("a", 1.5), 'param("a", 1.5)'),
    ("grouped", GroupedParameter(Symbol("g"), "k", {1: 2.0}, 0.5),
     'grouped_param(g, name="k", value={1: 2.0}, default=0.5)'),
]


@pytest.mark.parametrize(("node", "text"), [c[1:] for c in TEXT], ids=[c[0] for c in TEXT])
def test_text_rendering(node: object, text: str) -> None:
    assert to_str(node) == text
    assert str(node) == text
    assert parse(text) == node or parse(text).evaluate({"x": 1.5, "y": 2.0, "z": 3.0}) == \
        node.evaluate({"x": 1.5, "y": 2.0, "z": 3.0})


def test_parameter_styles() -> None:
    expression = Binary("+", Binary("*", Parameter("a", -1.5), x), Parameter("b"))
    assert to_str(expression, parameter_style="name") == "a*x + b"
    assert to_str(expression, parameter_style="value") == "-1.5*x + b"
    assert parse(to_str(expression)) == expression


def test_number_format() -> None:
    assert to_str(Binary("*", Number(2.123456), x), number_format=".3g") == "2.12*x"


LATEX = [
    ("fraction", parse("x/(y + 1)"), "\\frac{x}{y + 1}"),
    ("power", parse("x1**2"), "{x_{1}}^{2}"),
    ("greek", parse("alpha*theta_0"), "\\alpha \\cdot \\theta_{0}"),
    ("sqrt", parse("sqrt(x)"), "\\sqrt{x}"),
    ("pi", parse("2*pi"), "2 \\cdot \\pi"),
    ("sci", parse("1e-05*x"), "1 \\cdot 10^{-5} \\cdot x"),
    ("function", parse("sin(x)"), "\\sin\\left(x\\right)"),
    ("abs", parse("abs(x)"), "\\left|x\\right|"),
    ("param", parse('param("a", 2.0)*x'), "a \\cdot x"),
    ("paren-base", parse("(x + 1)**2"), "{\\left(x + 1\\right)}^{2}"),
]


@pytest.mark.parametrize(("node", "latex"), [c[1:] for c in LATEX], ids=[c[0] for c in LATEX])
def test_latex_rendering(node: object, latex: str) -> None:
    assert to_str(node, latex=True) == latex
    assert render(node, latex=True) == latex


def test_to_tree() -> None:
    assert to_tree(parse('param("a", 2.0)*sin(x) + 1')) == "\n".join([
        "Binary(+)",
        "  Binary(*)",
        "    Parameter(a=2.0)",
        "    Function(sin)",
        "      Symbol(x)",
        "  Number(1)",
    ])

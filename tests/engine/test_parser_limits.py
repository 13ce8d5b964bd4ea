"""Parser limits: every input past a limit is a ParseError, never another exception.

The table names inputs that once escaped as RecursionError (``not`` chains
rendered with ``ast.unparse``) or that sit just past one limit each; the
property test composes random prefixes, wrappers and operator chains of any
length and asks only that the parser answers with a tree or a ParseError.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from srh_engine import Expression, ParseError, parse, parse_equation
from srh_engine.parser import MAX_DEPTH, MAX_NODES
from srh_engine.source import MAX_PAREN_DEPTH, MAX_SOURCE_LENGTH

LIMITS = {
    "not-chain": "not " * 400 + "x",
    "not-chain-long": "not " * 2400 + "x",
    "invert-chain": "~" * 5000 + "x",
    "unary-minus-past-depth": "-" * (MAX_DEPTH + 1) + "x",
    "lambda-chain": "lambda: " * 1200 + "x",
    "await-chain": "await " * 1200 + "x",
    "ternary-chain": "x if " * 600 + "x" + " else x" * 600,
    "comparison-chain": "x<" * 3000 + "x",
    "attribute-chain": "x" + ".a" * 4000,
    "subscript-chain": "x" + "[0]" * 3000,
    "call-chain": "f" + "()" * 4000,
    "power-chain": "x" + "**x" * (MAX_DEPTH + 1),
    "brackets-past-depth": "(" * (MAX_PAREN_DEPTH + 1) + "x" + ")" * (MAX_PAREN_DEPTH + 1),
    "list-nesting": "[" * 1000 + "]" * 1000,
    "set-nesting": "{" * 1000 + "}" * 1000,
    "generator": "(" + "x for x in " * 800 + "y)",
    "starred-chain": "*" * 3000 + "x",
    "fstring-nesting": 'f"{' * 300 + "x" + '}"' * 300,
    "string-concatenation": '"a" ' * 2400,
    "keyword-arguments": "sin(" + ",".join(f"a{i}=1" for i in range(900)) + ")",
    "many-arguments": "f(" + "x," * 4000 + "x)",
    "source-length": "x+" * MAX_SOURCE_LENGTH + "x",
    "digits": "9" * 6000,
    "node-count": "+".join(["x*x"] * (MAX_NODES // 3 + 10)),
    "equation-not-chain": "y = " + "not " * 400 + "x",
    "walrus-chain": "(" + "a := " * 1500 + "x)",
}


@pytest.mark.parametrize("source", LIMITS.values(), ids=LIMITS.keys())
def test_input_past_a_limit_is_a_parse_error(source: str) -> None:
    with pytest.raises(ParseError) as caught:
        parse(source)
    message = str(caught.value)
    assert caught.value.construct and len(message) < 2_000  # the message is bounded too
    with pytest.raises(ParseError):
        parse_equation(source)


PREFIXES = ["not ", "-", "+", "~", "lambda: ", "*", "await ", "yield ", "x if x else ",
            "x**", "x+", "x<", "x and ", "a := "]
WRAPPERS = [("(", ")"), ("sin(", ")"), ("[", "]"), ("{", "}"), ("f(", ")"), ('f"{', '}"'),
            ("param(", ")"), ("np.exp(", ")"), ("(x for x in ", ")"), ("x[", "]"),
            ("abs(", ")"), ("sum(", ", i)")]


@st.composite
def nested_inputs(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(["x", "1", "y", "", "1e999", "x.a", "()"]))
    for _ in range(draw(st.integers(1, 6))):
        repeat = draw(st.integers(1, 1500))
        if draw(st.booleans()):
            text = draw(st.sampled_from(PREFIXES)) * repeat + text
        else:
            opening, closing = draw(st.sampled_from(WRAPPERS))
            text = opening * repeat + text + closing * repeat
    return text


@settings(max_examples=150, deadline=None)
@given(nested_inputs())
def test_any_nesting_yields_a_tree_or_a_parse_error(source: str) -> None:
    try:
        result = parse(source)
    except ParseError as error:
        assert len(str(error)) < 2_000
    else:
        assert isinstance(result, Expression)

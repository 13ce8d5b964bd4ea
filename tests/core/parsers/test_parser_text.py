from __future__ import annotations

import pytest

from srh_core.parsers import BaseParser
from srh_core.parsers.text_parser import parse_keyword_arguments
from tests.support.sample_tools import SAMPLE_TOOLS


@pytest.fixture
def parser() -> BaseParser:
    return BaseParser.create("text", SAMPLE_TOOLS)


def calls_of(parser: BaseParser, text: str) -> list[tuple[str, dict]]:
    return [(call.name, call.params) for call in parser.parse_response(text)]


@pytest.mark.parametrize(
    "text",
    [
        'CALL evaluate {"formula": "c0*x0**2"}',
        'The residuals look quadratic.\nCALL evaluate {"formula": "c0*x0**2"}\nLet us see.',
        'CALL: evaluate {"formula": "c0*x0**2"}',
        '  - **CALL** `evaluate` {"formula": "c0*x0**2"}',
        '> call: evaluate {"formula": "c0*x0**2"}',
        'CALL evaluate\n{\n  "formula": "c0*x0**2"\n}',
        'CALL evaluate\n```json\n{"formula": "c0*x0**2"}\n```',
        'CALL evaluate {"formula": "c0*x0**2",}',
        "CALL evaluate {'formula': 'c0*x0**2'}",
        'CALL evaluate(formula="c0*x0**2")',
        "Action: evaluate(formula=c0*x0**2)",
    ],
    ids=["plain", "prose-around", "colon", "markdown-bullet", "quote-lowercase", "next-lines",
         "fenced-args", "trailing-comma", "single-quotes", "keyword-style", "action-unquoted"],
)
def test_one_call_in_many_shapes(parser, text):
    assert calls_of(parser, text) == [("evaluate", {"formula": "c0*x0**2"})]
    assert parser.last_errors == []


def test_two_calls_in_one_message_in_order(parser):
    text = ("I'll look at the data first, then try a guess.\n"
            'CALL statistics {"variables": ["x0", "x1"], "robust": true}\n'
            'CALL evaluate {"formula": "c0*x0/x1"}\n')
    assert calls_of(parser, text) == [
        ("statistics", {"variables": ["x0", "x1"], "robust": True}),
        ("evaluate", {"formula": "c0*x0/x1"}),
    ]
    assert [c.id for c in parser.parse_response(text)] == ["call_1", "call_2"]


def test_call_without_arguments(parser):
    assert calls_of(parser, "CALL statistics\nThat gives the ranges.") == [("statistics", {})]
    assert calls_of(parser, "CALL statistics {}") == [("statistics", {})]
    assert calls_of(parser, "CALL statistics()") == [("statistics", {})]


def test_prose_mentioning_calls_is_not_a_call(parser):
    for text in ["I will call evaluate next.", "Call me when it converges.",
                 "The CALL evaluate step comes later.", "We could recall: nothing."]:
        outcome = parser.parse_response_detailed(text)
        assert outcome.calls == [] and outcome.errors == [], text


def test_text_after_tool_name_is_a_malformed_call(parser):
    outcome = parser.parse_response_detailed("CALL evaluate with formula x0")
    assert outcome.calls == []
    assert outcome.errors[0].kind == "malformed" and outcome.errors[0].tool_name == "evaluate"


def test_truncated_arguments_are_an_issue_and_earlier_calls_survive(parser):
    text = 'CALL statistics {}\nCALL evaluate {"formula": "c0*exp(-x0'
    outcome = parser.parse_response_detailed(text)
    assert [c.name for c in outcome.calls] == ["statistics"]
    [issue] = outcome.errors
    assert issue.kind == "truncated" and issue.tool_name == "evaluate"
    assert issue.raw == '{"formula": "c0*exp(-x0'


def test_unknown_tool_is_an_issue(parser):
    outcome = parser.parse_response_detailed('CALL evalaute {"formula": "x0"}')
    assert outcome.calls == [] and "Did you mean 'evaluate'?" in outcome.errors[0].message


def test_invalid_json_arguments_are_an_issue(parser):
    outcome = parser.parse_response_detailed('CALL evaluate {"formula": x0 + }')
    assert outcome.calls == [] and outcome.errors[0].kind == "invalid_json"


def test_json_inside_string_argument_is_kept_verbatim(parser):
    text = 'CALL evaluate {"formula": "x0", "meta": "{\\"k\\": 1}"}'
    assert calls_of(parser, text) == [("evaluate", {"formula": "x0", "meta": '{"k": 1}'})]


def test_arguments_json_does_not_start_new_calls(parser):
    text = 'CALL evaluate {"formula": "x0",\n"note": "see below"\n}\nCALL submit {"formula": "x0"}'
    assert [name for name, _ in calls_of(parser, text)] == ["evaluate", "submit"]


@pytest.mark.parametrize(
    ("source", "expected"),
    [('(formula="x0", max_iter=5)', {"formula": "x0", "max_iter": 5}),
     ("(robust=true, variables=['x0'])", {"robust": True, "variables": ["x0"]}),
     ("(formula=sin(x0) + c0)", {"formula": "sin(x0) + c0"}),
     ('({"formula": "x0"})', {"formula": "x0"}),
     ("()", {})],
    ids=["literals", "json-words", "expression-as-text", "positional-dict", "empty"],
)
def test_keyword_arguments(source, expected):
    assert parse_keyword_arguments(source) == expected


@pytest.mark.parametrize("source", ['("x0")', "(**kw)", "(formula=)", "(a=1"])
def test_bad_keyword_arguments_raise_value_error(source):
    with pytest.raises(ValueError):
        parse_keyword_arguments(source)


def test_bad_keyword_call_is_an_issue(parser):
    outcome = parser.parse_response_detailed('CALL evaluate("x0")')
    assert outcome.calls == [] and outcome.errors[0].kind == "invalid_arguments"


def test_numbered_list_of_calls(parser):
    text = '1. CALL statistics {}\n2) CALL evaluate {"formula": "x0"}'
    assert [name for name, _ in calls_of(parser, text)] == ["statistics", "evaluate"]

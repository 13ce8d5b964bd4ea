from __future__ import annotations

import pytest

from srh_core.parsers import BaseParser
from srh_core.parsers.xml_parser import decode_value
from tests.support.sample_tools import SAMPLE_TOOLS


@pytest.fixture
def parser() -> BaseParser:
    return BaseParser.create("xml", SAMPLE_TOOLS)


def calls_of(parser: BaseParser, text: str) -> list[tuple[str, dict]]:
    return [(call.name, call.params) for call in parser.parse_response(text)]


@pytest.mark.parametrize(
    "text",
    [
        '<tool_call name="evaluate"><param name="formula">c0*x0**2</param></tool_call>',
        "Trying a power law.\n<tool_call name='evaluate'>\n  <param name='formula'>\n"
        "    c0*x0**2\n  </param>\n</tool_call>\nDone.",
        "<tool_call name=evaluate><param name=formula>c0*x0**2</param></tool_call>",
        '<TOOL_CALL name="evaluate" ><PARAM name="formula"><![CDATA[c0*x0**2]]></PARAM>'
        "</TOOL_CALL>",
        '<tool_call name="evaluate">{"formula": "c0*x0**2"}</tool_call>',
        '```xml\n<tool_call name="evaluate"><param name="formula">c0*x0**2</param>'
        "</tool_call>\n```",
    ],
    ids=["plain", "whitespace-single-quotes", "unquoted", "uppercase-cdata", "json-body",
         "fenced"],
)
def test_one_call_in_many_shapes(parser, text):
    assert calls_of(parser, text) == [("evaluate", {"formula": "c0*x0**2"})]
    assert parser.last_errors == []


def test_values_that_look_like_json_are_decoded(parser):
    text = ('<tool_call name="statistics">'
            '<param name="variables">["x0", "x1"]</param>'
            "<param name=\"robust\">true</param></tool_call>"
            '<tool_call name="evaluate"><param name="formula">2</param>'
            '<param name="max_iter">1e3</param></tool_call>')
    assert calls_of(parser, text) == [
        ("statistics", {"variables": ["x0", "x1"], "robust": True}),
        ("evaluate", {"formula": 2, "max_iter": 1000.0}),
    ]


def test_cdata_and_entities_protect_markup(parser):
    text = ('<tool_call name="evaluate"><param name="formula"><![CDATA[x0 < 1 && </param>]]>'
            '</param><param name="note">a &lt; b &amp; c</param></tool_call>')
    [(_, params)] = calls_of(parser, text)
    assert params == {"formula": "x0 < 1 && </param>", "note": "a < b & c"}
    assert "<![CDATA[" in parser.parse_response(text)[0].raw_str


def test_unescaped_less_than_is_tolerated(parser):
    assert calls_of(parser, '<tool_call name="evaluate"><param name="formula">x0 < 2</param>'
                    "</tool_call>") == [("evaluate", {"formula": "x0 < 2"})]


def test_two_calls_and_a_call_without_params(parser):
    text = ('<tool_call name="statistics"></tool_call>\nthen\n'
            '<tool_call name="submit"><param name="formula">x0</param></tool_call>')
    assert calls_of(parser, text) == [("statistics", {}), ("submit", {"formula": "x0"})]


def test_truncated_call_is_an_issue_and_earlier_calls_survive(parser):
    text = ('<tool_call name="statistics"></tool_call>'
            '<tool_call name="evaluate"><param name="formula">c0*x0')
    outcome = parser.parse_response_detailed(text)
    assert [c.name for c in outcome.calls] == ["statistics"]
    assert outcome.errors[0].kind == "truncated" and outcome.errors[0].tool_name == "evaluate"


def test_unclosed_call_before_the_next_one_is_malformed(parser):
    text = ('<tool_call name="evaluate"><param name="formula">x0</param>\n'
            '<tool_call name="submit"><param name="formula">x0</param></tool_call>')
    outcome = parser.parse_response_detailed(text)
    assert [c.name for c in outcome.calls] == ["submit"]
    assert outcome.errors[0].kind == "malformed"


@pytest.mark.parametrize(
    ("text", "kind"),
    [('<tool_call><param name="formula">x0</param></tool_call>', "malformed"),
     ('<tool_call name="evaluate"><param>x0</param></tool_call>', "malformed"),
     ('<tool_call name="evaluate"><param name="formula">x0</tool_call>', "malformed"),
     ('<tool_call name="evaluate">just some text</tool_call>', "invalid_arguments"),
     ('<tool_call name="evalute"></tool_call>', "unknown_tool")],
    ids=["no-name", "param-no-name", "param-unclosed", "text-body", "unknown-tool"],
)
def test_unusable_calls_are_issues(parser, text, kind):
    outcome = parser.parse_response_detailed(text)
    assert outcome.calls == [] and [issue.kind for issue in outcome.errors] == [kind]


def test_prose_only_gives_nothing(parser):
    outcome = parser.parse_response_detailed("I would use a <b>tool_call</b> but not yet.")
    assert outcome.calls == [] and outcome.errors == []


@pytest.mark.parametrize(
    ("raw", "value"),
    [("  3 ", 3), ("-1.5e-2", -0.015), ("null", None), ('"quoted"', "quoted"),
     ('{"a": [1,]}', {"a": [1]}), ("x0**2", "x0**2"), ("[not json", "[not json"),
     ("\n  line1\n  line2\n", "  line1\n  line2"), ("True", "True")],
)
def test_decode_value(raw, value):
    assert decode_value(raw) == value


def test_self_closing_call_has_no_arguments(parser):
    text = '<tool_call name="statistics"/> and <tool_call name="submit">x</tool_call>'
    outcome = parser.parse_response_detailed(text)
    assert [(c.name, c.params) for c in outcome.calls] == [("statistics", {})]
    assert [i.kind for i in outcome.errors] == ["invalid_arguments"]


def test_unclosed_call_issue_quotes_only_its_own_text(parser):
    text = ('<tool_call name="evaluate"><param name="formula">x0</param>\n'
            '<tool_call name="submit"><param name="formula">x0</param></tool_call>')
    [issue] = parser.parse_response_detailed(text).errors
    assert issue.raw == '<tool_call name="evaluate"><param name="formula">x0</param>\n'
    assert issue.tool_name == "evaluate"

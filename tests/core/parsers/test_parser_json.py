from __future__ import annotations

import pytest

from srh_core.parsers import BaseParser
from tests.support.sample_tools import SAMPLE_TOOLS


@pytest.fixture
def parser() -> BaseParser:
    return BaseParser.create("json", SAMPLE_TOOLS)


def calls_of(parser: BaseParser, text: str) -> list[tuple[str, dict]]:
    return [(call.name, call.params) for call in parser.parse_response(text)]


@pytest.mark.parametrize(
    "text",
    [
        '{"name": "evaluate", "arguments": {"formula": "c0*x0**2"}}',
        'Let me test a quadratic.\n```json\n{"name": "evaluate", "arguments": '
        '{"formula": "c0*x0**2"}}\n```\nThis should fit well.',
        '```\n{"name": "evaluate", "arguments": {"formula": "c0*x0**2"}}\n```',
        '```JSON\n{"name": "evaluate", "parameters": {"formula": "c0*x0**2"}}\n```',
        '{"name": "evaluate", "args": {"formula": "c0*x0**2",},}',
        "{'name': 'evaluate', 'arguments': {'formula': 'c0*x0**2'}}",
        '{"name": "evaluate", "arguments": "{\\"formula\\": \\"c0*x0**2\\"}"}',
        '{"tool_calls": [{"name": "evaluate", "arguments": {"formula": "c0*x0**2"}}]}',
        '{"id": "x", "type": "function", "function": {"name": "evaluate", '
        '"arguments": "{\\"formula\\": \\"c0*x0**2\\"}"}}',
        '{"name": "evaluate", "formula": "c0*x0**2"}',
    ],
    ids=["bare", "fenced-with-prose", "fence-no-language", "parameters-key", "trailing-commas",
         "single-quotes", "json-in-string", "envelope", "native-shape", "flat-known-tool"],
)
def test_one_call_in_many_shapes(parser, text):
    assert calls_of(parser, text) == [("evaluate", {"formula": "c0*x0**2"})]
    assert parser.last_errors == []


def test_two_calls_as_array_and_as_separate_blocks(parser):
    array = ('```json\n[{"name": "statistics", "arguments": {"variables": ["x0"]}},\n'
             ' {"name": "evaluate", "arguments": {"formula": "x0"}}]\n```')
    blocks = ('First:\n```json\n{"name": "statistics", "arguments": {"variables": ["x0"]}}\n```\n'
              'Then:\n```json\n{"name": "evaluate", "arguments": {"formula": "x0"}}\n```')
    expected = [("statistics", {"variables": ["x0"]}), ("evaluate", {"formula": "x0"})]
    assert calls_of(parser, array) == expected
    assert calls_of(parser, blocks) == expected
    assert [c.id for c in parser.parse_response(blocks)] == ["call_1", "call_2"]


def test_provider_id_is_kept(parser):
    [call] = parser.parse_response('{"id": "abc", "name": "statistics", "arguments": {}}')
    assert call.id == "abc"


def test_python_literals_are_json_values(parser):
    text = "{'name': 'statistics', 'arguments': {'robust': True, 'variables': ('x0',)}}"
    assert calls_of(parser, text) == [("statistics", {"robust": True, "variables": ["x0"]})]
    text = '{"name": "statistics", "arguments": {"robust": true, "variables": null,}}'
    assert calls_of(parser, text) == [("statistics", {"robust": True, "variables": None})]


def test_nested_json_strings_stay_strings(parser):
    text = ('{"name": "evaluate", "arguments": {"formula": "x0", '
            '"note": "{\\"a\\": [1, 2]}"}}')
    [(name, params)] = calls_of(parser, text)
    assert params["note"] == '{"a": [1, 2]}'


def test_braces_inside_strings_do_not_confuse_the_scanner(parser):
    text = 'Set {a} aside. {"name": "evaluate", "arguments": {"formula": "exp(x0) }{"}}'
    assert calls_of(parser, text) == [("evaluate", {"formula": "exp(x0) }{"})]


def test_prose_only_and_non_call_json_give_nothing(parser):
    for text in ["I think the relation is quadratic; no tool needed yet.",
                 'The data summary was {"x0": {"mean": 1.2}} and [1, 2, 3].',
                 '{"name": "x0", "unit": "m"}',
                 "Interval [0, 1) and a stray { brace."]:
        assert parser.parse_response_detailed(text).calls == []
        assert parser.last_errors == []


def test_truncated_json_is_an_issue_and_earlier_calls_survive(parser):
    text = ('```json\n[{"name": "statistics", "arguments": {}},\n'
            '{"name": "evaluate", "arguments": {"formula": "c0*sin(x0')
    outcome = parser.parse_response_detailed(text)
    assert outcome.calls == []
    [issue] = outcome.errors
    assert issue.kind == "truncated" and "never closed" in issue.message
    separate = ('{"name": "statistics", "arguments": {}}\n'
                '{"name": "evaluate", "arguments": {"formula": "c0*sin(x0')
    outcome = parser.parse_response_detailed(separate)
    assert [c.name for c in outcome.calls] == ["statistics"]
    assert outcome.errors[0].kind == "truncated" and outcome.errors[0].tool_name == "evaluate"


def test_invalid_json_call_is_an_issue_with_raw_text(parser):
    text = '{"name": "evaluate", "arguments": {"formula": x0**2}}'
    outcome = parser.parse_response_detailed(text)
    assert outcome.calls == []
    [issue] = outcome.errors
    assert issue.kind == "invalid_json" and issue.raw == text and issue.tool_name == "evaluate"


@pytest.mark.parametrize(
    ("text", "kind"),
    [('{"name": "evaluate", "arguments": "not json"}', "invalid_json"),
     ('{"name": "evaluate", "arguments": [1, 2]}', "invalid_arguments"),
     ('{"arguments": {"formula": "x0"}}', "malformed"),
     ('{"name": "evalute", "arguments": {}}', "unknown_tool")],
    ids=["string-args", "list-args", "no-name", "unknown-name"],
)
def test_unusable_calls_are_issues(parser, text, kind):
    outcome = parser.parse_response_detailed(text)
    assert outcome.calls == [] and [issue.kind for issue in outcome.errors] == [kind]


def test_missing_arguments_mean_no_arguments(parser):
    assert calls_of(parser, '{"name": "statistics"}') == [("statistics", {})]


def test_truncated_native_shaped_object_is_reported(parser):
    text = '{"id": "c1", "type": "function", "function": {"name": "evaluate", "arguments": "{'
    [issue] = parser.parse_response_detailed(text).errors
    assert issue.kind == "truncated"


def test_stray_brace_in_prose_does_not_hide_a_later_call(parser):
    text = 'Note {this brace is never closed.\n{"name": "statistics", "arguments": {}}'
    assert calls_of(parser, text) == [("statistics", {})]

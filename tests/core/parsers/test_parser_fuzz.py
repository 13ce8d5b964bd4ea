"""Model output is adversarial by nature: no input may make a parser raise."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from srh_core.parsers import BaseParser, ParseOutcome
from tests.support.sample_tools import SAMPLE_TOOLS

FRAGMENTS = [
    "CALL ", "CALL evaluate ", "call: ", "Action: ", "{", "}", "[", "]", "(", ")", '"', "'",
    "\\", ",", ":", "=", "\n", "```json\n", "```", '{"name": "evaluate", "arguments": ',
    '"formula": "x0"', "<tool_call name=\"evaluate\">", "</tool_call>", "<param name=\"f\">",
    "</param>", "<![CDATA[", "]]>", "&lt;", "true", "null", "1e999", "9" * 50, "\x00",
    "tool_calls", "function", "é", "\u2028",
]
model_like_text = st.lists(
    st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=8)), max_size=40
).map("".join)
native_like = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=10)),
    lambda children: st.one_of(st.lists(children, max_size=4),
                               st.dictionaries(st.sampled_from(
                                   ["id", "name", "function", "arguments", "type", "call_id",
                                    "tool_calls", "output"]), children, max_size=4)),
    max_leaves=12,
)


@pytest.mark.parametrize("mode", ["text", "json", "xml", "openai"])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.one_of(st.text(max_size=300), model_like_text))
def test_random_text_never_raises(mode, text):
    parser = BaseParser.create(mode, SAMPLE_TOOLS)
    outcome = parser.parse_response_detailed(text)
    assert isinstance(outcome, ParseOutcome)
    assert all(call.id and call.name in {"evaluate", "statistics", "submit"}
               for call in outcome.calls)
    assert all(isinstance(call.params, dict) for call in outcome.calls)
    assert parser.format_parse_issues(outcome.errors) is None or outcome.errors


@settings(max_examples=150, deadline=None)
@given(value=native_like)
def test_random_native_payloads_never_raise(value):
    outcome = BaseParser.create("openai", SAMPLE_TOOLS).parse_response_detailed(value)
    assert isinstance(outcome, ParseOutcome)


def test_pathological_bracket_soup_finishes_quickly():
    text = "{'" * 20_000 + '{"name": "evaluate"' + "[" * 20_000
    for mode in ("json", "text"):
        outcome = BaseParser.create(mode, SAMPLE_TOOLS).parse_response_detailed(text)
        assert outcome.calls == []

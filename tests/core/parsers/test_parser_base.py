from __future__ import annotations

import json

import pytest

from srh_core.errors import ConfigurationError
from srh_core.parsers import BaseParser, ParseIssue, ParseOutcome
from srh_core.types import ToolCall, ToolCallResult, ToolMetadata
from tests.support.sample_tools import EVALUATE, SAMPLE_TOOLS, ToolWithMetadata

MODES = ["openai", "json", "text", "xml"]


def test_registry_lists_every_mode():
    assert BaseParser.available() == sorted(MODES)


@pytest.mark.parametrize("mode", MODES)
def test_create_builds_registered_mode(mode):
    parser = BaseParser.create(mode, SAMPLE_TOOLS)
    assert parser.name == mode
    assert parser.tool_names == {"evaluate", "statistics", "submit"}


def test_unknown_parser_name_suggests_the_closest():
    with pytest.raises(ConfigurationError, match=r"Unknown tool parser 'jsn'.*'json'.*openai"):
        BaseParser.create("jsn")


@pytest.mark.parametrize(
    "tool",
    [EVALUATE, ToolWithMetadata, ToolWithMetadata(),
     {"name": "evaluate", "description": EVALUATE.description, "parameters": EVALUATE.parameters}],
    ids=["metadata", "tool-class", "tool-instance", "mapping"],
)
def test_tools_may_be_metadata_or_objects_with_metadata(tool):
    parser = BaseParser.create("openai", [tool])
    assert parser.format_tools()[0]["function"]["name"] == "evaluate"


def test_a_tool_without_a_name_is_a_configuration_error():
    with pytest.raises(ConfigurationError, match="ToolMetadata"):
        BaseParser.create("text", [object()])


def test_openai_format_is_the_native_function_list():
    tools = BaseParser.create("openai", SAMPLE_TOOLS).format_tools()
    assert tools[0] == {
        "type": "function",
        "function": {"name": "evaluate", "description": EVALUATE.description,
                     "parameters": EVALUATE.parameters},
    }
    bare = BaseParser.create("openai").format_tools([ToolMetadata("noop")])
    assert bare[0]["function"]["parameters"] == {"type": "object", "properties": {}}


@pytest.mark.parametrize(
    ("mode", "example"),
    [("text", 'CALL evaluate {"formula": "..."}'),
     ("json", '{"name": "evaluate", "arguments": {"formula": "..."}}'),
     ("xml", '<tool_call name="evaluate">\n<param name="formula">...</param>\n</tool_call>')],
)
def test_prompt_docs_have_convention_example_and_every_tool(mode, example):
    docs = BaseParser.create(mode, SAMPLE_TOOLS).format_tools()
    assert docs.startswith("## Tools")
    assert "Example:\n" in docs and example in docs
    for tool in SAMPLE_TOOLS:
        assert f"### {tool.name}" in docs and tool.description in docs
    assert "- formula (string, required): Formula in x0" in docs
    assert "- max_iter (integer, optional, default 100): Optimiser steps." in docs
    assert "- variables (array of string, optional)" in docs


@pytest.mark.parametrize("mode", ["text", "json", "xml"])
def test_prompt_docs_example_parses_back(mode):
    parser = BaseParser.create(mode, SAMPLE_TOOLS)
    example = parser.format_tools().split("Example:\n", 1)[1].split("\n\n## Available", 1)[0]
    assert [(c.name, c.params) for c in parser.parse_response(example)] == [
        ("evaluate", {"formula": "..."})]


@pytest.mark.parametrize("mode", MODES)
def test_empty_and_missing_responses_give_no_calls(mode):
    parser = BaseParser.create(mode, SAMPLE_TOOLS)
    for response in ("", None, "   \n", []):
        outcome = parser.parse_response_detailed(response)
        assert outcome == ParseOutcome([], [])


def test_ids_are_deterministic_and_one_based():
    parser = BaseParser.create("text", SAMPLE_TOOLS)
    text = 'CALL statistics {}\nCALL nope {}\nCALL evaluate {"formula": "x0"}'
    first, second = parser.parse_response(text), parser.parse_response(text)
    assert [c.id for c in first] == ["call_1", "call_2"] == [c.id for c in second]


def test_unknown_tool_becomes_an_issue_with_suggestion_and_is_kept_as_last_errors():
    parser = BaseParser.create("json", SAMPLE_TOOLS)
    calls = parser.parse_response('{"name": "evalute", "arguments": {"formula": "x0"}}')
    assert calls == []
    [issue] = parser.last_errors
    assert issue.kind == "unknown_tool" and issue.tool_name == "evalute"
    assert "Did you mean 'evaluate'?" in issue.message
    assert "Available tools: evaluate, statistics, submit." in issue.message


def test_without_known_names_any_tool_passes_through():
    parser = BaseParser.create("text")
    assert parser.tool_names is None
    assert parser.parse_response("CALL anything {}")[0].name == "anything"


def test_explicit_tool_names_override_the_tools():
    parser = BaseParser.create("text", SAMPLE_TOOLS, tool_names=["submit"])
    assert [c.name for c in parser.parse_response("CALL submit {}\nCALL evaluate {}")] == [
        "submit"]


def _results() -> tuple[list[ToolCall], list[ToolCallResult]]:
    calls = [ToolCall("evaluate", {"formula": "x0"}, id="call_1"),
             ToolCall("statistics", {}, id="call_2")]
    results = [ToolCallResult(True, {"mse": 0.1}, "mse=0.1"),
               ToolCallResult.failure("unknown variable x9")]
    return calls, results


def test_openai_results_are_one_tool_message_per_call():
    calls, results = _results()
    messages = BaseParser.create("openai").format_tool_result_messages(calls, results)
    assert messages == [
        {"role": "tool", "tool_call_id": "call_1", "content": "mse=0.1"},
        {"role": "tool", "tool_call_id": "call_2", "content": "unknown variable x9"},
    ]


@pytest.mark.parametrize("mode", ["text", "json"])
def test_prompt_results_are_one_user_message_in_order(mode):
    calls, results = _results()
    [message] = BaseParser.create(mode).format_tool_result_messages(calls, results)
    assert message["role"] == "user"
    content = message["content"]
    assert "[1] evaluate (call_1) -> ok\nmse=0.1" in content
    assert "[2] statistics (call_2) -> error\nunknown variable x9" in content
    assert content.index("[1]") < content.index("[2]")


def test_xml_results_are_tagged_elements():
    calls, results = _results()
    [message] = BaseParser.create("xml").format_tool_result_messages(calls, results)
    assert '<tool_result name="evaluate" id="call_1" status="ok">\nmse=0.1\n</tool_result>' in (
        message["content"])
    assert 'name="statistics" id="call_2" status="error"' in message["content"]


@pytest.mark.parametrize("mode", MODES)
def test_results_must_pair_with_calls(mode):
    calls, results = _results()
    with pytest.raises(ConfigurationError, match="2 calls and 1 results"):
        BaseParser.create(mode).format_tool_result_messages(calls, results[:1])
    assert BaseParser.create(mode).format_tool_result_messages([], []) == []


def test_openai_assistant_message_carries_native_calls():
    calls, _ = _results()
    message = BaseParser.create("openai").assistant_message("thinking", calls)
    assert message["role"] == "assistant" and message["content"] == "thinking"
    assert message["tool_calls"][0] == {
        "id": "call_1", "type": "function",
        "function": {"name": "evaluate", "arguments": '{"formula": "x0"}'}}
    assert "tool_calls" not in BaseParser.create("openai").assistant_message("hi", [])


@pytest.mark.parametrize("mode", ["text", "json", "xml"])
def test_prompt_assistant_message_is_the_text(mode):
    calls, _ = _results()
    message = BaseParser.create(mode).assistant_message("CALL evaluate {}", calls)
    assert message == {"role": "assistant", "content": "CALL evaluate {}"}


def test_parse_issues_become_one_user_message():
    parser = BaseParser.create("text", SAMPLE_TOOLS)
    outcome = parser.parse_response_detailed('CALL evalute {}\nCALL evaluate {"formula": ')
    message = parser.format_parse_issues(outcome.errors)
    assert message is not None and message["role"] == "user"
    assert "NOT executed" in message["content"]
    assert "1. Unknown tool 'evalute'." in message["content"]
    assert "2. Your call to 'evaluate' stops before" in message["content"]
    assert "Your text: CALL evalute {}" in message["content"]
    assert parser.format_parse_issues([]) is None


def test_parse_issue_and_outcome_serialise():
    issue = ParseIssue("invalid_json", "bad", raw="{", tool_name="evaluate", call_id="c1")
    assert ParseIssue.from_dict(json.loads(json.dumps(issue.to_dict()))) == issue
    outcome = ParseOutcome([ToolCall("a", {"x": 1}, id="call_1")], [issue])
    data = json.loads(json.dumps(outcome.to_dict()))
    assert data["calls"][0]["params"] == {"x": 1} and data["errors"][0]["kind"] == "invalid_json"
    assert not outcome.ok and ParseOutcome().ok


def test_overlong_reply_is_searched_up_to_the_limit_with_an_issue():
    parser = BaseParser.create("text", SAMPLE_TOOLS)
    outcome = parser.parse_response_detailed("CALL statistics {}\n" + "x" * 300_000)
    assert [c.name for c in outcome.calls] == ["statistics"]
    [issue] = outcome.errors
    assert issue.kind == "malformed" and "300019 characters" in issue.message

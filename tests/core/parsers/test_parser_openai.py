from __future__ import annotations

from openai.types.chat import ChatCompletionMessage

from srh_core.parsers import BaseParser
from tests.support.sample_tools import SAMPLE_TOOLS


def parser() -> BaseParser:
    return BaseParser.create("openai", SAMPLE_TOOLS)


def chat_call(call_id: str | None, name: str, arguments: str) -> dict:
    call = {"type": "function", "function": {"name": name, "arguments": arguments}}
    return call if call_id is None else {"id": call_id, **call}


def test_chat_tool_calls_list():
    calls = parser().parse_response([
        chat_call("call_a", "evaluate", '{"formula": "c0*x0"}'),
        chat_call("call_b", "statistics", ""),
    ])
    assert [(c.id, c.name, c.params) for c in calls] == [
        ("call_a", "evaluate", {"formula": "c0*x0"}), ("call_b", "statistics", {})]
    assert calls[0].raw_str == '{"formula": "c0*x0"}'
    assert calls[0].raw["function"]["name"] == "evaluate"


def test_message_dict_and_sdk_message_object():
    message = {"role": "assistant", "content": None,
               "tool_calls": [chat_call("c1", "submit", '{"formula": "x0"}')]}
    assert [c.name for c in parser().parse_response(message)] == ["submit"]
    sdk_message = ChatCompletionMessage.model_validate(message)
    assert [c.params for c in parser().parse_response(sdk_message.tool_calls)] == [
        {"formula": "x0"}]
    assert [c.id for c in parser().parse_response(sdk_message)] == ["c1"]


def test_responses_function_call_items_use_call_id():
    payload = {"output": [
        {"type": "reasoning", "id": "rs_1"},
        {"type": "function_call", "id": "fc_1", "call_id": "call_9", "name": "evaluate",
         "arguments": '{"formula": "x0"}'},
    ]}
    [call] = parser().parse_response(payload)
    assert (call.id, call.name, call.params) == ("call_9", "evaluate", {"formula": "x0"})


def test_missing_ids_are_numbered():
    calls = parser().parse_response([chat_call(None, "statistics", "{}"),
                                     chat_call(None, "submit", '{"formula": "x"}')])
    assert [c.id for c in calls] == ["call_1", "call_2"]


def test_malformed_arguments_are_an_issue_with_raw_text_kept():
    p = parser()
    outcome = p.parse_response_detailed([
        chat_call("c1", "evaluate", '{"formula": "c0*x0'),
        chat_call("c2", "statistics", "{}"),
    ])
    assert [c.id for c in outcome.calls] == ["c2"]
    [issue] = outcome.errors
    assert (issue.kind, issue.call_id, issue.tool_name) == ("invalid_json", "c1", "evaluate")
    assert issue.raw == '{"formula": "c0*x0'
    message = p.format_parse_issues(outcome.errors)
    assert message is not None and "valid JSON arguments" in message["content"]


def test_dict_arguments_and_non_object_arguments():
    outcome = parser().parse_response_detailed([
        {"id": "c1", "function": {"name": "statistics", "arguments": {"robust": True}}},
        chat_call("c2", "evaluate", "[1, 2]"),
        {"id": "c3", "function": {"arguments": "{}"}},
    ])
    assert [c.params for c in outcome.calls] == [{"robust": True}]
    assert [i.kind for i in outcome.errors] == ["invalid_arguments", "malformed"]


def test_unknown_native_tool_is_an_issue():
    outcome = parser().parse_response_detailed([chat_call("c1", "sumbit", "{}")])
    assert outcome.calls == [] and "Did you mean 'submit'?" in outcome.errors[0].message


def test_text_has_no_native_calls():
    p = parser()
    assert p.parse_response('CALL evaluate {"formula": "x0"}') == []
    assert p.parse_response({"role": "assistant", "content": "hello"}) == []
    assert p.parse_response(42) == []

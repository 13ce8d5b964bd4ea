"""OpenAIAPI over Chat Completions against the scripted server: calls, samples, streaming."""

from __future__ import annotations

import json

import pytest

from srh_core.api import APICallResult, ModelResponse, OpenAIAPI, SampleDelta
from tests.support.openai_payloads import (
    chat_choice,
    chat_chunk,
    chat_completion,
    tool_call,
    tool_call_delta,
    usage,
    usage_chunk,
)
from tests.support.openai_server import Reply
from tests.support.sample_tools import SAMPLE_TOOLS

CHAT = "/v1/chat/completions"


def make_api(server, **settings) -> OpenAIAPI:
    settings.setdefault("tool_list", SAMPLE_TOOLS)
    return OpenAIAPI(model="test-model", base_url=server.base_url, api_key="sk-test",
                     sleep=lambda seconds: None, **settings)


def test_native_tool_calls_become_tool_calls(openai_server):
    openai_server.script(Reply.json(chat_completion(
        content=None,
        tool_calls=[tool_call("evaluate", {"formula": "c0*x0**2"}, "call_1"),
                    tool_call("statistics", "{}", "call_2")],
        usage_block=usage(120, 30)), path=CHAT))
    api = make_api(openai_server, tool_parser_name="openai")
    result = api([{"role": "system", "content": "You do symbolic regression."},
                  {"role": "user", "content": "Find y(x0)."}], temperature=0.7, max_tokens=256)

    [response] = result.responses
    assert [(c.id, c.name, c.params) for c in response.tool_calls] == [
        ("call_1", "evaluate", {"formula": "c0*x0**2"}), ("call_2", "statistics", {})]
    assert response.finish_reason == "tool_calls" and response.content == ""
    assert response.message["tool_calls"][0]["function"]["arguments"] == '{"formula": "c0*x0**2"}'
    assert result.usage["prompt_tokens"] == 120 and result.usage["total_tokens"] == 150

    body = openai_server.requests[0].body
    assert body["model"] == "test-model"
    assert body["tools"] == api.tool_description_json()
    assert body["messages"][0] == {"role": "system", "content": "You do symbolic regression."}
    assert (body["temperature"], body["max_completion_tokens"]) == (0.7, 256)
    assert "n" not in body and "stream" not in body
    assert openai_server.requests[0].headers["authorization"] == "Bearer sk-test"


def test_text_mode_calls_are_parsed_from_content(openai_server):
    reply = ("The curve looks like a power law.\n"
             'CALL evaluate {"formula": "c0*x0**c1"}\n'
             'CALL submit {"formula": "c0*x0**c1"}')
    openai_server.script(Reply.json(chat_completion(content=reply)))
    api = make_api(openai_server, tool_parser_name="text")
    result = api([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Go."}])

    assert result.contents == [reply]
    assert [[c.name for c in calls] for calls in result.tool_calls] == [["evaluate", "submit"]]
    assert result.responses[0].message == {"role": "assistant", "content": reply}
    body = openai_server.requests[0].body
    assert "tools" not in body
    system = body["messages"][0]["content"]
    assert system.startswith("Be brief.\n\n## Tools") and "CALL <tool name>" in system


def test_malformed_native_arguments_are_a_parse_issue_not_a_call(openai_server):
    openai_server.script(Reply.json(chat_completion(tool_calls=[
        tool_call("evaluate", '{"formula": "c0*x0', "call_bad"),
        tool_call("statistics", '{"robust": true}', "call_ok"),
    ])))
    [response] = make_api(openai_server, tool_parser_name="openai")("go").responses
    assert [c.id for c in response.tool_calls] == ["call_ok"]
    [issue] = response.parse_issues
    assert (issue.kind, issue.call_id, issue.raw) == ("invalid_json", "call_bad",
                                                      '{"formula": "c0*x0')
    assert [c["id"] for c in response.message["tool_calls"]] == ["call_ok"]


def test_n_is_sent_and_honoured(openai_server):
    openai_server.script(Reply.json(chat_completion([
        chat_choice('CALL evaluate {"formula": "x0"}', index=0),
        chat_choice("no call here", index=2),
        chat_choice('CALL evaluate {"formula": "x0**2"}', index=1),
    ], usage_block=usage(50, 60))))
    result = make_api(openai_server)("go", n=3)

    assert [r.sample for r in result.responses] == [1, 2, 3]
    assert result.contents == ['CALL evaluate {"formula": "x0"}',
                               'CALL evaluate {"formula": "x0**2"}', "no call here"]
    assert [len(calls) for calls in result.tool_calls] == [1, 1, 0]
    assert all(r.usage is None for r in result.responses)
    assert result.usage["completion_tokens"] == 60
    assert [body.get("n") for body in openai_server.bodies()] == [3]


def test_missing_choices_are_requested_as_parallel_singles(openai_server):
    openai_server.script(
        Reply.json(chat_completion(content="first", usage_block=usage(10, 1))),
        Reply.json(chat_completion(content="more", usage_block=usage(10, 2))),
        Reply.json(chat_completion(content="more", usage_block=usage(10, 3))),
    )
    result = make_api(openai_server)("go", n=3)

    assert result.contents == ["first", "more", "more"]
    assert [body.get("n") for body in openai_server.bodies()] == [3, None, None]
    assert result.usage["completion_tokens"] == 6 and result.usage["prompt_tokens"] == 30
    assert [r.usage.completion_tokens for r in result.responses][0] == 1


def test_emulate_n_sends_singles_from_the_start(openai_server):
    openai_server.script(*[Reply.json(chat_completion(content=f"s{i}")) for i in range(3)])
    result = make_api(openai_server, emulate_n=True)("go", n=3)
    assert sorted(result.contents) == ["s0", "s1", "s2"]
    assert all("n" not in body for body in openai_server.bodies())


def test_streaming_assembles_content_and_tool_call_arguments(openai_server):
    openai_server.script(Reply.sse([
        chat_chunk(role="assistant", content=""),
        chat_chunk(content="Trying "),
        chat_chunk(content="a quadratic."),
        chat_chunk(tool_calls=[tool_call_delta(0, call_id="call_s", name="evaluate",
                                               arguments="")]),
        chat_chunk(tool_calls=[tool_call_delta(0, arguments='{"formula": ')]),
        chat_chunk(tool_calls=[tool_call_delta(0, arguments='"c0*x0**2"}')]),
        chat_chunk(tool_calls=[tool_call_delta(1, call_id="call_t", name="statistics",
                                               arguments="{}")]),
        chat_chunk(finish_reason="tool_calls"),
        usage_chunk(40, 12),
    ]))
    api = make_api(openai_server, tool_parser_name="openai", stream=True)
    result = api("go")
    pairs = list(result)

    assert pairs[:2] == [("Trying ", None), ("a quadratic.", None)]
    final_text, final_calls = pairs[-1]
    assert final_text == "" and [c.name for c in final_calls] == ["evaluate", "statistics"]
    [response] = result.responses
    assert response.content == "Trying a quadratic."
    assert response.tool_calls[0].params == {"formula": "c0*x0**2"}
    assert response.tool_calls[0].id == "call_s" and response.finish_reason == "tool_calls"
    assert result.usage["prompt_tokens"] == 40
    body = openai_server.requests[0].body
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}


def test_streaming_n_interleaves_samples_with_their_index(openai_server):
    openai_server.script(Reply.sse([
        chat_chunk(0, content="A1"), chat_chunk(1, content="B1"),
        chat_chunk(0, content="A2", finish_reason="stop"),
        chat_chunk(1, content="B2", finish_reason="stop"), usage_chunk(),
    ]))
    result = make_api(openai_server)("go", n=2, stream=True)
    deltas = list(result.iter_deltas())
    assert [d for d in deltas if d.tool_calls is None] == [
        SampleDelta(1, "A1", None), SampleDelta(2, "B1", None),
        SampleDelta(1, "A2", None), SampleDelta(2, "B2", None)]
    assert result.contents == ["A1A2", "B1B2"]


def test_properties_drain_without_iteration_and_iteration_is_single_pass(openai_server):
    openai_server.script(Reply.json(chat_completion(content="only")))
    result = make_api(openai_server)("go")
    assert isinstance(result, APICallResult)
    assert result.contents == ["only"] and list(result) == []
    assert result.return_value.provider == "openai" and result.return_value.model == "test-model"
    assert isinstance(result.responses[0], ModelResponse)


def test_non_streamed_call_yields_once_per_sample(openai_server):
    openai_server.script(Reply.json(chat_completion([chat_choice("a"), chat_choice("b", index=1)])))
    assert list(make_api(openai_server)("go", n=2)) == [("a", []), ("b", [])]


def test_extra_options_reach_the_wire(openai_server):
    openai_server.script(Reply.json(chat_completion(content="ok")))
    make_api(openai_server)("go", stop="END", seed=7, top_p=0.9,
                            extra_body={"reasoning_effort": "low"}).result()
    body = openai_server.requests[0].body
    assert (body["stop"], body["seed"], body["top_p"]) == (["END"], 7, 0.9)
    assert body["reasoning_effort"] == "low"


def test_conversation_with_tool_results_round_trips(openai_server):
    openai_server.script(
        Reply.json(chat_completion(tool_calls=[tool_call("statistics", "{}", "call_1")])),
        Reply.json(chat_completion(content="done")),
    )
    api = make_api(openai_server, tool_parser_name="openai")
    conversation = [{"role": "user", "content": "go"}]
    [first] = api(conversation).responses
    from srh_core.types import ToolCallResult

    conversation += [first.message, *api.parser.format_tool_result_messages(
        list(first.tool_calls), [ToolCallResult(True, {"n": 3}, "n=3")])]
    assert api(conversation).contents == ["done"]
    sent = openai_server.requests[1].body["messages"]
    assert sent[1]["tool_calls"][0]["id"] == "call_1"
    assert sent[2] == {"role": "tool", "tool_call_id": "call_1", "content": "n=3"}
    assert json.loads(sent[1]["tool_calls"][0]["function"]["arguments"]) == {}


@pytest.mark.parametrize("n", [0, -1, 1.5, True])
def test_bad_n_is_rejected_before_any_request(openai_server, n):
    from srh_core.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="n must be an int >= 1"):
        make_api(openai_server)("go", n=n)

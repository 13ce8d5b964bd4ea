"""OpenAIAPI over the Responses API (api_style="responses")."""

from __future__ import annotations

import pytest

from srh_core.api import OpenAIAPI
from srh_core.errors import ConfigurationError, ModelRequestError, ModelResponseTruncatedError
from tests.support.openai_payloads import function_call_item, responses_body, responses_events
from tests.support.openai_server import Reply
from tests.support.sample_tools import SAMPLE_TOOLS

RESPONSES = "/v1/responses"


def make_api(server, **settings) -> OpenAIAPI:
    settings.setdefault("tool_list", SAMPLE_TOOLS)
    return OpenAIAPI(model="test-model", base_url=server.base_url, api_key="sk-test",
                     api_style="responses", sleep=lambda seconds: None, **settings)


def test_native_function_calls_and_text(openai_server):
    openai_server.script(Reply.json(responses_body(
        "Checking the quadratic.",
        items=[{"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text",
                                                                "text": "think"}]},
               function_call_item("evaluate", {"formula": "c0*x0**2"}, "call_r1")],
        input_tokens=200, output_tokens=40), path=RESPONSES))
    api = make_api(openai_server, tool_parser_name="openai")
    [response] = api([{"role": "system", "content": "sys"}, {"role": "user", "content": "go"}],
                     max_tokens=512).responses

    assert response.content == "Checking the quadratic." and response.reasoning == "think"
    assert [(c.id, c.name, c.params) for c in response.tool_calls] == [
        ("call_r1", "evaluate", {"formula": "c0*x0**2"})]
    assert response.finish_reason == "tool_calls"
    assert response.usage.prompt_tokens == 200 and response.usage.completion_tokens == 40
    body = openai_server.requests[0].body
    assert body["input"] == [{"role": "system", "content": "sys"},
                             {"role": "user", "content": "go"}]
    assert body["max_output_tokens"] == 512
    assert body["tools"][0] == {"type": "function", "name": "evaluate",
                                "description": SAMPLE_TOOLS[0].description,
                                "parameters": SAMPLE_TOOLS[0].parameters}


def test_prompt_mode_and_n_as_parallel_singles(openai_server):
    openai_server.script(*[Reply.json(responses_body(f'CALL evaluate {{"formula": "x{i}"}}'),
                                      path=RESPONSES) for i in range(3)])
    result = make_api(openai_server)("go", n=3)
    assert sorted(calls[0].params["formula"] for calls in result.tool_calls) == [
        "x0", "x1", "x2"]
    assert all("n" not in body and "tools" not in body for body in openai_server.bodies())
    assert openai_server.bodies()[0]["input"][0]["role"] == "system"
    assert result.usage["prompt_tokens"] == 30


def test_conversation_with_tool_results_becomes_input_items(openai_server):
    openai_server.script(Reply.json(responses_body("ok")))
    conversation = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "calling",
         "tool_calls": [{"id": "call_1", "type": "function",
                         "function": {"name": "statistics", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "n=3"},
    ]
    make_api(openai_server, tool_parser_name="openai")(conversation).result()
    assert openai_server.requests[0].body["input"] == [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "calling"},
        {"type": "function_call", "call_id": "call_1", "name": "statistics", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "n=3"},
    ]


def test_incomplete_max_output_tokens_is_truncation(openai_server):
    openai_server.script(Reply.json(responses_body(
        'CALL statistics {}\nCALL evaluate {"formula": "x0', status="incomplete",
        incomplete_reason="max_output_tokens", output_tokens=32)))
    with pytest.raises(ModelResponseTruncatedError) as caught:
        make_api(openai_server)("go").result()
    assert [c.name for c in caught.value.tool_calls] == ["statistics"]
    assert caught.value.usage["completion_tokens"] == 32


def test_streaming_responses(openai_server):
    final = responses_body("Hello world", input_tokens=7, output_tokens=2)
    openai_server.script(Reply.sse(responses_events(["Hello", " world"], final),
                                   done_marker=False, path=RESPONSES))
    result = make_api(openai_server, stream=True)("go")
    assert list(result) == [("Hello", None), (" world", None), ("", [])]
    assert result.contents == ["Hello world"] and result.usage["total_tokens"] == 9
    assert openai_server.requests[0].body["stream"] is True


def test_stream_without_terminal_event_is_an_error(openai_server):
    final = responses_body("Hello")
    events = responses_events(["Hello"], final)[:-1]
    openai_server.script(Reply.sse(events, done_marker=False))
    with pytest.raises(ModelRequestError, match="ended before the response was complete"):
        make_api(openai_server, stream=True)("go").result()


def test_failed_status_is_an_error(openai_server):
    body = responses_body(None, status="failed")
    body["error"] = {"code": "server_error", "message": "model crashed"}
    openai_server.script(Reply.json(body))
    with pytest.raises(ModelRequestError, match="model crashed"):
        make_api(openai_server)("go").result()


@pytest.mark.parametrize("option", [{"stop": "END"}, {"seed": 1}])
def test_chat_only_options_are_rejected(openai_server, option):
    with pytest.raises(ConfigurationError, match="not supported by the Responses API"):
        make_api(openai_server)("go", **option)

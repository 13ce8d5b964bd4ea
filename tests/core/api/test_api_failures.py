"""Retries, give-up, truncation, timeouts, connection errors and cancellation."""

from __future__ import annotations

import random
import threading
import time

import pytest

from srh_core.api import OpenAIAPI
from srh_core.api.retry import Failure, RetryPolicy, retry_after_seconds
from srh_core.errors import (
    ConfigurationError,
    ModelAPIError,
    ModelRequestCancelledError,
    ModelRequestError,
    ModelResponseTruncatedError,
)
from tests.support.openai_payloads import (
    chat_choice,
    chat_chunk,
    chat_completion,
    tool_call,
    tool_call_delta,
    usage,
    usage_chunk,
)
from tests.support.openai_server import Reply, unused_port
from tests.support.sample_tools import SAMPLE_TOOLS


def make_api(server_or_url, sleeps: list[float] | None = None, **settings) -> OpenAIAPI:
    url = server_or_url if isinstance(server_or_url, str) else server_or_url.base_url
    settings.setdefault("tool_list", SAMPLE_TOOLS)
    recorder = sleeps.append if sleeps is not None else (lambda seconds: None)
    return OpenAIAPI(model="test-model", base_url=url, api_key="sk-test", sleep=recorder,
                     rng=random.Random(0), **settings)


def test_429_with_retry_after_is_retried_once_after_the_requested_wait(openai_server):
    openai_server.script(
        Reply.error(429, "slow down", headers={"Retry-After": "2"}),
        Reply.json(chat_completion(content="ok")),
    )
    sleeps: list[float] = []
    assert make_api(openai_server, sleeps)("go").contents == ["ok"]
    assert sleeps == [2.0]
    assert len(openai_server.requests) == 2


def test_retry_after_is_capped(openai_server):
    openai_server.script(Reply.error(503, headers={"retry-after-ms": "90000"}),
                         Reply.json(chat_completion(content="ok")))
    sleeps: list[float] = []
    make_api(openai_server, sleeps, retry_after_max=5.0)("go").result()
    assert sleeps == [5.0]


def test_500_until_give_up_names_provider_model_status_and_attempts(openai_server):
    openai_server.script(*[Reply.error(500, "upstream exploded") for _ in range(3)])
    sleeps: list[float] = []
    api = make_api(openai_server, sleeps, max_retries=2, retry_base_delay=0.5,
                   retry_max_delay=0.75)
    with pytest.raises(ModelRequestError) as caught:
        api("go").result()

    error = caught.value
    assert isinstance(error, ModelAPIError)
    assert (error.provider, error.model, error.status, error.attempts) == (
        "openai", "test-model", 500, 3)
    message = str(error)
    assert "openai" in message and "'test-model'" in message
    assert "HTTP 500" in message and "after 3 attempts" in message
    assert len(openai_server.requests) == 3
    assert len(sleeps) == 2 and 0 <= sleeps[0] <= 0.5 and 0 <= sleeps[1] <= 0.75


@pytest.mark.parametrize("status", [400, 401, 404, 422])
def test_client_errors_are_not_retried(openai_server, status):
    openai_server.script(Reply.error(status, "bad request"))
    sleeps: list[float] = []
    with pytest.raises(ModelRequestError, match=f"after 1 attempt: HTTP {status}") as caught:
        make_api(openai_server, sleeps)("go").result()
    assert caught.value.status == status and not caught.value.retryable and sleeps == []


@pytest.mark.parametrize("status", [408, 409, 502])
def test_transient_statuses_are_retried(openai_server, status):
    openai_server.script(Reply.error(status), Reply.json(chat_completion(content="ok")))
    assert make_api(openai_server)("go").contents == ["ok"]


def test_connection_refused_is_retried_then_reported():
    sleeps: list[float] = []
    url = f"http://127.0.0.1:{unused_port()}/v1"
    with pytest.raises(ModelRequestError) as caught:
        make_api(url, sleeps, max_retries=1)("go").result()
    message = str(caught.value)
    assert "connection error" in message and url in message and "after 2 attempts" in message
    assert caught.value.status is None and len(sleeps) == 1


def test_dropped_connection_is_retried(openai_server):
    openai_server.script(Reply.dropped(), Reply.json(chat_completion(content="ok")))
    assert make_api(openai_server)("go").contents == ["ok"]


def test_timeout_when_the_server_is_too_slow(openai_server):
    # replies 30 s late: two 0.3 s timeouts end the call long before either (with 1.5 s
    # replies, a loaded machine took 1.7 s for the two timeouts and looked like the replies)
    openai_server.script(Reply.json(chat_completion(content="late"), delay=30.0),
                         Reply.json(chat_completion(content="late"), delay=30.0))
    api = make_api(openai_server, timeout=0.3, max_retries=1)
    started = time.monotonic()
    with pytest.raises(ModelRequestError, match="timed out") as caught:
        api("go").result()
    assert caught.value.attempts == 2 and time.monotonic() - started < 15


def test_length_truncation_keeps_partial_content_calls_and_usage(openai_server):
    content = ('CALL statistics {}\nCALL evaluate {"formula": "c0*exp(-x0')
    openai_server.script(Reply.json(chat_completion(
        content=content, finish_reason="length", usage_block=usage(100, 64))))
    with pytest.raises(ModelResponseTruncatedError) as caught:
        make_api(openai_server)("go", max_tokens=64).result()

    error = caught.value
    assert error.partial_message == content and error.sample == 1
    assert [call.name for call in error.tool_calls] == ["statistics"]
    assert error.usage["completion_tokens"] == 64
    assert (error.provider, error.model) == ("openai", "test-model")
    assert "length limit in sample 1 of 1" in str(error)
    assert error.responses == [] and error.truncated_responses[0].parse_issues[0].kind == (
        "truncated")


def test_truncated_sample_keeps_its_complete_siblings(openai_server):
    openai_server.script(Reply.json(chat_completion([
        chat_choice('CALL evaluate {"formula": "x0"}', index=0),
        chat_choice('CALL evaluate {"formula": "x0*', index=1, finish_reason="length"),
        chat_choice("CALL statistics {}", index=2),
    ])))
    with pytest.raises(ModelResponseTruncatedError) as caught:
        make_api(openai_server)("go", n=3).result()
    error = caught.value
    assert error.sample == 2 and error.tool_calls == []
    assert [r.sample for r in error.responses] == [1, 3]
    assert [r.tool_calls[0].name for r in error.responses] == ["evaluate", "statistics"]


def test_streamed_truncation_keeps_complete_native_calls(openai_server):
    openai_server.script(Reply.sse([
        chat_chunk(tool_calls=[tool_call_delta(0, call_id="c1", name="statistics",
                                               arguments="{}")]),
        chat_chunk(tool_calls=[tool_call_delta(1, call_id="c2", name="evaluate",
                                               arguments='{"formula": "x0')]),
        chat_chunk(finish_reason="length"),
        usage_chunk(30, 16),
    ]))
    api = make_api(openai_server, tool_parser_name="openai", stream=True)
    with pytest.raises(ModelResponseTruncatedError) as caught:
        api("go").result()
    assert [c.id for c in caught.value.tool_calls] == ["c1"]
    assert caught.value.usage["completion_tokens"] == 16


def test_error_inside_a_stream_after_output_is_not_retried(openai_server):
    openai_server.script(Reply.sse([chat_chunk(content="partial"),
                                    {"error": {"message": "model overloaded"}}]))
    sleeps: list[float] = []
    result = make_api(openai_server, sleeps, stream=True)("go")
    with pytest.raises(ModelRequestError, match="model overloaded") as caught:
        list(result)
    assert caught.value.attempts == 1 and sleeps == []
    with pytest.raises(ModelRequestError):
        result.contents  # noqa: B018 - the stored error is raised again


def test_cancel_stops_an_in_flight_stream_at_the_next_chunk(openai_server):
    # a 30 s stream, cancelled from another thread after its second chunk; the consumer
    # waits for that thread, so "the next chunk" does not depend on how busy the machine is
    openai_server.script(Reply.sse([chat_chunk(content=f"tok{i} ") for i in range(600)],
                                   event_delay=0.05))
    api = make_api(openai_server, stream=True)
    result = api("go")
    received: list[str] = []
    with pytest.raises(ModelRequestCancelledError, match="cancelled"):
        for text, _ in result:
            received.append(text)
            if len(received) == 2:
                canceller = threading.Thread(target=api.cancel)
                canceller.start()
                canceller.join()
    assert len(received) in (2, 3)  # a chunk the client had already read may still come


def cancel_once_asked(openai_server, api) -> None:
    """Cancel ``api``'s call from another thread once its request reached the server (a
    fixed 0.2 s came before the request on a loaded machine: nothing was asked)."""
    def cancel() -> None:
        openai_server.wait_for_requests(1, timeout=60)
        api.cancel()

    threading.Thread(target=cancel, daemon=True).start()


def test_cancel_frees_a_caller_waiting_on_a_reply_that_is_not_streamed(openai_server):
    # nothing is read until the endpoint answers, so only the caller's wait can be cut
    openai_server.script(Reply.json(chat_completion(content="late"), delay=30.0))
    api = make_api(openai_server)
    result = api("go")
    cancel_once_asked(openai_server, api)
    started = time.monotonic()
    with pytest.raises(ModelRequestCancelledError, match="cancelled"):
        result.result()
    assert time.monotonic() - started < 15      # long before the 30 s reply


def test_cancel_interrupts_a_retry_wait(openai_server):
    openai_server.script(Reply.error(503, headers={"Retry-After": "30"}))
    api = OpenAIAPI(model="m", base_url=openai_server.base_url, api_key="k")
    result = api("go")
    cancel_once_asked(openai_server, api)
    started = time.monotonic()
    with pytest.raises(ModelRequestCancelledError):
        result.result()
    assert time.monotonic() - started < 15      # long before the 30 s retry


def test_cancel_does_not_affect_later_calls(openai_server):
    openai_server.script(Reply.json(chat_completion(content="fine")))
    api = make_api(openai_server)
    api.cancel()
    assert api("go").contents == ["fine"]


def test_a_failing_sample_fails_the_call(openai_server):
    openai_server.script(Reply.json(chat_completion(content="one")), Reply.error(400, "nope"))
    with pytest.raises(ModelRequestError, match="HTTP 400"):
        make_api(openai_server, emulate_n=True)("go", n=2).result()


def test_no_choices_in_a_single_request_is_an_error(openai_server):
    openai_server.script(Reply.json(chat_completion([])))
    with pytest.raises(ModelRequestError, match="returned no choices"):
        make_api(openai_server)("go").result()


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [({"retry-after": "3"}, 3.0), ({"retry-after-ms": "1500"}, 1.5),
     ({"retry-after": "soon"}, None), ({}, None)],
)
def test_retry_after_header_forms(headers, seconds):
    assert retry_after_seconds(headers) == seconds


def test_retry_after_http_date():
    assert 0 <= retry_after_seconds({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) <= 1


def test_backoff_has_full_jitter_and_a_ceiling():
    policy = RetryPolicy(max_retries=10, base_delay=1.0, max_delay=8.0)
    rng = random.Random(1)
    delays = [policy.delay(Failure("x", True), number, rng) for number in range(10)]
    assert all(0 <= delay <= min(8.0, 2.0 ** n) for n, delay in enumerate(delays))
    assert len(set(delays)) == 10


@pytest.mark.parametrize("settings", [{"max_retries": -1}, {"max_retries": 1.5},
                                      {"retry_base_delay": -1}, {"timeout": 0},
                                      {"api_style": "completions"}, {"max_parallel": 0},
                                      {"temperature": 3.0}])
def test_bad_settings_are_configuration_errors(settings):
    with pytest.raises(ConfigurationError):
        OpenAIAPI(model="m", api_key="k", **settings)


def test_tool_call_raw_survives_a_retry(openai_server):
    openai_server.script(Reply.error(500), Reply.json(chat_completion(
        tool_calls=[tool_call("submit", {"formula": "x0"}, "call_z")])))
    [response] = make_api(openai_server, tool_parser_name="openai")("go").responses
    assert response.tool_calls[0].id == "call_z"
    assert openai_server.bodies()[0] == openai_server.bodies()[1]

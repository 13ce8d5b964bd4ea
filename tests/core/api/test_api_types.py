"""Usage, ModelResponse, CallSummary, APICallResult and CancelToken on their own."""

from __future__ import annotations

import json
import threading

import pytest

from srh_core.api import APICallResult, CallSummary, CancelToken, ModelPrice, ModelResponse, Usage
from srh_core.api.call_result import SampleDelta
from srh_core.errors import ModelRequestCancelledError, ModelRequestError
from srh_core.parsers import ParseIssue
from srh_core.types import ToolCall


def test_usage_sums_and_prices():
    a = Usage(100, 20, 120, cached_tokens=40, reasoning_tokens=5)
    b = Usage(50, 10, 60)
    total = a + b
    assert (total.prompt_tokens, total.completion_tokens, total.total_tokens) == (150, 30, 180)
    assert total.price is None
    price = ModelPrice(1.0, 4.0, cached_input_per_million=0.5)
    assert Usage.total([a, b], price).price == pytest.approx((110 * 1 + 40 * 0.5 + 30 * 4) / 1e6)
    assert (a.priced(price) + b.priced(price)).price == pytest.approx(
        Usage.total([a, b], price).price)
    assert Usage.total([], None) == Usage()


def test_usage_round_trip():
    usage = Usage(1, 2, 3, 0, 1, price=0.5)
    assert Usage.from_dict(json.loads(json.dumps(usage.to_dict()))) == usage


def _response() -> ModelResponse:
    return ModelResponse(
        content='CALL evaluate {"formula": "x0"}',
        tool_calls=(ToolCall("evaluate", {"formula": "x0"}, id="call_1", raw={"x": object()}),),
        message={"role": "assistant", "content": 'CALL evaluate {"formula": "x0"}'},
        finish_reason="stop",
        parse_issues=(ParseIssue("unknown_tool", "Unknown tool 'fit'.", raw="CALL fit {}"),),
        sample=2, usage=Usage(5, 6, 11), reasoning="hmm")


def test_model_response_round_trip():
    response = _response()
    again = ModelResponse.from_dict(json.loads(json.dumps(response.to_dict())))
    assert again.content == response.content and again.sample == 2
    assert [(c.name, c.params, c.id) for c in again.tool_calls] == [
        ("evaluate", {"formula": "x0"}, "call_1")]
    assert again.parse_issues == response.parse_issues and again.usage == response.usage
    assert again.message == response.message and again.reasoning == "hmm"
    assert not again.truncated and ModelResponse("", finish_reason="length").truncated


def test_call_summary_round_trip():
    summary = CallSummary((_response(),), Usage(5, 6, 11, price=0.1), "openai", "m")
    again = CallSummary.from_dict(json.loads(json.dumps(summary.to_dict())))
    assert again.usage == summary.usage and again.responses[0].sample == 2
    assert (again.provider, again.model) == ("openai", "m")


def _events(error: Exception | None = None):
    yield SampleDelta(1, "ab", None)
    yield SampleDelta(1, "", [])
    if error is not None:
        raise error
    return CallSummary((ModelResponse("ab"),), Usage(1, 1, 2), "p", "m")


def test_api_call_result_pairs_and_properties():
    result = APICallResult(_events())
    assert list(result) == [("ab", None), ("", [])]
    assert result.contents == ["ab"] and result.tool_calls == [[]]
    assert result.usage["total_tokens"] == 2 and result.return_value.provider == "p"


def test_api_call_result_reraises_the_error_on_every_access():
    result = APICallResult(_events(ModelRequestError("boom")))
    with pytest.raises(ModelRequestError, match="boom"):
        list(result)
    for read in (lambda: result.contents, lambda: result.usage, lambda: result.responses):
        with pytest.raises(ModelRequestError, match="boom"):
            read()


def test_api_call_result_close_stops_the_stream():
    result = APICallResult(_events())
    result.close()
    with pytest.raises(RuntimeError, match="closed"):
        result.result()


def test_cancel_token_child_and_wait():
    parent = CancelToken()
    child = parent.child()
    assert not child.cancelled
    threading.Timer(0.05, parent.cancel).start()
    assert child.wait(5.0) is True and child.cancelled
    with pytest.raises(ModelRequestCancelledError, match="'m' was cancelled"):
        child.raise_if_cancelled("p", "m")
    assert CancelToken().wait(0.01) is False

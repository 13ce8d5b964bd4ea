"""Realistic OpenAI-compatible payloads for the scripted server (Chat Completions, Responses).

Bodies follow the shapes the official ``openai`` client parses:
``chat.completion`` objects, ``chat.completion.chunk`` stream events (with
tool-call argument deltas and the final usage chunk), and Responses API
``response`` objects and stream events.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tests.support.openai_server import Reply, SSEEvent

TEST_MODEL = "test-model"

def usage(prompt: int = 10, completion: int = 5, *, cached: int = 0,
          reasoning: int = 0) -> dict[str, Any]:
    """A Chat Completions usage block."""
    return {"prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached},
            "completion_tokens_details": {"reasoning_tokens": reasoning}}


def tool_call(name: str, arguments: str | Mapping[str, Any], call_id: str = "call_abc"
              ) -> dict[str, Any]:
    """A Chat Completions native tool call (``arguments`` dicts are JSON-encoded)."""
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": text}}


def chat_choice(content: str | None = "", *, tool_calls: Sequence[Mapping[str, Any]] = (),
                finish_reason: str | None = None, index: int = 0) -> dict[str, Any]:
    """One choice; ``finish_reason`` defaults to ``tool_calls`` or ``stop``."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = [dict(call) for call in tool_calls]
    reason = finish_reason or ("tool_calls" if tool_calls else "stop")
    return {"index": index, "message": message, "finish_reason": reason}


def chat_completion(choices: Sequence[Mapping[str, Any]] | None = None, *,
                    content: str | None = "", tool_calls: Sequence[Mapping[str, Any]] = (),
                    finish_reason: str | None = None, usage_block: Mapping[str, Any] | None = None,
                    model: str = TEST_MODEL) -> dict[str, Any]:
    """A ``chat.completion`` body: given choices, or one built from content/tool_calls."""
    if choices is None:
        choices = [chat_choice(content, tool_calls=tool_calls, finish_reason=finish_reason)]
    return {"id": "chatcmpl-test", "object": "chat.completion", "created": 1_700_000_000,
            "model": model, "choices": [dict(c) for c in choices],
            "usage": dict(usage_block if usage_block is not None else usage())}


def chat_chunk(index: int = 0, *, content: str | None = None,
               tool_calls: Sequence[Mapping[str, Any]] | None = None,
               finish_reason: str | None = None, role: str | None = None,
               model: str = TEST_MODEL) -> dict[str, Any]:
    """A ``chat.completion.chunk`` with one choice delta."""
    delta: dict[str, Any] = {}
    if role:
        delta["role"] = role
    if content is not None:
        delta["content"] = content
    if tool_calls is not None:
        delta["tool_calls"] = [dict(call) for call in tool_calls]
    return {"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 1_700_000_000,
            "model": model, "choices": [{"index": index, "delta": delta,
                                         "finish_reason": finish_reason}]}


def tool_call_delta(index: int = 0, *, call_id: str | None = None, name: str | None = None,
                    arguments: str | None = None) -> dict[str, Any]:
    """One streamed piece of a tool call."""
    function: dict[str, Any] = {}
    if name is not None:
        function["name"] = name
    if arguments is not None:
        function["arguments"] = arguments
    delta: dict[str, Any] = {"index": index, "function": function}
    if call_id is not None:
        delta.update(id=call_id, type="function")
    return delta


def usage_chunk(prompt: int = 10, completion: int = 5) -> dict[str, Any]:
    """The final usage-only chunk sent with ``stream_options.include_usage``."""
    return {"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 1_700_000_000,
            "model": TEST_MODEL, "choices": [], "usage": usage(prompt, completion)}


def function_call_item(name: str, arguments: str | Mapping[str, Any], call_id: str = "call_r1"
                       ) -> dict[str, Any]:
    """A Responses API ``function_call`` output item."""
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"type": "function_call", "id": f"fc_{call_id}", "call_id": call_id, "name": name,
            "arguments": text, "status": "completed"}


def responses_body(text: str | None = None, *, items: Sequence[Mapping[str, Any]] = (),
                   status: str = "completed", incomplete_reason: str | None = None,
                   input_tokens: int = 10, output_tokens: int = 5,
                   model: str = TEST_MODEL) -> dict[str, Any]:
    """A Responses API ``response`` object with an optional text message and other items."""
    output: list[dict[str, Any]] = []
    if text is not None:
        output.append({"type": "message", "id": "msg_1", "role": "assistant",
                       "status": "completed",
                       "content": [{"type": "output_text", "text": text, "annotations": []}]})
    output.extend(dict(item) for item in items)
    details = {"reason": incomplete_reason} if status == "incomplete" else None
    return {"id": "resp_test", "object": "response", "created_at": 1_700_000_000,
            "model": model, "status": status, "incomplete_details": details, "output": output,
            "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
            "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens,
                      "total_tokens": input_tokens + output_tokens,
                      "input_tokens_details": {"cached_tokens": 0},
                      "output_tokens_details": {"reasoning_tokens": 0}}}


def responses_events(deltas: Sequence[str], final: Mapping[str, Any]) -> list[SSEEvent]:
    """Responses API stream events: text deltas, then the terminal event carrying ``final``."""
    started = {**final, "status": "in_progress", "output": []}
    events: list[SSEEvent] = [("response.created", {"type": "response.created",
                                                    "sequence_number": 0, "response": started})]
    for number, delta in enumerate(deltas, start=1):
        events.append(("response.output_text.delta", {
            "type": "response.output_text.delta", "sequence_number": number, "item_id": "msg_1",
            "output_index": 0, "content_index": 0, "delta": delta, "logprobs": []}))
    terminal = "response.incomplete" if final.get("status") == "incomplete" else (
        "response.completed")
    events.append((terminal, {"type": terminal, "sequence_number": len(deltas) + 1,
                              "response": dict(final)}))
    return events


def evaluating_reply(formulas: Sequence[str], *, delay: float = 0.0,
                     hold: Callable[[int], threading.Event | None] | None = None) -> Any:
    """A responder for ``FakeOpenAIServer.respond_with``: n choices, one evaluate_formula call each.

    Choice k of a request evaluates ``formulas[(seed + k) % len(formulas)]``, so a
    step's samples differ and the same step (same sampling seed) is answered the same.
    ``hold(seed)`` names the event a step's answer waits for (None: answered at once):
    the steps a test's command or signal must land in stay open until it has been sent.
    """
    def respond(request: Any) -> Reply:
        body = request.body if isinstance(request.body, dict) else {}
        seed, n = int(body.get("seed") or 0), int(body.get("n") or 1)
        choices = [chat_choice(None, index=k, tool_calls=[tool_call(
            "evaluate_formula", {"f": formulas[(seed + k) % len(formulas)]}, f"call_{seed}_{k}")])
            for k in range(n)]
        return Reply.json(chat_completion(choices), delay=delay,
                          hold=None if hold is None else hold(seed))

    return respond

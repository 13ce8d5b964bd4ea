"""Responses API on the wire: chat messages -> input items, replies, stream events.

The conversation stays in Chat Completions shape everywhere in the harness;
only here is it converted: ``tool`` messages become ``function_call_output``
items and an assistant message's ``tool_calls`` become ``function_call``
items. The Responses API has no ``n``, ``stop`` or ``seed``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from srh_core.api.options import RequestOptions
from srh_core.api.response import Usage
from srh_core.api.wire import RawReply, RawSample, as_int, content_text, mapping
from srh_core.errors import ConfigurationError

_TERMINAL_EVENTS = ("response.completed", "response.incomplete", "response.failed")


def responses_input(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Convert Chat-shaped messages into Responses API input items."""
    items: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        if role == "tool":
            items.append({"type": "function_call_output", "call_id": message.get("tool_call_id"),
                          "output": content_text(message.get("content"))})
        elif role == "assistant":
            items.extend(_assistant_items(message))
        else:
            items.append({"role": role, "content": message.get("content")})
    return items


def _assistant_items(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    text = content_text(message.get("content"))
    if text:
        items.append({"role": "assistant", "content": text})
    for call in message.get("tool_calls") or []:
        function = mapping(mapping(call).get("function"))
        items.append({"type": "function_call", "call_id": call.get("id"),
                      "name": function.get("name"), "arguments": function.get("arguments") or "{}"})
    return items


def responses_tools(chat_tools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Flatten Chat function tools into the Responses API tool shape."""
    return [{"type": "function", **mapping(tool.get("function"))} for tool in chat_tools]


def responses_request(
    messages: Sequence[Mapping[str, Any]],
    options: RequestOptions,
    *,
    model: str,
    tools: list[dict[str, Any]] | None,
) -> dict[str, Any]:
    """Keyword arguments for ``client.responses.create`` (one sample).

    Raises:
        ConfigurationError: When ``stop`` or ``seed`` is set (not in the Responses API).
    """
    for name in ("stop", "seed"):
        if getattr(options, name) is not None:
            raise ConfigurationError(
                f"The {name!r} option is not supported by the Responses API; use "
                "api_style='chat' or drop the option.", setting=name)
    request: dict[str, Any] = {"model": model, "input": responses_input(messages)}
    if tools:
        request["tools"] = responses_tools(tools)
    if options.max_tokens is not None:
        request["max_output_tokens"] = options.max_tokens
    for name in ("temperature", "top_p"):
        if getattr(options, name) is not None:
            request[name] = getattr(options, name)
    if options.stream:
        request["stream"] = True
    if options.extra_body:
        request["extra_body"] = dict(options.extra_body)
    return request


def responses_usage(data: Any) -> Usage:
    """Usage of a Responses API reply."""
    usage = mapping(data)
    prompt, completion = as_int(usage.get("input_tokens")), as_int(usage.get("output_tokens"))
    return Usage(
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=as_int(usage.get("total_tokens")) or prompt + completion,
        cached_tokens=as_int(mapping(usage.get("input_tokens_details")).get("cached_tokens")),
        reasoning_tokens=as_int(
            mapping(usage.get("output_tokens_details")).get("reasoning_tokens")),
    )


def decode_response(data: Mapping[str, Any]) -> RawReply:
    """Decode a ``response`` object into one sample."""
    output = [mapping(item) for item in data.get("output") or []]
    content = "".join(content_text([part for part in item.get("content") or []
                                    if mapping(part).get("type") == "output_text"])
                      for item in output if item.get("type") == "message")
    calls = [dict(item) for item in output if item.get("type") == "function_call"]
    reasoning = "".join(content_text(item.get("summary")) for item in output
                        if item.get("type") == "reasoning")
    status = data.get("status")
    error = None
    if status == "failed":
        error = str(mapping(data.get("error")).get("message") or "the response failed")
    finish = _finish_reason(status, mapping(data.get("incomplete_details")).get("reason"), calls)
    sample = RawSample(content, calls, finish, reasoning)
    return RawReply([sample], responses_usage(data.get("usage")), error)


def _finish_reason(status: Any, reason: Any, calls: list[dict[str, Any]]) -> str | None:
    """Map a Responses status to the Chat Completions ``finish_reason`` vocabulary."""
    if status == "incomplete":
        return "length" if reason in (None, "max_output_tokens") else str(reason)
    if status == "completed":
        return "tool_calls" if calls else "stop"
    return None if status is None else str(status)


class ResponsesStreamAssembler:
    """Collects Responses API stream events; the terminal event carries the full response."""

    def __init__(self) -> None:
        self._text: list[str] = []
        self._final: RawReply | None = None
        self._error: str | None = None

    def add(self, event: Mapping[str, Any]) -> list[tuple[int, str]]:
        """Take one event; return its text deltas as ``(0, text)``."""
        kind = event.get("type")
        if kind == "response.output_text.delta" and isinstance(event.get("delta"), str):
            self._text.append(event["delta"])
            return [(0, event["delta"])]
        if kind in _TERMINAL_EVENTS:
            self._final = decode_response(mapping(event.get("response")))
        elif kind == "error":
            self._error = str(event.get("message") or "the stream reported an error")
        return []

    def reply(self) -> RawReply:
        """The final response, or what was streamed plus an error when it never came."""
        if self._final is not None:
            return self._final
        sample = RawSample("".join(self._text))
        return RawReply([sample], Usage(),
                        self._error or "the stream ended before the response was complete")

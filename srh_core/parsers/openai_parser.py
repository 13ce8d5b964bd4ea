"""``openai`` mode: native function calling.

The endpoint receives the tools as ``tools=[{"type": "function", ...}]`` and
answers with structured calls. :meth:`OpenAIParser.parse_response` accepts
the provider-native shapes: a list of Chat Completions tool calls
(``{"id", "type": "function", "function": {"name", "arguments"}}``), a list
of Responses API ``function_call`` items (``{"call_id", "name",
"arguments"}``), an assistant message dict holding ``tool_calls``, a
Responses payload holding ``output``, or SDK objects of any of these. Plain
text carries no native calls and gives ``[]``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from srh_core.parsers.arguments import decode_arguments
from srh_core.parsers.base import BaseParser, ParseIssue, check_pairs, clip, dumps_arguments
from srh_core.parsers.tool_docs import ToolLike, openai_function, tool_metadata
from srh_core.types import ToolCall, ToolCallResult


@BaseParser.register("openai")
class OpenAIParser(BaseParser):
    """Normalises provider-native tool calls into :class:`ToolCall`."""

    resend_hint = "Call the tools again with valid JSON arguments if you still need them."

    def format_tools(self, tools: Sequence[ToolLike] | None = None) -> list[dict[str, Any]]:
        """Return the native function-tool list for the ``tools=`` request field."""
        metadata = [tool_metadata(tool) for tool in tools] if tools is not None else self.tools
        return [openai_function(item) for item in metadata]

    def _extract(self, response: Any) -> Iterator[ToolCall | ParseIssue]:
        for item in native_call_items(response):
            yield self._read_item(item)

    def _read_item(self, item: Mapping[str, Any]) -> ToolCall | ParseIssue:
        function = item.get("function") if isinstance(item.get("function"), Mapping) else item
        name = function.get("name")
        call_id = _call_id(item)
        arguments = function.get("arguments")
        raw_str = arguments if isinstance(arguments, str) else None
        if not isinstance(name, str) or not name:
            return ParseIssue("malformed", "A native tool call has no function name.",
                              raw=clip(str(dict(item))), call_id=call_id)
        raw_text = raw_str if raw_str is not None else str(arguments)
        decoded = decode_arguments(arguments, tool_name=name, raw=raw_text, call_id=call_id)
        if isinstance(decoded, ParseIssue):
            return decoded
        return ToolCall(name=name, params=decoded, id=call_id, raw=dict(item), raw_str=raw_str)

    def assistant_message(self, content: str, calls: Sequence[ToolCall]) -> dict[str, Any]:
        """The assistant message with a native ``tool_calls`` list (omitted when empty)."""
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if calls:
            message["tool_calls"] = [
                {"id": call.id, "type": "function",
                 "function": {"name": call.name, "arguments": dumps_arguments(call.params)}}
                for call in calls
            ]
        return message

    def format_tool_result_messages(
        self, calls: Sequence[ToolCall], results: Sequence[ToolCallResult]
    ) -> list[dict[str, Any]]:
        """One ``role: tool`` message per call, answering its ``tool_call_id``."""
        check_pairs(calls, results)
        return [{"role": "tool", "tool_call_id": call.id, "content": result.result_str}
                for call, result in zip(calls, results, strict=True)]


def _call_id(item: Mapping[str, Any]) -> str | None:
    """Chat calls carry ``id``; Responses items carry ``call_id`` (their ``id`` is the item's)."""
    value = item.get("call_id") or (item.get("id") if item.get("type") != "function_call" else None)
    return value if isinstance(value, str) and value else None


def native_call_items(response: Any) -> list[Mapping[str, Any]]:
    """The native call entries of a response in any supported shape, as mappings."""
    response = _plain(response)
    if isinstance(response, Mapping):
        if isinstance(response.get("tool_calls"), list):
            response = response["tool_calls"]
        elif isinstance(response.get("output"), list):
            response = [item for item in response["output"]
                        if isinstance(item, Mapping) and item.get("type") == "function_call"]
        else:
            response = [response] if ("function" in response or "name" in response) else []
    if not isinstance(response, list):
        return []
    return [item for item in (_plain(entry) for entry in response) if isinstance(item, Mapping)]


def _plain(value: Any) -> Any:
    """SDK objects (pydantic models) to plain dicts; everything else unchanged."""
    if isinstance(value, (str, bytes, Mapping, list)) or value is None:
        return value
    for method in ("to_dict", "model_dump"):
        if callable(getattr(value, method, None)):
            try:
                return getattr(value, method)()
            except TypeError:
                continue
    return value

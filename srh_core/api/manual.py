"""``ManualAPI``: a human plays the model, for debugging prompts.

The conversation (tool docs included) is printed; the human types each of
the K responses, ending each with a line holding a single ``.``. Responses
are parsed exactly like a model's, so the prompt, the calling convention and
the parser can be checked end to end without a network.
"""

from __future__ import annotations

import sys
from collections.abc import Generator, Mapping, Sequence
from typing import Any, TextIO

from srh_core.api.base import BaseAPI, Messages
from srh_core.api.call_result import SampleDelta
from srh_core.api.cancel import CancelToken
from srh_core.api.options import RequestOptions
from srh_core.api.response import CallSummary, ModelResponse, Usage
from srh_core.errors import ConfigurationError, ModelRequestError
from srh_core.parsers import ToolLike, ToolParserName

END_OF_RESPONSE = "."
"""A line holding only this ends one typed response."""
MAX_TYPED_RESPONSE_CHARS = 4_000_000
"""Longest typed response (a model's is at most ~1M tokens): stdin may never end."""


@BaseAPI.register("manual")
class ManualAPI(BaseAPI):
    """Reads responses typed at the terminal (or from any text stream).

    Args:
        model: Label recorded as the model name.
        tool_list: Tools the human may call.
        tool_parser_name: A prompt-based mode (``text``, ``json`` or ``xml``).
        environment: Session settings (unused, kept for the common interface).
        input_stream: Where responses are read from (default ``sys.stdin``).
        output_stream: Where the prompt is written (default ``sys.stdout``).
    """

    def __init__(
        self,
        model: str | None = "manual",
        tool_list: Sequence[ToolLike] | None = None,
        tool_parser_name: ToolParserName = "text",
        environment: Mapping[str, str] | None = None,
        *,
        input_stream: TextIO | None = None,
        output_stream: TextIO | None = None,
    ) -> None:
        if tool_parser_name == "openai":
            raise ConfigurationError(
                "ManualAPI needs a prompt-based tool parser ('text', 'json' or 'xml'): a human "
                "cannot send native function calls. Got 'openai' instead.",
                setting="tool_parser_name")
        super().__init__(model or "manual", tool_list, tool_parser_name, environment)
        self.input_stream = input_stream
        self.output_stream = output_stream

    def _generate(self, messages: Messages, n: int, options: RequestOptions,
                  token: CancelToken) -> Generator[SampleDelta, None, CallSummary]:
        return self._ask(self.add_tool_description(messages), n, token)

    def _ask(self, conversation: Messages, n: int,
             token: CancelToken) -> Generator[SampleDelta, None, CallSummary]:
        output = self.output_stream or sys.stdout
        model = str(self.model)
        output.write(render_conversation(conversation))
        responses = []
        for sample in range(1, n + 1):
            token.raise_if_cancelled(self.provider, model)
            output.write(f"\n=== Response {sample}/{n}: type it, then a line with a single "
                         f"'{END_OF_RESPONSE}' ===\n")
            output.flush()
            content = self._read_response(sample)
            outcome = self.parser.parse_response_detailed(content)
            responses.append(ModelResponse(
                content=content, tool_calls=tuple(outcome.calls),
                message=self.parser.assistant_message(content, outcome.calls),
                finish_reason="stop", parse_issues=tuple(outcome.errors), sample=sample))
            yield SampleDelta(sample, content, list(outcome.calls))
        return CallSummary(tuple(responses), Usage(price=0.0), self.provider, model)

    def _read_response(self, sample: int) -> str:
        stream = self.input_stream or sys.stdin
        lines: list[str] = []
        left = MAX_TYPED_RESPONSE_CHARS
        while line := stream.readline(left + 3):  # past the limit, with room for ".\r\n"
            text = line.rstrip("\r\n")
            if text.strip() == END_OF_RESPONSE:
                return "\n".join(lines)
            left -= len(line)
            if left < 0:
                raise ModelRequestError(
                    f"Response {sample} goes on past {MAX_TYPED_RESPONSE_CHARS} characters "
                    f"without a line holding a single {END_OF_RESPONSE!r}; is the input the "
                    "right stream?", provider=self.provider, model=str(self.model))
            lines.append(text)
        if not lines:
            raise ModelRequestError(f"The input ended before response {sample} was typed.",
                                    provider=self.provider, model=str(self.model))
        return "\n".join(lines)


def render_conversation(messages: Sequence[Mapping[str, Any]]) -> str:
    """The conversation as plain text, one block per message."""
    blocks = []
    for message in messages:
        header = f"--- [{message.get('role')}]"
        if message.get("tool_call_id"):
            header += f" (tool_call_id={message['tool_call_id']})"
        blocks.append(f"{header}\n{message.get('content') or ''}")
    return "\n".join(blocks) + "\n"

"""A scripted model for agent tests.

Each call of the agent consumes one scripted step: a list of K replies
(text in the parser's prompt format, or a :class:`Truncated` marker). The
model fails loudly on a call the script did not plan and on steps left
unused (``assert_consumed``), so a test states exactly what the agent asks.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Any

from srh_core.api import BaseAPI
from srh_core.api.call_result import SampleDelta
from srh_core.api.response import CallSummary, ModelResponse, Usage
from srh_core.errors import ModelResponseTruncatedError


@dataclass(frozen=True)
class Truncated:
    """A reply cut by the length limit after ``text``."""

    text: str


class ScriptedAPI(BaseAPI):
    """Replays scripted replies; records every prompt it was sent."""

    def __init__(self, steps: Sequence[Sequence[str | Truncated]], tool_list: Any = None,
                 tool_parser_name: str = "text") -> None:
        super().__init__("scripted", tool_list, tool_parser_name)
        self.steps = [list(step) for step in steps]
        self.prompts: list[list[dict[str, Any]]] = []
        self.options: list[dict[str, Any]] = []

    def _generate(self, messages: Any, n: int, options: Any, token: Any
                  ) -> Generator[SampleDelta, None, CallSummary]:
        self.prompts.append([dict(m) for m in messages])
        self.options.append({"n": n, "seed": getattr(options, "seed", None)})
        if not self.steps:
            raise AssertionError(f"unexpected model call #{len(self.prompts)}: script is empty")
        step = self.steps.pop(0)
        if len(step) != n:
            raise AssertionError(f"script step has {len(step)} replies but K={n} were asked")
        responses = [self._response(reply, k) for k, reply in enumerate(step, 1)]
        for response in responses:
            yield SampleDelta(response.sample, response.content, list(response.tool_calls))
        cut = next((r for r in responses if r.finish_reason == "length"), None)
        usage = Usage(prompt_tokens=10 * n, completion_tokens=5 * n, total_tokens=15 * n)
        if cut is not None:
            error = ModelResponseTruncatedError(
                "cut by the length limit", partial_message=cut.content,
                tool_calls=list(cut.tool_calls), usage=usage.to_dict(), sample=cut.sample)
            error.responses = [r for r in responses if r is not cut]  # complete siblings
            raise error
        return CallSummary(tuple(responses), usage, self.provider, "scripted")

    def _response(self, reply: str | Truncated, k: int) -> ModelResponse:
        text = reply.text if isinstance(reply, Truncated) else reply
        outcome = self.parser.parse_response_detailed(text)
        return ModelResponse(
            content=text, tool_calls=tuple(outcome.calls),
            message=self.parser.assistant_message(text, outcome.calls),
            finish_reason="length" if isinstance(reply, Truncated) else "stop",
            parse_issues=tuple(outcome.errors), sample=k)

    def assert_consumed(self) -> None:
        assert not self.steps, f"{len(self.steps)} scripted step(s) were never requested"

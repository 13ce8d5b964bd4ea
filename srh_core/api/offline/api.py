"""OfflineAPI: the policy behind the model-adapter interface."""

from __future__ import annotations

import html
import json
from collections.abc import Generator, Mapping, Sequence
from typing import Any

import numpy as np

from srh_core.api.base import BaseAPI, Messages
from srh_core.api.call_result import SampleDelta
from srh_core.api.cancel import CancelToken
from srh_core.api.offline.moves import Move
from srh_core.api.offline.policy import Proposal, plan_step
from srh_core.api.offline.reader import ConversationView, read_conversation
from srh_core.api.offline.screening import Planner, screened_plan
from srh_core.api.offline.search_step import SECONDS_SETTING, configured_seconds, with_search
from srh_core.api.offline.structured import structured_plan
from srh_core.api.options import RequestOptions
from srh_core.api.response import CallSummary, ModelResponse, Usage
from srh_core.parsers import ToolLike, ToolParserName, tool_metadata


@BaseAPI.register("offline")
class OfflineAPI(BaseAPI):
    """Rule-based proposer with the adapter interface of a model.

    Args:
        model: Label recorded as the model name ("offline-policy").
        tool_list: Tools it may call (calls to others are never made).
        tool_parser_name: Format of the calls it writes.
        environment: Unused (the common adapter interface).
        seed: Default seed when a request carries none.
    """

    def __init__(self, model: str | None = None, tool_list: Sequence[ToolLike] | None = None,
                 tool_parser_name: ToolParserName = "text",
                 environment: Mapping[str, str] | None = None, *, seed: int = 0) -> None:
        super().__init__(model or "offline-policy", tool_list, tool_parser_name, environment)
        self.seed = seed
        self.available_tools = {tool.name for tool in self.tool_metadata()}

    def tool_metadata(self) -> list[Any]:
        return [tool_metadata(tool) for tool in (self.tool_list or [])]

    def _generate(self, messages: Messages, n: int, options: RequestOptions,
                  token: CancelToken) -> Generator[SampleDelta, None, CallSummary]:
        view = read_conversation(messages, self.parser)
        seed = self.seed if options.seed is None else options.seed
        rng = np.random.default_rng(seed)
        proposals = (structured_plan(messages, view, n, rng)
                     or screened_plan(messages, view, n, rng, self.tool_metadata(),
                                      plan=self._plan_with_search(messages)))
        responses = []
        for sample, proposal in enumerate(proposals, 1):
            token.raise_if_cancelled(self.provider, str(self.model))
            response = self._response(proposal, sample)
            responses.append(response)
            yield SampleDelta(sample, response.content, list(response.tool_calls))
        return CallSummary(tuple(responses), Usage(price=0.0), self.provider, str(self.model))

    def _plan_with_search(self, messages: Messages) -> Planner:
        """The policy's plan, plus the search call when it is due (see ``search_step``)."""
        def plan(view: ConversationView, n: int, rng: np.random.Generator
                 ) -> tuple[Proposal, ...]:
            return with_search(plan_step(view, n, rng), view, messages, self.available_tools,
                               configured)

        configured = configured_seconds(self.getenv(SECONDS_SETTING))

        return plan

    def _response(self, proposal: Proposal, sample: int) -> ModelResponse:
        moves = [m for m in proposal.moves if m.tool in self.available_tools]
        if self.native_tools:
            message = {"role": "assistant", "content": proposal.text,
                       "tool_calls": [_native(move, i) for i, move in enumerate(moves, 1)]}
            outcome = self.parser.parse_response_detailed(message)
            content = proposal.text
        else:
            content = proposal.text + render_calls(self.tool_parser_name, moves)
            outcome = self.parser.parse_response_detailed(content)
        return ModelResponse(
            content=content, tool_calls=tuple(outcome.calls),
            message=self.parser.assistant_message(content, outcome.calls),
            finish_reason="tool_calls" if outcome.calls else "stop",
            parse_issues=tuple(outcome.errors), sample=sample)


def _native(move: Move, index: int) -> dict[str, Any]:
    return {"id": f"call_{index}", "type": "function",
            "function": {"name": move.tool, "arguments": json.dumps(move.params)}}


def render_calls(mode: str, moves: Sequence[Move]) -> str:
    """The calls written in a prompt-based format (text, json or xml)."""
    if not moves:
        return ""
    if mode == "json":
        body = json.dumps([{"name": m.tool, "arguments": m.params} for m in moves], indent=1)
        return f"\n```json\n{body}\n```"
    if mode == "xml":
        return "\n" + "\n".join(_xml_call(move) for move in moves)
    return "\n" + "\n".join(f"CALL {m.tool} {json.dumps(m.params)}" for m in moves)


def _xml_call(move: Move) -> str:
    params = "".join(
        f'<param name="{name}">'
        f"{html.escape(value if isinstance(value, str) else json.dumps(value), quote=False)}"
        "</param>" for name, value in move.params.items())
    return f'<tool_call name="{move.tool}">{params}</tool_call>'

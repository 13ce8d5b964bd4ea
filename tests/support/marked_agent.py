"""An SRAgent subclass for the parity tests: it overrides opening, recording and candidate hooks.

It lives in an importable module because a Celery worker rebuilds the agent
from its class's import path (``tests.support.marked_agent:MarkedAgent``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from srh_core.agent import SRAgent
from srh_core.api import ModelResponse
from srh_core.interactive.agent import SRAgentInteractive
from srh_core.types import CandidateRecord, ParentLink, ToolCallResult

PROMPT_MARK = "[marked by MarkedAgent]"


class MarkedAgent(SRAgent):
    """Marks every prompt, node usage record, step usage record and pooled candidate."""

    def record_llm_result(self, llm_result: Mapping[str, Any], R: int, L: int, C: int
                          ) -> dict[str, Any] | None:
        usage = super().record_llm_result(llm_result, R, L, C) or {}
        return {**usage, "step_mark": f"R{R}-C{C}-L{L}-{len(llm_result['responses'])}"}

    def push_candidate(self, record: CandidateRecord) -> None:
        super().push_candidate(replace(record, details={**record.details,
                                                        "pushed_by": type(self).__name__}))

    def prepare_model_messages(self, buffer: list[dict[str, Any]], R: int, L: int, C: int
                               ) -> list[dict[str, Any]]:
        prompt = super().prepare_model_messages(buffer, R, L, C)
        return [*prompt, {"role": "user", "content": f"{PROMPT_MARK} R{R} C{C} L{L}"}]

    def record_sample(self, response: ModelResponse, results: Sequence[ToolCallResult],
                      parents: Sequence[ParentLink], prompt: list[dict[str, Any]] | None,
                      usage: Mapping[str, Any] | None, *, R: int, C: int, L: int, K: int
                      ) -> bool:
        marked = {**(usage or {}), "mark": f"R{R}-C{C}-L{L}-K{K}"}
        return super().record_sample(response, results, parents, prompt, marked,
                                     R=R, C=C, L=L, K=K)


class InteractiveMarkedAgent(MarkedAgent, SRAgentInteractive):
    """MarkedAgent with the researcher's controls (the pause parity test)."""

"""Benchmark-only tool and model, imported by the benchmark's workers (``SRH_TASK_MODULES``).

- ``sleep_probe``: a tool that only sleeps (no CPU), the unit of the control-plane
  benchmark: its ideal throughput on W worker threads is W / seconds calls per second;
- ``bench-sleep``: a model that answers at once, every sample calling ``sleep_probe``
  ``SRH_BENCH_CALLS`` times (default 4), so a run's cost is the harness's, not a model's.
"""

from __future__ import annotations

import os
import time
from collections.abc import Generator
from typing import Any

from srh_core.api import BaseAPI
from srh_core.api.call_result import SampleDelta
from srh_core.api.response import CallSummary, ModelResponse, Usage
from srh_core.tools.base import BaseTool

CALLS_ENV = "SRH_BENCH_CALLS"
SLEEP_ENV = "SRH_BENCH_SLEEP"


@BaseTool.register("sleep_probe")
class SleepProbe(BaseTool):
    def execute(self, seconds: float = 0.05) -> dict[str, Any]:
        """Sleep, then answer (no CPU: only the control plane is measured).

        Args:
            seconds: How long to sleep.
        """
        time.sleep(seconds)
        return {"slept": seconds}


@BaseAPI.register("bench-sleep")
class SleepCallingAPI(BaseAPI):
    """Answers every request at once with sleep_probe calls (text tool-call format)."""

    def __init__(self, model: str | None = None, tool_list: Any = None,
                 tool_parser_name: str = "text", environment: Any = None) -> None:
        super().__init__(model or "bench-sleep", tool_list, tool_parser_name, environment)

    def _generate(self, messages: Any, n: int, options: Any, token: Any
                  ) -> Generator[SampleDelta, None, CallSummary]:
        calls = int(os.environ.get(CALLS_ENV, "4"))
        seconds = float(os.environ.get(SLEEP_ENV, "0.05"))
        text = "\n".join(f'CALL sleep_probe {{"seconds": {seconds}}}' for _ in range(calls))
        responses = []
        for k in range(1, n + 1):
            outcome = self.parser.parse_response_detailed(text)
            responses.append(ModelResponse(
                content=text, tool_calls=tuple(outcome.calls),
                message=self.parser.assistant_message(text, outcome.calls),
                finish_reason="stop", sample=k))
            yield SampleDelta(k, text, list(outcome.calls))
        return CallSummary(tuple(responses), Usage(), self.provider, "bench-sleep")

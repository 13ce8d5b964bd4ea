"""Test-only tool and model for the cluster tests, imported by the test's workers.

Workers load this module through ``SRH_TASK_MODULES``, so the ``slow_probe``
and ``cancellable_wait`` (tests/support/cancellable_wait.py) tools and the ``test-slow``
and ``test-cancellable`` providers exist on both sides.
The provider counts its requests per sampling seed in Redis (``srh-test:requests``), which is how
a test proves that a finished step was never sampled again, and it can be
made slow (``SRH_TEST_MODEL_DELAY``) so a test can kill a worker mid-request.
With ``SRH_TEST_COUNT_PARSES`` set, every parse of a candidate formula (the one entry point,
``srh_core.agent.candidates.candidate_from_entry``) is counted in Redis per node and formula
(``srh-test:parses``), which is how a test proves a sample's formulas are parsed once.
"""

from __future__ import annotations

import os
import time
from collections.abc import Generator
from typing import Any

import redis

from srh_core.agent import candidates
from srh_core.api import BaseAPI
from srh_core.api.call_result import SampleDelta
from srh_core.api.response import CallSummary, ModelResponse, Usage
from srh_core.tools.base import BaseTool
from tests.support import cancellable_wait  # noqa: F401 - registers the tool on workers

REQUESTS_KEY = "srh-test:requests"
PARSES_KEY = "srh-test:parses"
COUNT_PARSES_ENV = "SRH_TEST_COUNT_PARSES"
MODEL_DELAY_ENV = "SRH_TEST_MODEL_DELAY"
PROBE_SECONDS = 1.0
FORMULAS = ("x1*x2**2", "x1*x2", "x1 + x2", "x2**2")


@BaseTool.register("slow_probe")
class SlowProbe(BaseTool):
    def execute(self, seconds: float = PROBE_SECONDS) -> dict[str, Any]:
        """Wait, then answer (a stand-in for an expensive analysis).

        Args:
            seconds: How long to wait.
        """
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            time.sleep(0.05)
        return {"slept": seconds}


@BaseAPI.register("test-slow")
class SlowScriptedAPI(BaseAPI):
    """Deterministic replies: a slow probe plus one formula per sample."""

    def __init__(self, model: str | None = None, tool_list: Any = None,
                 tool_parser_name: str = "text", environment: Any = None) -> None:
        super().__init__(model or "test-slow", tool_list, tool_parser_name, environment)

    def _generate(self, messages: Any, n: int, options: Any, token: Any
                  ) -> Generator[SampleDelta, None, CallSummary]:
        url = os.environ.get("SRH_REDIS_URL") or os.environ.get("SRH_BROKER_URL")
        if url:
            redis.Redis.from_url(url).hincrby(REQUESTS_KEY, str(options.seed), 1)
        time.sleep(float(os.environ.get(MODEL_DELAY_ENV, "0")))
        responses = []
        for k in range(1, n + 1):
            formula = FORMULAS[(k + (options.seed or 0)) % len(FORMULAS)]
            text = (f'CALL slow_probe {{"seconds": {PROBE_SECONDS}}}\n'
                    f'CALL evaluate_formula {{"f": "{formula}"}}')
            outcome = self.parser.parse_response_detailed(text)
            responses.append(ModelResponse(
                content=text, tool_calls=tuple(outcome.calls),
                message=self.parser.assistant_message(text, outcome.calls),
                finish_reason="stop", sample=k))
            yield SampleDelta(k, text, list(outcome.calls))
        return CallSummary(tuple(responses), Usage(), self.provider, "test-slow")


@BaseAPI.register("test-cancellable")
class CancellableSlowAPI(BaseAPI):
    """A model request that can be cut: it waits on the call's cancel token, then answers.

    The model name says how long it waits (``wait-5``: 5 s); a conversation
    whose last message is the harness's force-pause notice is answered at once.
    Each sample evaluates one formula.
    """

    def __init__(self, model: str | None = None, tool_list: Any = None,
                 tool_parser_name: str = "text", environment: Any = None) -> None:
        super().__init__(model or "wait-0", tool_list, tool_parser_name, environment)
        self.delay = float(str(self.model).removeprefix("wait-"))

    def _generate(self, messages: Any, n: int, options: Any, token: Any
                  ) -> Generator[SampleDelta, None, CallSummary]:
        last = str(messages[-1].get("content") if messages else "")
        if "force-paused" not in last and token.wait(self.delay):
            token.raise_if_cancelled(self.provider, str(self.model))
        responses = []
        for k in range(1, n + 1):
            formula = FORMULAS[(k + (options.seed or 0)) % len(FORMULAS)]
            text = f'CALL evaluate_formula {{"f": "{formula}"}}'
            outcome = self.parser.parse_response_detailed(text)
            responses.append(ModelResponse(
                content=text, tool_calls=tuple(outcome.calls),
                message=self.parser.assistant_message(text, outcome.calls),
                finish_reason="stop", sample=k))
            yield SampleDelta(k, text, list(outcome.calls))
        return CallSummary(tuple(responses), Usage(), self.provider, str(self.model))


METERED_USAGE = Usage(prompt_tokens=100, completion_tokens=20, total_tokens=120,
                      cached_tokens=40)
"""What one ``test-metered`` request reports (per request, whatever n is)."""


@BaseAPI.register("test-metered")
class MeteredAPI(BaseAPI):
    """Deterministic replies that report token usage, like a paid provider (no network).

    Each request answers n samples (one formula each) and reports
    :data:`METERED_USAGE`, so budgets and accounting can be tested on both runtimes.
    """

    def __init__(self, model: str | None = None, tool_list: Any = None,
                 tool_parser_name: str = "text", environment: Any = None) -> None:
        super().__init__(model or "metered-1", tool_list, tool_parser_name, environment)

    def _generate(self, messages: Any, n: int, options: Any, token: Any
                  ) -> Generator[SampleDelta, None, CallSummary]:
        responses = []
        for k in range(1, n + 1):
            formula = FORMULAS[(k + len(messages)) % len(FORMULAS)]
            text = f'CALL evaluate_formula {{"f": "{formula}"}}'
            outcome = self.parser.parse_response_detailed(text)
            responses.append(ModelResponse(
                content=text, tool_calls=tuple(outcome.calls),
                message=self.parser.assistant_message(text, outcome.calls),
                finish_reason="stop", sample=k))
            yield SampleDelta(k, text, list(outcome.calls))
        return CallSummary(tuple(responses), METERED_USAGE, self.provider, str(self.model))


def _count_parses() -> None:
    """Count each candidate parse in this worker (see the module's docstring)."""
    url = os.environ.get("SRH_REDIS_URL") or os.environ.get("SRH_BROKER_URL")
    if not os.environ.get(COUNT_PARSES_ENV) or not url:
        return
    client = redis.Redis.from_url(url)
    parse = candidates.candidate_from_entry

    def counted(entry: Any, node_id: str, target: str | None, tool: str | None) -> Any:
        client.hincrby(PARSES_KEY, f"{node_id}|{entry.get('formula')}", 1)
        return parse(entry, node_id, target, tool)

    candidates.candidate_from_entry = counted


_count_parses()

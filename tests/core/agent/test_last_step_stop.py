"""A time limit reached during a branch's last step does not leave the branch to resume.

The branch has run all its steps: it is done, whatever the clock says after.
Were it recorded as stopped by the time limit (a resumable stop), ``srh
resume`` would lift the stop and run a step past the depth (the fresh-clone
CI caught a resumed run with 26 nodes for C x L x K = 24). One place decides
it for both runtimes, ``SRAgent.close_step``.
"""

from __future__ import annotations

from typing import Any

import pytest

from srh_core.agent import SRAgent
from srh_core.agent.outcome import STOP_DEPTH, STOP_TIME_LIMIT
from srh_core.agent.steps import sample_results
from srh_core.problems import load_suite


class TimeUp(SRAgent):
    """Every step ends with the run's time spent."""

    def finish_iteration(self, buffer: list[dict[str, Any]], R: int, L: int, C: int
                         ) -> str | None:
        return STOP_TIME_LIMIT


def closed(depth: int):
    problem = load_suite().get("feynman-I.6.2a")
    X, y = problem.sample(100, seed=0)
    agent = TimeUp(global_width=1, max_refinement_depth=depth, local_sample_size=1, seed=1,
                   run_id=f"last-step-{depth}")
    agent.run(X, {problem.output: y}, "find it")
    [branch] = agent.start_restart(R=2)
    plan = agent.open_step(branch)
    assert plan is not None
    results = [sample_results(agent, plan, K).results for K in range(1, plan.K + 1)]
    return agent.close_step(branch.copy(), plan, results)


@pytest.mark.parametrize("depth, status, reason", [(1, "done", STOP_DEPTH),
                                                   (2, "stopped", STOP_TIME_LIMIT)],
                         ids=["last-step", "earlier-step"])
def test_the_time_limit_stops_a_branch_only_before_its_last_step(depth, status, reason):
    after = closed(depth)
    assert (after.status, after.stop_reason) == (status, reason)

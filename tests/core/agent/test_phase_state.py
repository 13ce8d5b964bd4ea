"""No state on self across the phases of a step: caught where it can be, and why it matters.

On a cluster the phases of a step (open, samples, close) run in different
tasks, each with an agent built afresh; embedded they share one agent. A
hook that keeps something on ``self`` for a later phase would therefore
behave differently in the two runtimes: SRAgent warns when a phase's hooks
set an attribute, and the second test shows the difference the warning is
about (a fresh agent closing the step, as a cluster task does).
"""

from __future__ import annotations

from typing import Any

import pytest

from srh_core.agent import SRAgent
from srh_core.agent.steps import sample_results
from srh_core.errors import PhaseStateWarning
from srh_core.problems import load_suite

REMEMBERED = "[remembered from the opening]"
VALUES = {"global_width": 1, "max_refinement_depth": 1, "local_sample_size": 1, "seed": 1,
          "run_id": "phase"}


class Remembering(SRAgent):
    """Keeps the opened step on self and reads it when the step closes (unsupported)."""

    def prepare_iteration(self, buffer: list[dict[str, Any]], R: int, L: int, C: int
                          ) -> str | None:
        self.opened = (R, C, L)
        return super().prepare_iteration(buffer, R, L, C)

    def finish_iteration(self, buffer: list[dict[str, Any]], R: int, L: int, C: int
                         ) -> str | None:
        if getattr(self, "opened", None) == (R, C, L):
            buffer.append({"role": "user", "content": REMEMBERED})
        return super().finish_iteration(buffer, R, L, C)


def data() -> tuple[dict[str, Any], dict[str, Any]]:
    problem = load_suite().get("feynman-I.6.2a")
    X, y = problem.sample(100, seed=0)
    return X, {problem.output: y}


def test_a_hook_setting_an_attribute_in_a_phase_is_warned_about():
    agent = Remembering(**VALUES)
    with pytest.warns(PhaseStateWarning) as caught:
        agent.run(*data(), "find it")
    warning = caught[0].message
    assert isinstance(warning, PhaseStateWarning)
    assert (warning.agent_class, warning.phase, warning.attributes) == (
        "Remembering", "open_step", ("opened",))


def test_the_base_agent_keeps_no_state_on_self_in_any_phase(recwarn):
    SRAgent(**VALUES).run(*data(), "find it")
    assert not [w for w in recwarn if issubclass(w.category, PhaseStateWarning)]


def test_state_kept_on_self_is_lost_when_another_agent_closes_the_step():
    opener = Remembering(**VALUES)
    with pytest.warns(PhaseStateWarning):
        opener.run(*data(), "find it")
    [branch] = opener.start_restart(R=2)
    with pytest.warns(PhaseStateWarning):
        plan = opener.open_step(branch)
    assert plan is not None
    results = [sample_results(opener, plan, K).results for K in range(1, plan.K + 1)]
    # embedded: the agent that opened the step closes it
    same = opener.close_step(branch.copy(), plan, results)
    # a cluster: the closing task builds its own agent of the same class and run
    fresh = Remembering(settings=opener.settings, context=opener.context, store=opener.store,
                        problem_description=opener.problem_description)
    other = fresh.close_step(branch.copy(), plan, results)
    assert same.buffer[-1]["content"] == REMEMBERED
    assert REMEMBERED not in [message["content"] for message in other.buffer]

"""The scheduler both runtimes drain: the gate's order, what each event sends next."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from srh_core.agent import BranchState, SRAgent
from srh_core.agent.outcome import STOP_CANCELLED, STOP_EARLY
from srh_core.agent.scheduler import (
    EndBranch,
    FinishRun,
    Gate,
    Hold,
    LevelDone,
    OpenStep,
    StartRestart,
    StopBranch,
    gate,
    next_steps,
    on_branch_ended,
    on_level_done,
    on_restart_ended,
    on_step_closed,
)
from srh_core.api import ModelResponse
from srh_core.problems import load_suite
from srh_core.types import CandidateRecord, ToolCallResult


def branch(C: int, L: int, *, status: str = "running", exact: int | None = None) -> BranchState:
    return BranchState("r", 1, C, L, [], status=status, exact_level=exact)  # type: ignore[arg-type]


class Pause:
    """A pause answer that counts how often it was asked."""

    def __init__(self, held: bool) -> None:
        self.held, self.asked = held, 0

    def __call__(self) -> bool:
        self.asked += 1
        return self.held


@pytest.mark.parametrize(("siblings", "stop", "held", "expected"), [
    ([branch(1, 3), branch(2, 3)], None, False, Gate("open")),
    ([branch(1, 3), branch(2, 3)], None, True, Gate("hold")),
    ([branch(1, 3), branch(2, 3)], STOP_CANCELLED, True, Gate("stop", STOP_CANCELLED)),
    ([branch(1, 3), branch(2, 2)], None, True, Gate("wait")),
    ([branch(1, 3), branch(2, 3, exact=2)], None, True, Gate("stop", STOP_EARLY)),
], ids=["open", "paused", "a-stopped-run-never-parks", "early-stop-waits-first",
        "early-stop-ends-first"])
def test_the_gate_decides_stop_then_early_stop_then_pause(siblings, stop, held, expected):
    pause = Pause(held)
    assert gate(siblings[0], siblings, early_stop=True, stop_reason=stop, paused=pause) == expected
    assert pause.asked == (1 if expected.verdict in ("open", "hold") else 0)


def test_next_steps_opens_stops_and_holds_in_branch_order():
    states = [branch(1, 2), branch(2, 3, status="done"), branch(3, 2), branch(4, 1)]
    assert next_steps(states, early_stop=False, busy={3}) == [
        OpenStep(states[0]), EndBranch(states[1]), OpenStep(states[3])]
    assert next_steps(states, early_stop=True) == [  # branch 4 is a level behind
        EndBranch(states[1]), OpenStep(states[3])]
    stopped = next_steps(states, early_stop=True, stop_reason=STOP_CANCELLED)
    assert stopped == [StopBranch(states[0], STOP_CANCELLED), EndBranch(states[1]),
                       StopBranch(states[2], STOP_CANCELLED), StopBranch(states[3], STOP_CANCELLED)]
    pause = Pause(True)
    assert next_steps(states, early_stop=False, paused=pause) == [Hold(states[0])]
    pause = Pause(False)
    next_steps(states, early_stop=False, paused=pause)
    assert pause.asked == 1  # once per pass (asking may cost a round trip)


def test_an_early_stopped_branch_lets_the_branches_after_it_go_on():
    # branch 1 waits for nobody once branch 2 (behind it, past the exact level) is ended
    states = [branch(1, 3), branch(2, 2), branch(3, 3, exact=1)]
    actions = next_steps(states, early_stop=True)
    assert actions == [StopBranch(states[0], STOP_EARLY), StopBranch(states[1], STOP_EARLY),
                       StopBranch(states[2], STOP_EARLY)]


def test_events_of_a_branch_and_a_restart():
    assert on_step_closed(branch(1, 3), early_stop=False) == [OpenStep(branch(1, 3))]
    assert on_step_closed(branch(1, 3), early_stop=True) == [LevelDone(1, 2, 1)]
    ended = branch(1, 4, status="done")
    assert on_step_closed(ended, early_stop=True) == [EndBranch(ended)]
    assert on_branch_ended(ended, early_stop=True) == [LevelDone(1, 3, 1), LevelDone(1, 4, 1)]
    assert on_branch_ended(ended, early_stop=False) == []
    siblings = [branch(1, 3), branch(2, 3), branch(3, 2, status="done")]
    assert on_level_done(siblings, 2, early_stop=True) == [OpenStep(siblings[0]),
                                                           OpenStep(siblings[1])]
    done = [branch(1, 4, status="done"), branch(2, 4, status="done")]
    assert on_restart_ended(done, 1, max_restart=2, early_stop=True) == StartRestart(2)
    assert on_restart_ended(done, 2, max_restart=2, early_stop=True) == FinishRun()


class CountingAgent(SRAgent):
    """Counts the parses of each sample's candidates."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.parsed: list[tuple[int, int, int, int]] = []

    def sample_candidates(self, response: ModelResponse, results: Sequence[ToolCallResult],
                          *, R: int, C: int, L: int, K: int) -> list[CandidateRecord]:
        self.parsed.append((R, C, L, K))
        return super().sample_candidates(response, results, R=R, C=C, L=L, K=K)


def test_each_sample_s_candidates_are_computed_once_embedded():
    problem = load_suite().get("feynman-I.6.2a")
    X, y = problem.sample(200, seed=0)
    agent = CountingAgent(global_width=2, max_refinement_depth=2, local_sample_size=2,
                          seed=1, run_id="once", early_stop=False)
    agent.run(X, {problem.output: y}, "find it")
    assert len(agent.parsed) == agent.store.node_count == 2 * 2 * 2
    assert len(set(agent.parsed)) == len(agent.parsed)

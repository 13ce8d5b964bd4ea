"""An embedded pause is the scheduler's gate's decision, carried out by the runner.

The controls (an in-process manager) answer the gate's pause question; on a
Hold the runner lets the steps in flight end, then holds the run on its thread
until a release, and asks the gate again. The offline model answers at once, so
the only waits here are the pause's.
"""

from __future__ import annotations

import threading
import time

import pytest

from srh_core.interactive import SRAgentInteractive
from srh_core.problems import load_suite

VALUES = {"max_restart_loop": 1, "global_width": 3, "max_refinement_depth": 3,
          "local_sample_size": 2, "seed": 1, "early_stop": False}


def wait_for(condition, timeout: float = 60.0) -> bool:
    end = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > end:
            return False
        time.sleep(0.01)
    return True


@pytest.mark.parametrize("threads", [1, 3], ids=["inline", "threads"])
def test_a_pause_holds_every_branch_until_the_resume(threads):
    problem = load_suite().get("feynman-I.6.2a")
    X, y = problem.sample(200, seed=0)
    agent = SRAgentInteractive(run_id=f"held-{threads}", branch_threads=threads,
                               pause_on_tool_free=False, **VALUES)
    manager = agent.interaction_manager
    order: list[str] = []
    lock = threading.Lock()
    resumer: list[threading.Thread] = []

    def resume_once_held() -> None:
        held = wait_for(lambda: manager.status()["waiting_at_boundary"])
        with lock:
            order.append("resumed" if held else "not held")
        manager.command("resume")

    def observe(event: dict) -> None:
        with lock:
            order.append(event["event"])
        if event["event"] == "step" and not resumer:
            manager.command("pause")  # after the first step: the others see it at their gate
            resumer.append(threading.Thread(target=resume_once_held, daemon=True))
            resumer[0].start()

    agent.observers.append(observe)
    result = agent.run(X, {problem.output: y}, "find y")
    resumer[0].join(timeout=30)
    assert result["status"] == "completed"
    assert len(agent.store.records()) == 3 * 3 * 2  # every step ran after the resume
    assert order.count("held") == 1
    held = order.index("held")
    assert order[held + 1] == "resumed"  # no step ended (none was in flight) while held
    assert order.count("step") == 3 * 3
    assert [(e["payload"]["previous"], e["payload"]["current"])
            for e in manager.get_recent_events(0)["events"]
            if e["kind"] == "state_changed"][1:4] == [("running", "pausing"),
                                                      ("pausing", "paused"),
                                                      ("paused", "running")]

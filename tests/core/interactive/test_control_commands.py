"""``srh pause|resume|message|next-branch|next-restart`` on an embedded run's directory.

The run is an interactive run on a thread against the local OpenAI-compatible
server; the commands go through ``srh``'s own ``main`` (the cluster's side,
by run id, is tested in tests/workers/test_control_cluster.py).
"""

from __future__ import annotations

import json
import threading
import time

import numpy as np
import pytest

from srh_core.cli import main
from srh_core.cli.control_commands import ACTIONS, HELP
from srh_core.interactive import RunDirectoryChannel, SRAgentInteractive
from srh_core.interactive.agent import MESSAGE_PREFIX
from tests.support.openai_payloads import chat_completion, tool_call
from tests.support.openai_server import Reply

CHAT = "/v1/chat/completions"


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")


def evaluate(f: str, delay: float) -> Reply:
    call = tool_call("evaluate_formula", {"f": f})
    return Reply.json(chat_completion(content=None, tool_calls=[call]), path=CHAT, delay=delay)


def wait_until(condition, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached before the deadline"
        time.sleep(0.02)


def test_the_commands_are_registered_with_their_actions():
    assert set(ACTIONS) == set(HELP) | {"resume"}
    assert ACTIONS["next-branch"] == "next_c" and ACTIONS["next-restart"] == "next_r"


@pytest.mark.integration
def test_control_commands_steer_a_run_directory(openai_server, tmp_path, capsys):
    openai_server.script(evaluate("x1*x2", 0.6), evaluate("x1*x2**2", 0.6),
                         evaluate("x1", 0.0))
    path = tmp_path / "run"
    agent = SRAgentInteractive(llm_provider="openai", llm_model="test-model",
                               base_url=openai_server.base_url, tool_parser="openai",
                               early_stop=False, run_id="cli", save_path=str(path),
                               global_width=1, max_refinement_depth=3, tools=["evaluate_formula"])
    rng = np.random.default_rng(0)
    x1, x2 = rng.uniform(1, 5, (2, 100))
    thread = threading.Thread(target=agent.run, args=({"x1": x1, "x2": x2},
                                                      {"y": x1 * x2**2}), daemon=True)
    thread.start()
    channel = RunDirectoryChannel(path)

    def parked() -> None:
        wait_until(lambda: (channel.read_status() or {}).get("waiting_at_boundary"))

    openai_server.wait_for_requests(1, timeout=30)
    assert main(["pause", str(path)]) == 0
    assert "pause applied; run" in capsys.readouterr().out
    parked()
    assert main(["message", str(path), "Hint: square x2."]) == 0   # releases the pause
    openai_server.wait_for_requests(2, timeout=30)
    assert main(["pause", str(path)]) == 0
    parked()
    assert main(["resume", str(path), "--json"]) == 0              # live: resumes the pause
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["interaction_state"] in (
        "running", "idle")
    thread.join(timeout=30)
    assert not thread.is_alive()
    bodies = openai_server.bodies()
    hinted = [i for i, body in enumerate(bodies)
              if any(MESSAGE_PREFIX in str(m["content"]) for m in body["messages"])]
    assert hinted == [1, 2]                                        # from the next request on
    assert main(["next-branch", str(path)]) == 2                  # the run has ended
    assert "is not running" in capsys.readouterr().err
    assert main(["resume", str(path), "--json"]) == 0             # a finished run: its result
    assert json.loads(capsys.readouterr().out)["status"] == "completed"


def test_an_unknown_target_is_a_clear_error(tmp_path, capsys, monkeypatch):
    closed = "redis://127.0.0.1:1/0"  # a cluster that does not answer
    monkeypatch.setenv("SRH_REDIS_URL", closed)
    monkeypatch.setenv("SRH_BROKER_URL", closed)
    monkeypatch.setattr("srh_workers.app._app", None)
    assert main(["pause", "no-such-run"]) == 2
    error = capsys.readouterr().err
    assert "neither a run directory nor the id of a cluster run" in error
    assert "not reachable" in error
    assert main(["pause", str(tmp_path)]) == 2
    assert "not the directory of an interactive run" in capsys.readouterr().err

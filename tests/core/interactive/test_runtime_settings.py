"""Runtime settings of an interactive search: queued, taken at a step boundary, applied or refused.

The embedded run is an SRAgentInteractive on a thread against the local
OpenAI-compatible server, steered through its run directory by ``srh`` in a
subprocess; the request bodies the server recorded show which settings each
model request used (the cluster's side is in tests/workers/test_control_cluster.py).
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from srh_core.agent.runtime_settings import changed_settings
from srh_core.agent.settings import SearchSettings
from srh_core.errors import ConfigurationError
from srh_core.interactive import (
    ControlCommand,
    ControlLedger,
    InvalidCommandError,
    RunDirectoryChannel,
    SRAgentInteractive,
    SRInteractionManager,
    take_boundary,
)
from srh_core.interactive.agent import RUNTIME_SETTINGS
from srh_core.interactive.controls import BoundaryDecision
from tests.support.openai_payloads import chat_completion, tool_call
from tests.support.openai_server import Reply

CHAT = "/v1/chat/completions"


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")


def evaluate(f: str, delay: float = 0.0) -> Reply:
    call = tool_call("evaluate_formula", {"f": f})
    return Reply.json(chat_completion(content=None, tool_calls=[call]), path=CHAT, delay=delay)


def wait_until(condition, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached before the deadline"
        time.sleep(0.02)


def srh(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "srh_core", *args], capture_output=True,
                          text=True, timeout=60, check=False)


def test_a_settings_command_is_checked_and_travels_as_json():
    command = ControlCommand("settings", settings={"llm_max_tokens": 100})
    again = ControlCommand.from_dict(command.to_dict())
    assert again.settings == {"llm_max_tokens": 100} and again.id == command.id
    for bad in (None, {}, {"": 1}, {"x": float("nan")}, {"x": "y" * 5000}):
        with pytest.raises(InvalidCommandError):
            ControlCommand("settings", settings=bad)
    with pytest.raises(InvalidCommandError, match="Only a settings command"):
        ControlCommand("pause", settings={"llm_max_tokens": 100})


def test_queued_settings_survive_a_snapshot_and_are_taken_once_and_logged():
    manager = SRInteractionManager()
    manager.command("settings", settings={"llm_temperature": 0.5})   # before the start too
    manager.start_agent_execution()
    manager.command("settings", settings={"llm_max_tokens": 64}, command_id="s1")
    assert manager.status()["pending_settings"] == 2
    restored = SRInteractionManager()
    restored.restore_state(manager.export_state(), live=True)
    ledger = ControlLedger()
    first = take_boundary(restored, ledger, 1)
    assert first.taken_settings == ({"llm_temperature": 0.5}, {"llm_max_tokens": 64})
    assert not first.empty and first.messages == () and first.transition is None
    second = take_boundary(restored, ledger, 1)
    assert second.empty and second.settings_log == first.settings_log   # in force, not new
    kept = ControlLedger.from_dict(ledger.to_dict())
    assert kept.settings_log == first.settings_log
    assert BoundaryDecision.from_dict(first.to_dict()) == first
    old = manager.export_state()
    del old["queued_settings"]                                # a snapshot from before them
    assert SRInteractionManager().restore_state(old) is True


def test_the_shared_check_names_what_may_change_and_refuses_bad_values():
    settings = SearchSettings.build(llm_provider="offline")
    assert changed_settings(settings, {"llm_max_tokens": 99}, RUNTIME_SETTINGS,
                            during="a search").llm_max_tokens == 99
    with pytest.raises(ConfigurationError, match="'max_refinement_depth' cannot change during "
                       "a search") as error:
        changed_settings(settings, {"max_refinement_depth": 3}, RUNTIME_SETTINGS,
                         during="a search")
    assert error.value.setting == "max_refinement_depth"
    with pytest.raises(ConfigurationError, match="llm_temperature"):
        changed_settings(settings, {"llm_temperature": 7}, RUNTIME_SETTINGS, during="a search")


def test_queue_runtime_settings_in_process_applies_them_at_the_next_step(openai_server):
    openai_server.script(evaluate("x1"), evaluate("x1*x2"), evaluate("x1*x2**2"))
    agent = SRAgentInteractive(llm_provider="openai", llm_model="test-model",
                               base_url=openai_server.base_url, tool_parser="openai",
                               early_stop=False, run_id="rs", max_refinement_depth=3,
                               tools=["evaluate_formula"], pause_on_tool_free=False)
    with pytest.raises(ConfigurationError, match="cannot change during a search"):
        agent.queue_runtime_settings({"global_width": 2})          # nothing queued
    seen = []

    def on_event(event):
        if event["kind"] == "tool_completed" and not seen:
            seen.append(event)
            agent.queue_runtime_settings({"llm_max_tokens": 777})  # while step 1 runs
    agent.interaction_manager.add_listener(on_event)
    rng = np.random.default_rng(0)
    x1, x2 = rng.uniform(1, 5, (2, 60))
    result = agent.run({"x1": x1, "x2": x2}, {"y": x1 * x2**2})
    assert result["status"] == "completed"
    limits = [r.body.get("max_tokens", r.body.get("max_completion_tokens"))
              for r in openai_server.requests]
    assert limits == [4096, 777, 777]
    applied = [e["payload"] for e in agent.interaction_manager.get_recent_events()["events"]
               if e["kind"] == "settings_applied"]
    assert applied == [{"settings": {"llm_max_tokens": 777}, "coord": {"R": 1, "C": 1, "L": 2},
                        "previous": {"llm_max_tokens": 4096}}]


@pytest.mark.integration
def test_srh_settings_steers_a_run_directory_and_a_refused_one_lets_it_go_on(openai_server,
                                                                            tmp_path):
    openai_server.script(evaluate("x1*x2", 0.3), evaluate("x1*x2**2"), evaluate("x1"))
    path = tmp_path / "run"
    agent = SRAgentInteractive(llm_provider="openai", llm_model="test-model",
                               base_url=openai_server.base_url, tool_parser="openai",
                               early_stop=False, run_id="cli-settings", save_path=str(path),
                               max_refinement_depth=3, tools=["evaluate_formula"])
    rng = np.random.default_rng(0)
    x1, x2 = rng.uniform(1, 5, (2, 100))
    thread = threading.Thread(target=agent.run, args=({"x1": x1, "x2": x2},
                                                      {"y": x1 * x2**2}), daemon=True)
    thread.start()
    channel = RunDirectoryChannel(path)
    openai_server.wait_for_requests(1, timeout=30)
    assert srh("pause", str(path)).returncode == 0
    wait_until(lambda: (channel.read_status() or {}).get("waiting_at_boundary"))

    done = srh("settings", str(path), "llm_max_tokens=512", "llm_temperature=0.25")
    assert done.returncode == 0, done.stderr
    assert "settings applied; run" in done.stdout and "1 settings change(s) queued" in done.stdout
    for refused in (["llm_temperature=7"], ["max_refinement_depth=9"]):
        done = srh("settings", str(path), *refused)              # queued; refused at the boundary
        assert done.returncode == 0, done.stderr
    done = srh("settings", str(path), "no-equals-sign")
    assert done.returncode == 2 and "NAME=VALUE" in done.stderr and "Traceback" not in done.stderr
    assert srh("resume", str(path)).returncode == 0
    thread.join(timeout=60)
    assert not thread.is_alive()

    bodies = [r.body for r in openai_server.requests]
    assert [(b.get("max_tokens", b.get("max_completion_tokens")), b["temperature"])
            for b in bodies] == [(4096, 1.0), (512, 0.25), (512, 0.25)]
    events = channel.read_events(0)["events"]
    applied = [e["payload"] for e in events if e["kind"] == "settings_applied"]
    failed = [e["payload"] for e in events if e["kind"] == "settings_failed"]
    assert applied == [{"settings": {"llm_max_tokens": 512, "llm_temperature": 0.25},
                        "coord": {"R": 1, "C": 1, "L": 2},
                        "previous": {"llm_max_tokens": 4096, "llm_temperature": 1.0}}]
    assert [f["settings"] for f in failed] == [{"llm_temperature": 7},
                                               {"max_refinement_depth": 9}]
    assert {f["error_type"] for f in failed} == {"ConfigurationError"}
    assert "cannot change during a search" in failed[1]["error"]
    assert events[-1]["kind"] == "execution_completed"

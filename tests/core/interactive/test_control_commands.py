"""``srh pause|resume|message|next-branch|next-restart|settings`` on an embedded run's directory.

The run is an interactive run on a thread against the local OpenAI-compatible
server; the commands go through ``srh``'s own ``main`` (the cluster's side,
by run id, is tested in tests/workers/test_control_cluster.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from srh_core.agent.runtime_settings import changed_settings
from srh_core.agent.settings import SearchSettings
from srh_core.cli import main
from srh_core.cli.control_commands import ACTIONS, HELP, DirectoryTarget
from srh_core.errors import ConfigurationError
from srh_core.interactive import (
    ControlCommand,
    ControlLedger,
    InteractionManager,
    InvalidCommandError,
    RunDirectoryChannel,
    SRAgentInteractive,
    SRInteractionManager,
    take_boundary,
)
from srh_core.interactive.agent import MESSAGE_PREFIX, RUNTIME_SETTINGS
from srh_core.interactive.controls import BoundaryDecision
from tests.support.openai_payloads import chat_completion, tool_call
from tests.support.openai_server import Reply

CHAT = "/v1/chat/completions"


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")


def evaluate(f: str, delay: float = 0.0, hold: threading.Event | None = None) -> Reply:
    call = tool_call("evaluate_formula", {"f": f})
    return Reply.json(chat_completion(content=None, tool_calls=[call]), path=CHAT, delay=delay,
                      hold=hold)


def wait_until(condition, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached before the deadline"
        time.sleep(0.02)


def start_run(openai_server, path, run_id: str) -> threading.Thread:
    """An interactive run of depth 3 in ``path``, on a thread."""
    agent = SRAgentInteractive(llm_provider="openai", llm_model="test-model",
                               base_url=openai_server.base_url, tool_parser="openai",
                               early_stop=False, run_id=run_id, save_path=str(path),
                               global_width=1, max_refinement_depth=3, tools=["evaluate_formula"])
    rng = np.random.default_rng(0)
    x1, x2 = rng.uniform(1, 5, (2, 100))
    thread = threading.Thread(target=agent.run, args=({"x1": x1, "x2": x2},
                                                      {"y": x1 * x2**2}), daemon=True)
    thread.start()
    return thread


def test_the_commands_are_registered_with_their_actions():
    assert set(ACTIONS) == set(HELP) | {"resume"}
    assert ACTIONS["next-branch"] == "next_c" and ACTIONS["next-restart"] == "next_r"


@pytest.mark.integration
def test_control_commands_steer_a_run_directory(openai_server, tmp_path, capsys):
    first, second = threading.Event(), threading.Event()   # each answered after its pause
    openai_server.script(evaluate("x1*x2", hold=first), evaluate("x1*x2**2", hold=second),
                         evaluate("x1"))
    path = tmp_path / "run"
    thread = start_run(openai_server, path, "cli")
    channel = RunDirectoryChannel(path)

    def parked() -> None:
        wait_until(lambda: (channel.read_status() or {}).get("waiting_at_boundary"))

    openai_server.wait_for_requests(1, timeout=30)
    assert main(["pause", str(path)]) == 0
    assert "pause applied; run" in capsys.readouterr().out
    first.set()
    parked()
    assert main(["message", str(path), "Hint: square x2."]) == 0   # releases the pause
    openai_server.wait_for_requests(2, timeout=30)
    assert main(["pause", str(path)]) == 0
    second.set()
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


# ------------------------------------------------------------- runtime settings
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
    openai_server.script(evaluate("x1", 0.0), evaluate("x1*x2", 0.0), evaluate("x1*x2**2", 0.0))
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


def test_a_command_reports_the_status_saved_after_its_echo(tmp_path):
    """The run appends the ``command_received`` event, then saves its state: the status a
    command prints is the one saved after the echo, not whatever was on disk when the echo
    was read (``srh settings`` printed no queued change when it read in between)."""
    channel = RunDirectoryChannel(tmp_path)
    status = {"active": True, "interaction_state": "paused", "pending_settings": 0}
    channel.save_state({"status": status, "manager": {"next_sequence": 1}})
    echoed = threading.Event()

    def run_side():
        commands, _ = channel.receive(None, 10.0)
        channel.publish([{"seq": 1, "kind": "command_received",
                          "payload": {"id": commands[0].id, "accepted": True}}])
        echoed.set()
        time.sleep(0.5)  # the state is saved a moment after the event
        channel.save_state({"status": {**status, "pending_settings": 1},
                            "manager": {"next_sequence": 2}})

    thread = threading.Thread(target=run_side)
    thread.start()
    try:
        reported = DirectoryTarget(tmp_path).apply(
            ControlCommand(action="settings", settings={"llm_max_tokens": 512}))
    finally:
        thread.join(timeout=10)
    assert echoed.is_set()
    assert reported["pending_settings"] == 1


@pytest.mark.integration
def test_srh_settings_steers_a_run_directory_and_a_refused_one_lets_it_go_on(openai_server,
                                                                            tmp_path):
    first = threading.Event()      # answered once `srh pause` has returned, however slow its start
    openai_server.script(evaluate("x1*x2", hold=first), evaluate("x1*x2**2"), evaluate("x1"))
    path = tmp_path / "run"
    thread = start_run(openai_server, path, "cli-settings")
    channel = RunDirectoryChannel(path)
    openai_server.wait_for_requests(1, timeout=30)
    assert srh("pause", str(path)).returncode == 0
    first.set()
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


def test_only_the_search_manager_takes_settings_commands():
    with pytest.raises(InvalidCommandError, match="Unknown interaction action 'settings'"):
        InteractionManager().command("settings", settings={"llm_max_tokens": 9})
    with pytest.raises(InvalidCommandError, match="Only a settings command carries settings"):
        SRInteractionManager().command("message", "hi", settings={"llm_max_tokens": 9})

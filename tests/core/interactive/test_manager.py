"""The interaction managers' state machine: every transition, refusals, persistence."""

from __future__ import annotations

import threading
import time

import pytest

from srh_core.interactive import (
    InteractionManager,
    InteractionSnapshotError,
    InteractionStateError,
    InvalidCommandError,
    SRInteractionManager,
)


def drive_to(manager: InteractionManager, state: str) -> threading.Thread | None:
    """Put ``manager`` in ``state``; for "paused", a branch thread held at a boundary."""
    if state == "idle":
        return None
    manager.start_agent_execution()
    if state == "pausing":
        manager.command("pause")
    elif state == "interrupting":
        manager.command("force_pause")
    elif state == "paused":
        manager.command("pause")
        return hold_at_boundary(manager)
    return None


def hold_at_boundary(manager: InteractionManager, taken: list | None = None
                     ) -> threading.Thread:
    def boundary() -> None:
        with manager.wait() as messages:
            if taken is not None:
                taken.append([m.content for m in messages])

    thread = threading.Thread(target=boundary, daemon=True)
    thread.start()
    wait_until(lambda: manager.status()["waiting_at_boundary"])
    return thread


def wait_until(condition, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached before the deadline"
        time.sleep(0.005)


def kinds(manager: InteractionManager) -> list[str]:
    return [e["kind"] for e in manager.get_recent_events()["events"]]


# (state, action, resulting state, whether a held boundary is released)
TRANSITIONS = [
    ("running", "pause", "pausing", False),
    ("running", "force_pause", "interrupting", False),
    ("pausing", "pause", "pausing", False),
    ("pausing", "force_pause", "interrupting", False),
    ("pausing", "resume", "running", False),
    ("interrupting", "pause", "interrupting", False),
    ("interrupting", "force_pause", "interrupting", False),
    ("interrupting", "resume", "running", False),
    ("paused", "pause", "paused", False),
    ("paused", "force_pause", "paused", False),
    ("paused", "resume", "running", True),
]


@pytest.mark.parametrize(("start", "action", "end", "released"), TRANSITIONS,
                         ids=[f"{s}-{a}" for s, a, _, _ in TRANSITIONS])
def test_every_command_transition(start, action, end, released):
    manager = InteractionManager()
    thread = drive_to(manager, start)
    status = manager.command(action)
    assert status["interaction_state"] == end
    if thread is not None:
        thread.join(timeout=0.5 if released else 0.05)
        assert thread.is_alive() is not released
        if not released:
            manager.command("resume")
            thread.join(timeout=5)


REFUSED = [("idle", "pause"), ("idle", "force_pause"), ("idle", "resume"),
           ("running", "resume")]


@pytest.mark.parametrize(("state", "action"), REFUSED, ids=[f"{s}-{a}" for s, a in REFUSED])
def test_actions_that_make_no_sense_are_refused(state, action):
    manager = InteractionManager()
    drive_to(manager, state)
    before = manager.status()["last_event_seq"]
    with pytest.raises(InteractionStateError, match=f"Cannot {action.replace('_', '-')}") as info:
        manager.command(action)
    assert isinstance(info.value, RuntimeError) and info.value.state == state
    assert manager.state == state and manager.status()["last_event_seq"] == before


@pytest.mark.parametrize("action", ["stop", "Pause", "", None, "next_c"])
def test_unknown_actions_are_refused_with_the_valid_ones(action):
    manager = InteractionManager()
    manager.start_agent_execution()
    with pytest.raises(InvalidCommandError, match="expected one of message, pause"):
        manager.command(action)


def test_did_you_mean_on_a_typo():
    with pytest.raises(InvalidCommandError, match="Did you mean 'pause'"):
        InteractionManager().command("puase")


@pytest.mark.parametrize("text", [None, "", "   ", "x" * 20_001])
def test_a_message_needs_text_of_bounded_length(text):
    with pytest.raises(InvalidCommandError, match="message"):
        InteractionManager().command("message", text)


def test_messages_queue_in_every_state_and_reach_the_next_boundary():
    manager = InteractionManager()
    manager.command("message", "  before the start ")
    assert manager.start_agent_execution()[0].content == "before the start"
    manager.command("message", "first")
    manager.command("message", "second")
    with manager.wait() as messages:
        assert [m.content for m in messages] == ["first", "second"]
    with manager.wait() as messages:
        assert messages == []
    assert manager.state == "running"


def test_a_message_releases_a_paused_boundary_and_is_delivered_there():
    manager = InteractionManager()
    taken: list = []
    manager.start_agent_execution()
    manager.command("pause")
    thread = hold_at_boundary(manager, taken)
    assert manager.status()["paused"] and manager.status()["waiting_branches"] == 1
    manager.command("message", "try a power law")
    thread.join(timeout=5)
    assert taken == [["try a power law"]] and manager.state == "running"


def test_a_message_queued_while_pausing_means_the_boundary_does_not_hold():
    manager = InteractionManager()
    manager.start_agent_execution()
    manager.command("pause")
    manager.command("message", "go on with this")
    with manager.wait() as messages:
        assert [m.content for m in messages] == ["go on with this"]
    assert manager.state == "running"


def test_request_pause_only_acts_while_running():
    manager = InteractionManager()
    manager.request_pause()
    assert manager.state == "idle"
    manager.start_agent_execution()
    manager.request_pause()
    assert manager.state == "pausing"
    manager.command("force_pause")
    manager.request_pause()
    assert manager.state == "interrupting"


def test_an_interrupted_run_pauses_at_the_boundary():
    manager = InteractionManager()
    manager.start_agent_execution()
    manager.command("force_pause")
    assert manager.cancellation_signal.is_set()
    thread = hold_at_boundary(manager)
    assert manager.state == "paused" and not manager.cancellation_signal.is_set()
    manager.command("resume")
    thread.join(timeout=5)
    assert not thread.is_alive()


def test_every_waiting_branch_is_released_and_messages_go_to_one():
    manager = InteractionManager()
    manager.start_agent_execution()
    manager.command("pause")
    taken: list = []
    threads = [hold_at_boundary(manager, taken)]
    threads.append(threading.Thread(target=lambda: taken.append(
        [m.content for m in manager.wait().__enter__()]), daemon=True))
    threads[-1].start()
    wait_until(lambda: manager.status()["waiting_branches"] == 2)
    manager.command("message", "hint")
    for thread in threads:
        thread.join(timeout=5)
        assert not thread.is_alive()
    assert sorted(taken) == [[], ["hint"]]


def test_lifecycle_calls_in_the_wrong_state_are_refused():
    manager = InteractionManager()
    with pytest.raises(InteractionStateError, match="no execution is running"):
        with manager.wait():
            pass
    manager.start_agent_execution()
    with pytest.raises(InteractionStateError, match="Cannot start an agent execution while "
                                                   "running"):
        manager.start_agent_execution()
    manager.command("pause")
    thread = hold_at_boundary(manager)
    with pytest.raises(InteractionStateError, match="paused at a boundary"):
        manager.finish_agent_execution()
    manager.command("resume")
    thread.join(timeout=5)
    manager.finish_agent_execution()
    assert manager.state == "idle"


def test_force_pause_cancels_every_registered_operation_and_late_ones_at_once():
    manager = InteractionManager()
    manager.start_agent_execution()
    cancelled: list[str] = []
    with manager.cancellable(lambda: cancelled.append("model")), \
            manager.cancellable(lambda: cancelled.append("tools")):
        manager.command("pause")
        assert cancelled == []
        manager.command("force_pause")
        assert sorted(cancelled) == ["model", "tools"]
        with manager.cancellable(lambda: cancelled.append("late")):
            assert cancelled[-1] == "late"
    manager.command("resume")
    with manager.cancellable(lambda: cancelled.append("after")):
        pass
    assert "after" not in cancelled


def test_a_failing_cancel_callback_does_not_break_the_command(caplog):
    manager = InteractionManager()
    manager.start_agent_execution()

    def broken() -> None:
        raise OSError("socket already closed")

    with manager.cancellable(broken):
        assert manager.command("force_pause")["interaction_state"] == "interrupting"
    assert "cancellation callback failed" in caplog.text


def test_events_record_commands_and_state_changes():
    manager = InteractionManager()
    manager.start_agent_execution()
    manager.command("pause", command_id="c1")
    events = manager.get_recent_events()["events"]
    assert [e["kind"] for e in events] == ["state_changed", "state_changed", "command_received"]
    assert events[1]["payload"] == {"previous": "running", "current": "pausing"}
    assert events[2]["payload"] == {"action": "pause", "accepted": True, "id": "c1"}
    assert [e["seq"] for e in events] == [1, 2, 3]
    with pytest.raises(ValueError, match="Unsupported interaction event kind 'node_added'"):
        manager.publish_event("node_added", {})  # type: ignore[arg-type]


def test_status_snapshot():
    manager = SRInteractionManager()
    manager.start_agent_execution()
    manager.command("message", "m")
    manager.command("next_c")
    manager.command("force_pause")
    status = manager.status()
    assert {k: status[k] for k in status if k != "server_time"} == {
        "interaction_state": "interrupting", "paused": True, "waiting_at_boundary": False,
        "waiting_branches": 0, "force_pause_requested": True, "pending_messages": 1,
        "last_event_seq": status["last_event_seq"], "pending_transition": "next_c",
        "pending_settings": 0}


# ------------------------------------------------------------- SR transitions
def test_sr_transitions_keep_only_the_newest_and_are_consumed_once():
    manager = SRInteractionManager()
    manager.start_agent_execution()
    manager.command("next_c")
    manager.command("next_r")
    assert manager.status()["pending_transition"] == "next_r"
    assert manager.consume_search_transition() == "next_r"
    assert manager.consume_search_transition() is None


@pytest.mark.parametrize("action", ["next_c", "next_r"])
def test_sr_transition_releases_a_paused_boundary(action):
    manager = SRInteractionManager()
    manager.start_agent_execution()
    manager.command("pause")
    thread = hold_at_boundary(manager)
    manager.command(action)
    thread.join(timeout=5)
    assert not thread.is_alive() and manager.consume_search_transition() == action


@pytest.mark.parametrize("action", ["next_c", "next_r"])
def test_sr_transition_is_refused_while_idle(action):
    with pytest.raises(InteractionStateError, match="no execution is running"):
        SRInteractionManager().command(action)


def test_a_pending_transition_means_the_boundary_does_not_hold():
    manager = SRInteractionManager()
    manager.start_agent_execution()
    manager.command("pause")
    manager.command("next_c")
    with manager.wait() as messages:
        assert messages == []
    assert manager.state == "running" and manager.consume_search_transition() == "next_c"


# ------------------------------------------------------------ export/restore
def test_export_restore_round_trip_keeps_messages_timeline_and_sequence():
    manager = SRInteractionManager(event_capacity=3)
    manager.command("message", "kept")
    manager.start_agent_execution()
    manager.command("message", "queued")
    manager.command("next_r")
    snapshot = manager.export_state()
    assert snapshot["version"] == 1 and len(snapshot["events"]) == 3

    restored = SRInteractionManager(event_capacity=10)
    assert restored.restore_state(snapshot) is True  # it was running: an interruption
    assert restored.state == "idle"
    assert restored.status()["pending_messages"] == 1
    assert restored.status()["pending_transition"] == "next_r"
    events = restored.get_recent_events()["events"]
    assert events[-2]["payload"]["restored_after_restart"] is True
    assert events[-1]["payload"] == {"previous": "running", "current": "idle",
                                     "interrupted": True}
    assert events[-1]["seq"] == snapshot["next_sequence"] + 1
    assert restored.start_agent_execution()[0].content == "queued"


def test_restoring_an_idle_snapshot_is_not_an_interruption():
    manager = InteractionManager()
    snapshot = manager.export_state()
    assert manager.restore_state(snapshot) is False
    assert manager.get_recent_events()["events"] == []


def broken_snapshots():
    good = InteractionManager().export_state()
    yield "missing field", {k: v for k, v in good.items() if k != "events"}
    yield "extra field", {**good, "surprise": 1}
    yield "version", {**good, "version": 2}
    yield "state", {**good, "state": "sleeping"}
    yield "capacity", {**good, "event_capacity": 0}
    yield "event fields", {**good, "events": [{"seq": 1}], "next_sequence": 2}
    yield "event kind", {**good, "next_sequence": 2, "events": [
        {"seq": 1, "id": "a", "kind": "nope", "timestamp": 1.0, "payload": {}}]}
    yield "order", {**good, "next_sequence": 3, "events": [
        {"seq": 2, "id": "a", "kind": "context", "timestamp": 1.0, "payload": {}},
        {"seq": 1, "id": "b", "kind": "context", "timestamp": 1.0, "payload": {}}]}
    yield "next_sequence", {**good, "next_sequence": 1, "discarded_through": 4}
    yield "message", {**good, "messages": [{"content": "", "created_at": 1.0}]}


@pytest.mark.parametrize(("label", "snapshot"), list(broken_snapshots()),
                         ids=[label for label, _ in broken_snapshots()])
def test_restore_rejects_snapshots_that_break_the_schema(label, snapshot):
    manager = InteractionManager()
    with pytest.raises(InteractionSnapshotError):
        manager.restore_state(snapshot)
    assert manager.state == "idle"


def test_sr_restore_checks_transitions():
    snapshot = {**SRInteractionManager().export_state(), "search_transitions": ["next_z"]}
    with pytest.raises(InteractionSnapshotError, match="search_transitions"):
        SRInteractionManager().restore_state(snapshot)

"""Control channels and the bridge: commands in, events out, across a restart."""

from __future__ import annotations

import json
import multiprocessing
import time

import pytest

from srh_core.interactive import (
    ControlBridge,
    ControlChannel,
    ControlChannelError,
    ControlCommand,
    InProcessChannel,
    InvalidCommandError,
    RunDirectoryChannel,
    SRInteractionManager,
)


def wait_until(condition, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached before the deadline"
        time.sleep(0.01)


@pytest.mark.parametrize(("fields", "match"), [
    ({"action": "halt"}, "Unknown control action 'halt'"),
    ({"action": "message"}, "needs text"),
    ({"action": "message", "message": "   "}, "needs text"),
    ({"action": "pause", "message": "why"}, "Only a message command carries text"),
    ({"action": "pause", "id": ""}, "command id"),
], ids=["unknown", "no-text", "blank", "text-on-pause", "empty-id"])
def test_commands_are_checked_when_made(fields, match):
    with pytest.raises(InvalidCommandError, match=match):
        ControlCommand(**fields)


def test_command_round_trip_and_bad_records():
    command = ControlCommand("message", "hint")
    assert ControlCommand.from_dict(command.to_dict()) == command
    with pytest.raises(InvalidCommandError, match="'action' string"):
        ControlCommand.from_dict({"message": "x"})
    with pytest.raises(InvalidCommandError, match="sent_at"):
        ControlCommand.from_dict({"action": "pause", "sent_at": "noon"})


@pytest.mark.parametrize("factory", [lambda tmp: InProcessChannel(SRInteractionManager()),
                                     lambda tmp: RunDirectoryChannel(tmp)],
                         ids=["in-process", "run-directory"])
def test_both_channels_implement_the_protocol(factory, tmp_path):
    assert isinstance(factory(tmp_path), ControlChannel)


def test_in_process_channel_applies_commands_directly():
    manager = SRInteractionManager()
    channel = InProcessChannel(manager)
    manager.start_agent_execution()
    channel.send(ControlCommand("pause", id="p1"))
    assert channel.read_status()["interaction_state"] == "pausing"
    assert channel.read_events(0)["events"][-1]["payload"]["id"] == "p1"


def test_run_directory_commands_are_read_from_a_cursor(tmp_path):
    channel = RunDirectoryChannel(tmp_path)
    assert channel.receive(None, 0.0) == ([], "0")
    channel.send(ControlCommand("pause", id="a"))
    channel.send(ControlCommand("message", "hint", id="b"))
    commands, cursor = channel.receive(None, 0.0)
    assert [c.id for c in commands] == ["a", "b"]
    assert channel.receive(cursor, 0.0) == ([], cursor)
    with channel.commands_path.open("a") as stream:
        stream.write('{"action": "resume", "id": "c"}\n{"not json\n{"action": "resume", "id"')
    commands, cursor = channel.receive(cursor, 0.0)
    assert [c.id for c in commands] == ["c"]          # malformed skipped, torn line left
    with channel.commands_path.open("a") as stream:
        stream.write(': "d"}\n')
    assert [c.id for c in channel.receive(cursor, 0.0)[0]] == ["d"]


def test_receive_waits_up_to_its_timeout_for_a_command(tmp_path):
    channel = RunDirectoryChannel(tmp_path)
    started = time.monotonic()
    assert channel.receive("0", 0.2)[0] == []
    assert time.monotonic() - started >= 0.2


def test_sending_to_a_missing_run_directory_is_a_clear_error(tmp_path):
    with pytest.raises(ControlChannelError, match="is not a run directory"):
        RunDirectoryChannel(tmp_path / "nope").send(ControlCommand("pause"))


def _send_many(path: str, sender: int, n: int) -> None:
    channel = RunDirectoryChannel(path)
    for i in range(n):
        channel.send(ControlCommand("message", f"{sender}:{i}:" + "x" * 3000))


def test_senders_in_several_processes_never_interleave_lines(tmp_path):
    # spawn, not fork: a fork copies locks held by threads that earlier tests left running
    # (the web tests' servers), and a child blocked on one never sends
    context = multiprocessing.get_context("spawn")
    processes = [context.Process(target=_send_many, args=(str(tmp_path), s, 100))
                 for s in range(3)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=30)
    commands, _ = RunDirectoryChannel(tmp_path).receive(None, 0.0)
    assert len(commands) == 300
    assert sorted(c.message.split(":")[0] for c in commands) == ["0"] * 100 + ["1"] * 100 + \
        ["2"] * 100


def test_event_reader_is_incremental_bounded_and_survives_a_rewrite(tmp_path):
    writer = RunDirectoryChannel(tmp_path)
    reader = RunDirectoryChannel(tmp_path, capacity=3)
    assert reader.read_events(0)["events"] == []
    writer.publish([{"seq": i, "kind": "context", "payload": {}} for i in range(1, 6)])
    batch = reader.read_events(0)
    assert [e["seq"] for e in batch["events"]] == [3, 4, 5] and batch["truncated"]
    assert reader.read_events(4)["events"][0]["seq"] == 5
    assert reader.read_events(9)["cursor_reset"] is True
    writer.events_path.unlink()
    writer.publish([{"seq": 1, "kind": "context", "payload": {}}])
    assert [e["seq"] for e in reader.read_events(0)["events"]] == [1]


# ------------------------------------------------------------------ bridge
def test_bridge_applies_file_commands_and_publishes_events(tmp_path):
    controller = RunDirectoryChannel(tmp_path)
    manager = SRInteractionManager()
    controller.send(ControlCommand("message", "queued before the start", id="m0"))
    bridge = ControlBridge(manager, RunDirectoryChannel(tmp_path), poll_seconds=0.02)
    bridge.start()
    try:
        assert manager.status()["pending_messages"] == 1        # applied synchronously
        manager.start_agent_execution()
        controller.send(ControlCommand("pause", id="p1"))
        wait_until(lambda: manager.state == "pausing")
        controller.send(ControlCommand("resume", id="r1"))
        wait_until(lambda: manager.state == "running")
        controller.send(ControlCommand("resume", id="r2"))       # refused: not paused
        wait_until(lambda: any(e["payload"].get("id") == "r2"
                               for e in controller.read_events(0)["events"]))
    finally:
        bridge.stop()
    events = controller.read_events(0)["events"]
    refused = next(e for e in events if e["payload"].get("id") == "r2")
    assert refused["payload"]["accepted"] is False
    assert "not paused" in refused["payload"]["error"]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    status = controller.read_status()
    assert status["active"] is False and status["interaction_state"] == "running"


def test_a_restarted_run_continues_the_sequence_and_does_not_replay_commands(tmp_path):
    controller = RunDirectoryChannel(tmp_path)
    first = SRInteractionManager()
    bridge = ControlBridge(first, RunDirectoryChannel(tmp_path), poll_seconds=0.02)
    bridge.start()
    first.start_agent_execution()
    controller.send(ControlCommand("pause"))
    controller.send(ControlCommand("message", "for the next process"))
    wait_until(lambda: first.status()["pending_messages"] == 1)
    last = controller.read_events(0)["last_seq"]
    bridge._stop.set()        # the process dies: no orderly stop, no final save
    bridge._thread.join(timeout=5)

    second = SRInteractionManager()
    ControlBridge(second, RunDirectoryChannel(tmp_path), poll_seconds=0.02).start()
    assert second.state == "idle" and second.status()["pending_messages"] == 1
    events = controller.read_events(last)["events"]
    assert events[0]["seq"] == last + 1
    assert events[-1]["payload"] == {"previous": "pausing", "current": "idle",
                                     "interrupted": True}
    second.start_agent_execution()
    time.sleep(0.1)
    assert second.state == "running"          # the old "pause" was not applied again
    assert json.loads(controller.state_path.read_text())["manager"]["events"] == []

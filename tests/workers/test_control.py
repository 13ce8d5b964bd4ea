"""The cluster's controls over Redis: state, command log, event stream, parked steps.

Unit tests of the Redis side run on fakeredis and on a private redis-server;
the flows (a run driven by commands, its tasks run in this process FIFO by
``dispatch``, the offline model) on the redis-server only. The same flows on
real Celery workers are in test_control_cluster.py.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterator

import fakeredis
import numpy as np
import pytest
import redis

from srh_core.agent import SearchSettings
from srh_core.interactive import (
    ControlChannel,
    ControlChannelError,
    ControlCommand,
    InteractionStateError,
    SRAgentInteractive,
)
from srh_core.interactive.agent import MESSAGE_PREFIX
from srh_workers.control.channel import RedisControlChannel, open_controls
from srh_workers.control.submit import submit_interactive
from srh_workers.flow.handlers import dispatch
from srh_workers.flow.names import STEP, WHOLE_RUN, Action
from srh_workers.store import RedisRunStore, RunKeys
from srh_workers.store import control as control_keys

RUN = "ctl"


@pytest.fixture(scope="module", params=["fakeredis", pytest.param("redis-server",
                                                                   marks=pytest.mark.integration)])
def backend(request: pytest.FixtureRequest) -> Iterator[redis.Redis]:
    if request.param == "fakeredis":
        client = fakeredis.FakeStrictRedis(server=fakeredis.FakeServer())
    else:
        client = redis.Redis.from_url(request.getfixturevalue("redis_server"),
                                      decode_responses=True)
    yield client
    client.close()


@pytest.fixture
def client(backend: redis.Redis) -> redis.Redis:
    backend.flushdb()
    return backend


@pytest.fixture
def server_client(redis_server: str) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(redis_server)
    client.flushdb()
    yield client
    client.close()


def channel(client: redis.Redis, sent: list[Action] | None = None) -> RedisControlChannel:
    return RedisControlChannel(client, RUN, (sent if sent is not None else []).append)


def test_the_channel_implements_the_protocol(client):
    assert isinstance(RedisControlChannel(client, RUN), ControlChannel)


def test_commands_follow_the_managers_rules_and_are_logged(client):
    assert open_controls(client, RUN, {"pause_on_tool_free": False})
    assert not open_controls(client, RUN)  # once
    control = channel(client)
    assert control.apply(ControlCommand("pause"))["interaction_state"] == "pausing"
    assert control.apply(ControlCommand("force_pause"))["force_pause_requested"] is True
    status = control.apply(ControlCommand("resume"))
    assert status["interaction_state"] == "running" and status["force_pause_requested"] is False
    with pytest.raises(InteractionStateError, match="not paused"):
        control.apply(ControlCommand("resume"))
    control.apply(ControlCommand("message", "a hint"))
    assert control.read_status()["pending_messages"] == 1
    assert control.read_status()["options"]["pause_on_tool_free"] is False
    received = [e["payload"] for e in control.read_events(0)["events"]
                if e["kind"] == "command_received"]
    assert [(p["action"], p["accepted"]) for p in received] == [
        ("pause", True), ("force_pause", True), ("resume", True), ("resume", False),
        ("message", True)]
    logged = [record["action"] for _, record in control.store.controls.command_log()]
    assert logged == ["pause", "force_pause", "resume", "resume", "message"]
    commands, cursor = control.receive(None, 0.01)
    assert [c.action for c in commands] == logged and control.receive(cursor, 0.01)[0] == []


def test_a_run_without_controls_and_a_read_only_channel_refuse_commands(client):
    with pytest.raises(ControlChannelError, match="takes no commands"):
        channel(client).apply(ControlCommand("pause"))
    open_controls(client, RUN)
    with pytest.raises(ControlChannelError, match="read-only"):
        RedisControlChannel(client, RUN).apply(ControlCommand("pause"))
    with pytest.raises(ControlChannelError, match="transactions"):
        channel(client).save_state({})
    assert RedisControlChannel(client, RUN).read_status()["interaction_state"] == "running"
    assert RedisControlChannel(client, "other").read_status() is None


def test_events_are_numbered_in_order_and_read_by_cursor(client, monkeypatch):
    one, two = RedisRunStore(client, RUN), RedisRunStore(client, RUN)
    for index in range(30):
        (one if index % 2 else two).controls.publish_events([{
            "id": str(index), "kind": "context", "timestamp": 0.0, "payload": {}}])
    control = channel(client)
    batch = control.read_events(25)
    assert [e["seq"] for e in batch["events"]] == [26, 27, 28, 29, 30]
    assert [e["id"] for e in batch["events"]] == ["25", "26", "27", "28", "29"]
    assert batch["last_seq"] == 30 and not batch["truncated"] and not batch["cursor_reset"]
    reset = control.read_events(99)
    assert reset["cursor_reset"] and len(reset["events"]) == 30
    monkeypatch.setattr(control_keys, "EVENT_STREAM_LENGTH", 10)
    one.controls.publish_events([{"id": f"x{i}", "kind": "context", "timestamp": 0.0, "payload": {}}
                        for i in range(400)])
    capped = control.read_events(0)
    assert capped["truncated"] and capped["discarded_through"] >= 30
    assert capped["events"][0]["seq"] == capped["discarded_through"] + 1
    assert capped["events"][-1]["seq"] == capped["last_seq"] == 430
    assert not control.read_events(capped["discarded_through"])["truncated"]


def test_concurrent_controllers_lose_no_command(client):
    open_controls(client, RUN)
    sent: list[Action] = []

    def send_many(worker: int) -> None:
        control = RedisControlChannel(client, RUN, sent.append)
        for index in range(15):
            control.apply(ControlCommand("message", f"{worker}-{index}"))

    threads = [threading.Thread(target=send_many, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    state = RedisRunStore(client, RUN).controls.control_state()
    texts = sorted(m["content"] for m in state["manager"]["messages"])
    assert texts == sorted(f"{n}-{i}" for n in range(6) for i in range(15))
    events = channel(client).read_events(0)["events"]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))


# ------------------------------------------------------------------------- flows
def problem() -> tuple[dict, dict]:
    rng = np.random.default_rng(0)
    x1, x2 = rng.uniform(1, 5, (2, 100))
    return {"x1": x1, "x2": x2}, {"y": x1 * x2**2}


class InlineRun:
    """An interactive run whose tasks run in this process, FIFO, a few at a time."""

    def __init__(self, client: redis.Redis, run_id: str, **values) -> None:
        self.client, self.run_id = client, run_id
        self.queue: deque[Action] = deque()
        values.setdefault("granularity", "step")
        settings = SearchSettings.build(run_id=run_id, early_stop=False, **values)
        submit_interactive(client, self.queue.append, settings, *problem(), "find y",
                           options={"pause_on_tool_free": False})
        self.control = RedisControlChannel(client, run_id, self.queue.append)
        self.store = RedisRunStore.open(client, run_id)

    def step(self, count: int = 1_000_000) -> int:
        done = 0
        while self.queue and done < count:
            self.queue.extend(dispatch(self.client, self.queue.popleft()))
            done += 1
        return done

    def send(self, action: str, message: str | None = None) -> dict:
        return self.control.apply(ControlCommand(action, message))

    def labels(self) -> list[str]:
        return [record["node_label"] for record in self.store.records()]


VALUES = {"max_restart_loop": 2, "global_width": 2, "max_refinement_depth": 3,
          "local_sample_size": 2, "seed": 3}


@pytest.mark.integration
@pytest.mark.parametrize("granularity", ["step", "run"])
def test_a_paused_run_parks_its_steps_and_resumes_with_nothing_lost(server_client,
                                                                    granularity):
    plain = InlineRun(server_client, f"plain-{granularity}", granularity=granularity, **VALUES)
    plain.step()
    run = InlineRun(server_client, f"paused-{granularity}", granularity=granularity, **VALUES)
    run.step(4 if granularity == "step" else 0)
    assert run.send("pause")["interaction_state"] == "pausing"
    run.step()
    status = run.control.read_status()
    assert not run.queue and status["interaction_state"] == "paused"
    assert status["waiting_at_boundary"] and status["held"]
    if granularity == "run":
        assert status["held"] == ["run"] and not server_client.exists(RunKeys(run.run_id).lock)
    assert all(member.startswith(("step:", "run")) for member in status["held"])
    assert run.store.stored_result() is None
    assert run.send("resume")["interaction_state"] == "running"
    assert {a.task for a in run.queue} == {STEP if granularity == "step" else WHOLE_RUN}
    assert run.control.read_status()["held"] == []
    run.step()
    assert run.store.stored_result().status == "completed"
    assert sorted(run.labels()) == sorted(plain.labels()) and len(run.labels()) == 24
    assert run.store.flow.model_requests() == plain.store.flow.model_requests() == 12
    final = run.control.read_status()
    assert final["interaction_state"] == "idle" and not final["alive"]
    kinds = [e["kind"] for e in run.control.read_events(0)["events"]]
    assert kinds[-1] == "execution_completed" and kinds.count("search_position_changed") == 12


@pytest.mark.integration
def test_messages_and_branch_transitions_on_inline_tasks(server_client):
    run = InlineRun(server_client, "moves", **VALUES)
    run.send("message", "Hint: square x2.")
    run.step(1)                                   # the restart task: both branches' steps
    run.step(1)                                   # C1 opens L1 and takes the hint
    hints = [m["content"] for m in run.store.load_plan(1, 1, 1).prompt if "Hint" in m["content"]]
    assert hints == [f"{MESSAGE_PREFIX}\nHint: square x2."]
    run.send("next_c")
    run.step()                                    # C2 takes next_c at L1; C1 goes on
    branches = run.store.flow.load_branches(1, 2)
    assert {(b.C, b.status, b.stop_reason) for b in branches} == {
        (1, "done", "depth"), (2, "done", "next_c")}
    assert run.store.stored_result().status == "completed"
    assert "R1-C2-L1-K1" not in run.labels() and "R2-C1-L3-K1" in run.labels()

    other = InlineRun(server_client, "moves-r", **VALUES)
    other.step(2)
    other.send("next_r")
    other.step()
    assert {b.stop_reason for b in other.store.flow.load_branches(1, 2)} == {"next_r"}
    assert [label for label in other.labels() if label.startswith("R1")] == [
        "R1-C1-L1-K1", "R1-C1-L1-K2"]
    assert other.store.stored_result().status == "completed"


@pytest.mark.integration
def test_a_parked_step_re_delivered_or_kicked_stays_parked(server_client):
    run = InlineRun(server_client, "kicked", **VALUES)
    run.send("pause")
    run.step()
    held = run.control.read_status()["held"]
    from srh_workers.submit import kick_run

    kicked: list[Action] = []
    kick_run(server_client, kicked.append, run.run_id)   # re-sends the branches' steps
    for action in kicked:
        assert dispatch(server_client, action) == []
    assert run.control.read_status()["held"] == held and run.store.node_count == 0
    run.send("resume")
    assert sorted(a.args for a in run.queue) == sorted(a.args for a in kicked)
    run.step()
    assert run.store.stored_result().status == "completed" and len(run.labels()) == 24


@pytest.mark.integration
def test_a_cancelled_parked_run_stops_when_kicked(server_client):
    from srh_workers.submit import cancel_run, kick_run

    run = InlineRun(server_client, "cancelled", **VALUES)
    run.send("pause")
    run.step()
    cancel_run(server_client, run.run_id)
    kick_run(server_client, run.queue.append, run.run_id)
    run.step()
    result = run.store.stored_result()
    assert result.status == "interrupted" and result.stop_reason == "cancelled"
    status = run.control.read_status()
    assert status["interaction_state"] == "idle" and status["held"] == []


@pytest.mark.integration
@pytest.mark.parametrize("granularity", ["step", "run"])
def test_a_cancel_ends_a_parked_run_without_a_kick(server_client, granularity):
    from srh_workers.submit import cancel_run

    run = InlineRun(server_client, f"cancel-{granularity}", granularity=granularity, **VALUES)
    run.send("pause")
    run.step()
    held = run.control.read_status()["held"]
    assert held and not run.queue
    released = cancel_run(server_client, run.run_id, run.queue.append)
    assert len(released) == len(held) and list(run.queue) == released
    assert run.control.read_status()["held"] == []
    run.step()
    result = run.store.stored_result()
    assert (result.status, result.stop_reason) == ("interrupted", "cancelled")
    status = run.control.read_status()
    assert status["interaction_state"] == "idle" and status["held"] == []
    assert run.store.flow.model_requests() == 0                 # parked before its first step


@pytest.mark.integration
def test_a_step_that_parks_while_a_cancel_is_sent_lets_itself_go(server_client):
    from srh_workers.control.parking import park_run, park_step
    from srh_workers.flow.run_view import run_view_for
    from srh_workers.submit import cancel_run

    run = InlineRun(server_client, "late-park", **VALUES)
    run.send("pause")
    run.step(1)                                   # the restart task: both branches' steps
    # the cancel finds nothing parked; a step that read no stop flag parks after it
    assert cancel_run(server_client, run.run_id, run.queue.append) == []
    parked, released = park_step(run_view_for(server_client, run.run_id), 1, 1, 1)
    assert parked and [a.args for a in released] == [(run.run_id, 1, 1, 1)]
    assert run.control.read_status()["held"] == []
    whole = InlineRun(server_client, "late-park-run", granularity="run", **VALUES)
    whole.send("pause")
    whole.store.flow.request_stop("cancelled")
    parked, released = park_run(run_view_for(server_client, whole.run_id), "owner")
    assert parked and [a.args for a in released] == [(whole.run_id,)]


@pytest.mark.integration
def test_a_failed_branch_ends_its_parked_siblings(server_client):
    from srh_workers.flow.run_view import run_view_for
    from srh_workers.flow.steps import fail_branch

    run = InlineRun(server_client, "failed-sibling", **VALUES)
    run.step(1)                                   # the restart task: both branches' steps
    run.send("pause")
    run.queue.popleft()                           # C1's step is in flight...
    run.step()                                    # ...while C2's parks
    assert run.control.read_status()["held"] == ["step:1:2:1"]
    run.queue.extend(fail_branch(run_view_for(server_client, run.run_id), 1, 1, "failed: boom"))
    run.step()
    result = run.store.stored_result()
    assert result.status == "failed" and "boom" in result.stop_reason
    assert run.control.read_status()["held"] == []


def test_submit_interactive_checks_the_class_and_the_run_id(client):
    from srh_core.agent import SRAgent
    from srh_core.errors import ConfigurationError

    settings = SearchSettings.build(run_id="sub", max_refinement_depth=1)
    with pytest.raises(ConfigurationError, match="SRAgentInteractive"):
        submit_interactive(client, [].append, settings, *problem(), agent_class=SRAgent)
    submit_interactive(client, [].append, settings, *problem(), agent_class=SRAgentInteractive)
    with pytest.raises(ConfigurationError, match="already used"):
        submit_interactive(client, [].append, settings, *problem())
    assert RedisRunStore(client, "sub", register=False).controls.control_state() is not None


def test_the_cancel_signal_caches_a_clear_flag_only(client):
    from srh_workers.control.agent import RedisCancelSignal

    open_controls(client, RUN)
    signal = RedisCancelSignal(RedisRunStore(client, RUN, register=False), cache_seconds=60)
    assert signal.is_set() is False
    channel(client).apply(ControlCommand("force_pause"))
    assert signal.is_set() is False                 # within the cache of a clear read
    signal = RedisCancelSignal(RedisRunStore(client, RUN, register=False), cache_seconds=60)
    assert signal.is_set() is True
    channel(client).apply(ControlCommand("resume"))
    assert signal.is_set() is False                 # a set flag is read again every time

"""A Celery run steered by commands: a private redis-server, real workers, a real model client.

The workers talk to the local OpenAI-compatible server (the real ``openai``
client); its recorded request bodies show what reached the model, and their
sampling seeds (a pure function of the coordinate) tell each step's
requests apart, so "no step lost or repeated" is one request per seed. One
redis-server and one worker per queue serve the module's tests.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import tests.workers.cluster_plugins  # noqa: F401 - registers cancellable_wait here too
from srh_core.agent import SearchSettings
from srh_core.interactive import ControlCommand
from srh_core.interactive.agent import FORCE_PAUSE_NOTICE, MESSAGE_PREFIX
from srh_workers.config import QUEUES
from srh_workers.control.channel import RedisControlChannel
from srh_workers.control.submit import submit_interactive
from srh_workers.flow.tasks import sender
from srh_workers.observability.metrics import queue_depths
from srh_workers.store import RedisRunStore, RunKeys
from tests.support.openai_payloads import (
    chat_choice,
    chat_chunk,
    chat_completion,
    evaluating_reply,
    tool_call,
)
from tests.support.openai_server import FakeOpenAIServer, Reply
from tests.workers.cluster import Cluster
from tests.workers.conftest import RedisOptions, RedisServer
from tests.workers.support import wait_until

pytestmark = pytest.mark.integration

FORMULAS = ("x1*x2", "x1 + x2", "x2**2", "x1*x2 + x1")
HINT = "Hint: y grows with the square of x2."
DEADLINE = 60.0
CANCEL_SECONDS = 10.0
RUN_SEED = 5
SLOW_SECONDS = 60  # a tool call or model request that only a force-pause ends in time

Step = tuple[int, int, int]
"""A step's (R, C, L)."""


def step_seed(R: int, C: int, L: int, run_seed: int = RUN_SEED) -> int:
    """The sampling seed a step's requests carry (see SRAgent.sampling_seed)."""
    return (run_seed * 1_000_003 + R * 10_007 + C * 101 + L) % (2**31 - 1)


def holding(hold: Callable[[Step], threading.Event | None]) -> Any:
    """The model's responder, each step's answer held until ``hold(step)`` is set.

    A reply's delay is no window for a command: on a loaded machine the test's command
    can come after the step it was meant for has ended. A step whose answer is held
    until the command has been sent ends after it, so its boundary sees the command.
    """
    steps = {step_seed(R, C, L): (R, C, L)
             for R in range(1, 4) for C in range(1, 4) for L in range(1, 8)}
    return evaluating_reply(FORMULAS, hold=lambda seed: hold(steps[seed]) if seed in steps
                            else None)


@pytest.fixture(scope="module")
def model() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture(scope="module")
def steered(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A private redis-server and one worker per queue (started side by side)."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not on PATH")
    directory = tmp_path_factory.mktemp("steered")
    server = RedisServer(binary, directory / "redis", RedisOptions())
    server.start()
    cluster = Cluster(server.url, directory)
    workers = [cluster.start("branches", concurrency=2, wait=False, OPENAI_API_KEY="sk-test"),
               cluster.start("tools", concurrency=1, wait=False, OPENAI_API_KEY="sk-test")]
    try:
        for worker in workers:
            Cluster.ready(worker)
        yield cluster
    finally:
        cluster.close()
        server.stop()


class Steered:
    """One interactive run on the cluster, its controller and the model's view of it."""

    def __init__(self, cluster: Cluster, model: FakeOpenAIServer, run_id: str,
                 **values: Any) -> None:
        self.cluster, self.model, self.run_id = cluster, model, run_id
        self.first_request = len(model.requests)
        self.settings = SearchSettings.build(**{
            "run_id": run_id, "llm_provider": "openai", "llm_model": "test-model",
            "base_url": model.base_url, "tool_parser": "openai", "early_stop": False,
            "seed": RUN_SEED, "tools": ["evaluate_formula"], **values})
        rng = np.random.default_rng(0)
        x1, x2 = rng.uniform(1, 5, (2, 120))
        submit_interactive(cluster.client, sender(cluster.app), self.settings,
                           {"x1": x1, "x2": x2}, {"y": x1 * x2**2}, "find y",
                           options={"pause_on_tool_free": False}, api_key="sk-test")
        self.control = RedisControlChannel(cluster.client, run_id, sender(cluster.app))
        self.store = RedisRunStore.open(cluster.client, run_id)

    def send(self, action: str, message: str | None = None) -> dict[str, Any]:
        return self.control.apply(ControlCommand(action, message))

    def bodies(self) -> list[dict[str, Any]]:
        return [r.body for r in self.model.requests[self.first_request:]]

    def coordinate(self, body: dict[str, Any]) -> tuple[int, int, int]:
        """The (R, C, L) whose sampling seed the request carries."""
        s = self.settings
        seeds = {step_seed(R, C, L, s.seed): (R, C, L)
                 for R in range(1, s.max_restart_loop + 1)
                 for C in range(1, s.global_width + 1)
                 for L in range(1, s.max_refinement_depth + 1)}
        return seeds[body["seed"]]

    def wait_for_requests(self, count: int) -> None:
        wait_until(lambda: len(self.bodies()) >= count, DEADLINE, f"{count} model requests")

    def wait_parked(self) -> dict[str, Any]:
        return wait_until(lambda: (s := self.control.read_status())["waiting_at_boundary"]
                          and s, DEADLINE, "the run to be held with no step in flight")

    def assert_nothing_in_flight(self, status: dict[str, Any]) -> None:
        """No message waits in a queue or sits unacknowledged at a worker; nothing moves."""
        empty = (dict.fromkeys(QUEUES, 0), 0)
        # the last parking task is acknowledged just after it returns (late acks)
        wait_until(lambda: queue_depths(self.cluster.url, QUEUES) == empty, DEADLINE,
                   "the queues to be empty and every message acknowledged")
        requests = len(self.bodies())
        time.sleep(0.5)  # a quiet period: a held run sends no request and parks no more
        assert len(self.bodies()) == requests
        assert queue_depths(self.cluster.url, QUEUES) == empty
        assert self.control.read_status()["held"] == status["held"]

    def result(self) -> Any:
        return self.cluster.result(self.run_id, timeout=DEADLINE)

    def assert_each_step_requested_once(self) -> Counter[tuple[int, int, int]]:
        steps = Counter(self.coordinate(body) for body in self.bodies())
        assert set(steps.values()) == {1}, steps
        nodes = {(r["coordinate"]["R"], r["coordinate"]["C"], r["coordinate"]["L"])
                 for r in self.store.records()}
        assert nodes == set(steps)  # every step requested has its nodes, and only those
        assert self.store.node_count == len(steps) * self.settings.local_sample_size
        return steps

    def received(self) -> list[str]:
        return [e["payload"]["action"] for e in self.control.read_events(0)["events"]
                if e["kind"] == "command_received"]


def cluster_cli(cluster: Cluster, monkeypatch: pytest.MonkeyPatch) -> Any:
    """``srh``'s main, talking to ``cluster`` (its commands read the environment)."""
    from srh_core.cli import main

    monkeypatch.setenv("SRH_REDIS_URL", cluster.url)
    monkeypatch.setenv("SRH_BROKER_URL", cluster.url)
    monkeypatch.setenv("SRH_TASK_MODULES", "none")
    monkeypatch.setattr("srh_workers.app._app", None)
    return main


def hints(body: dict[str, Any]) -> list[str]:
    return [m["content"] for m in body["messages"]
            if m["role"] == "user" and MESSAGE_PREFIX in str(m["content"])]


def test_step_tasks_are_held_released_and_moved_on_by_commands(steered, model):
    # each command lands in the steps held for it: the pause in L1, the hint at L2's end,
    # the second pause in restart 1 (depth 6: it is not over), next_r in restart 2's L1
    paused, hinted, paused_again, ended = (threading.Event() for _ in range(4))
    model.respond_with(holding(lambda step: ended if step[0] == 2 else
                               paused if step[2] == 1 else hinted if step[2] == 2 else
                               paused_again))
    run = Steered(steered, model, "steer-step", max_restart_loop=2, global_width=2,
                  max_refinement_depth=6, local_sample_size=2)
    run.wait_for_requests(1)
    assert run.send("pause")["interaction_state"] in ("pausing", "paused")
    paused.set()
    status = run.wait_parked()
    branches = run.store.flow.load_branches(1, 2)
    assert sorted(status["held"]) == sorted(f"step:1:{b.C}:{b.L}" for b in branches)
    run.assert_nothing_in_flight(status)
    assert run.send("resume")["interaction_state"] == "running"

    run.send("message", HINT)                # the next boundary takes it
    hinted.set()
    wait_until(lambda: [b for b in run.bodies() if hints(b)], DEADLINE, "the hint to be sent")
    hinted = [body for body in run.bodies() if hints(body)]
    assert hints(hinted[0]) == [f"{MESSAGE_PREFIX}\n{HINT}"]
    taker = run.coordinate(hinted[0])
    assert {run.coordinate(b)[:2] for b in hinted} == {taker[:2]}   # one branch took it

    run.send("pause")
    paused_again.set()
    status = run.wait_parked()
    assert status["held"] and all(m.startswith("step:1:") for m in status["held"])
    run.assert_nothing_in_flight(status)
    run.send("next_c")                       # releases; the first boundary ends its branch
    wait_until(lambda: any(run.coordinate(b)[0] == 2 for b in run.bodies()), DEADLINE,
               "restart 2 to start")
    run.send("next_r")                       # ends restart 2 (the last one): the run ends
    ended.set()
    result = run.result()

    assert result.status == "completed", result.stop_reason
    reasons = {(b.R, b.C): b.stop_reason
               for R in (1, 2) for b in run.store.flow.load_branches(R, 2)}
    assert sorted(reasons[1, C] for C in (1, 2)) == ["depth", "next_c"]
    assert {reasons[2, C] for C in (1, 2)} == {"next_r"}
    steps = run.assert_each_step_requested_once()
    assert max(L for R, _, L in steps if R == 2) == 1
    assert run.received() == ["pause", "resume", "message", "pause", "next_c", "next_r"]
    events = run.control.read_events(0)["events"]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    added = [e["payload"]["message"] for e in events if e["kind"] == "prompt_added"]
    assert [m["content"] for m in added if m["content"].startswith(MESSAGE_PREFIX)] == [
        f"{MESSAGE_PREFIX}\n{HINT}"]                     # the one human message
    assert {m["role"] for m in added} == {"system", "user"}  # and the prompts entering buffers
    assert {"assistant_completed", "tool_completed", "topk_updated"} <= {e["kind"]
                                                                         for e in events}
    assert events[-1]["kind"] == "execution_completed"
    assert run.control.read_status()["interaction_state"] == "idle"


def test_a_whole_run_task_ends_its_chunk_when_paused_and_a_message_sends_it_again(
        steered, model, monkeypatch):
    paused = threading.Event()                   # the first steps end after the pause
    model.respond_with(holding(lambda step: paused if step[2] == 1 else None))
    run = Steered(steered, model, "steer-run", max_restart_loop=1, global_width=2,
                  max_refinement_depth=3, local_sample_size=1, granularity="run")
    run.wait_for_requests(1)
    run.send("pause")
    paused.set()
    status = run.wait_parked()
    assert status["held"] == ["run"]
    assert not steered.client.exists(RunKeys(run.run_id).lock)   # the chunk let the run go
    run.assert_nothing_in_flight(status)

    main = cluster_cli(steered, monkeypatch)
    before = len(run.bodies())
    assert main(["message", run.run_id, HINT]) == 0      # the CLI, by run id
    run.wait_for_requests(before + 1)
    assert hints(run.bodies()[before]) == [f"{MESSAGE_PREFIX}\n{HINT}"]
    result = run.result()
    assert result.status == "completed"
    assert len(run.assert_each_step_requested_once()) == 6
    assert run.received() == ["pause", "message"]


def test_force_pause_cuts_a_running_tool_on_a_worker(steered, model):
    waiting = tool_call("cancellable_wait", {"seconds": SLOW_SECONDS}, "w1")
    answered = Counter[str]()

    def respond(request: Any) -> Reply:  # the run's first request waits, the next one fits
        answered["requests"] += 1  # (called under the server's lock: no model.requests here)
        first = answered["requests"] == 1
        calls = [waiting] if first else [tool_call("evaluate_formula", {"f": "x1*x2**2"}, "e1")]
        return Reply.json(chat_completion([chat_choice(None, tool_calls=calls)]))

    model.respond_with(respond)
    run = Steered(steered, model, "steer-force", max_restart_loop=1, global_width=1,
                  max_refinement_depth=2, local_sample_size=1,
                  tools=["evaluate_formula", "cancellable_wait"])
    wait_until(lambda: any(e["kind"] == "tool_started"
                           for e in run.control.read_events(0)["events"]), DEADLINE,
               "the slow tool to start")
    started = time.monotonic()
    assert run.send("force_pause")["force_pause_requested"] is True
    run.wait_parked()
    assert time.monotonic() - started < SLOW_SECONDS / 2     # the tool did not run out
    assert run.control.read_status()["held"] == ["step:1:1:2"]
    run.send("resume")
    result = run.result()

    assert result.status == "completed" and result.best.formula == "x1*x2**2"
    second = run.bodies()[1]
    assert FORCE_PAUSE_NOTICE in [m["content"] for m in second["messages"] if m["role"] == "user"]
    tool_texts = [m["content"] for m in second["messages"] if m["role"] == "tool"]
    assert any("cancelled by a force-pause" in text for text in tool_texts)
    run.assert_each_step_requested_once()


def test_force_pause_cancels_a_model_request_in_flight_on_a_worker(steered, model):
    run = Steered(steered, model, "steer-cut", llm_provider="test-cancellable",
                  llm_model=f"wait-{SLOW_SECONDS}", tool_parser="text", base_url=None,
                  max_restart_loop=1, global_width=1, max_refinement_depth=2, local_sample_size=1)
    wait_until(lambda: any(e["kind"] == "assistant_started"
                           for e in run.control.read_events(0)["events"]), DEADLINE,
               "the model request to start")
    started = time.monotonic()
    run.send("force_pause")
    assert run.wait_parked()["held"] == ["step:1:1:2"]
    assert time.monotonic() - started < SLOW_SECONDS / 2     # the request did not run out
    failed = [e["payload"] for e in run.control.read_events(0)["events"]
              if e["kind"] == "assistant_failed"]
    assert len(failed) == 1 and failed[0]["interrupted"] is True
    run.send("resume")
    assert run.result().status == "completed"
    first = run.store.node_record(run.store.node_id(1, 1, 1, 1))
    assert first["detail"]["message"]["content"] == ""             # kept, as cancelled
    assert run.store.load_plan(1, 1, 2).prompt[-1]["content"] == FORCE_PAUSE_NOTICE


@pytest.mark.parametrize("granularity", ["step", "run"])
def test_srh_cancel_ends_a_paused_run_at_once(steered, model, monkeypatch, capsys, granularity):
    paused = threading.Event()                   # the first steps end after the pause
    model.respond_with(holding(lambda step: paused if step[2] == 1 else None))
    run = Steered(steered, model, f"steer-cancel-{granularity}", max_restart_loop=2,
                  global_width=2, max_refinement_depth=3, local_sample_size=1,
                  granularity=granularity)
    run.wait_for_requests(1)
    run.send("pause")
    paused.set()
    run.wait_parked()                        # nothing of the run holds a worker now
    main = cluster_cli(steered, monkeypatch)
    cancelled = time.monotonic()
    assert main(["cancel", run.run_id]) == 0
    result = steered.result(run.run_id, timeout=CANCEL_SECONDS)     # no kick, no resume
    with capsys.disabled():
        print(f"cancel of a paused run ({granularity}): result "
              f"{time.monotonic() - cancelled:.1f} s after srh cancel")
    assert (result.status, result.stop_reason) == ("interrupted", "cancelled")
    assert "parked step(s) were sent to end now" in capsys.readouterr().err
    path = steered.directory / "runs" / run.run_id / "result.json"
    wait_until(path.exists, CANCEL_SECONDS, "the run directory's result")
    assert json.loads(path.read_text())["stop_reason"] == "cancelled"
    assert main(["status", run.run_id, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "interrupted"
    assert main(["result", run.run_id, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "interrupted"
    status = run.control.read_status()
    assert status["interaction_state"] == "idle" and status["held"] == []
    assert run.received() == ["pause"]


def test_a_streamed_reply_reaches_the_cluster_timeline_as_assistant_deltas(steered, model):
    text = "".join(f"tok{i} " for i in range(6))

    def streamed(request) -> Reply:
        call = {"index": 0, "id": "e1", "type": "function",
                "function": {"name": "evaluate_formula", "arguments": '{"f": "x1*x2**2"}'}}
        return Reply.sse([*[chat_chunk(content=f"tok{i} ", role="assistant" if i == 0 else None)
                            for i in range(6)], chat_chunk(tool_calls=[call])], event_delay=0.03)

    model.respond_with(streamed)
    run = Steered(steered, model, "steer-stream", max_refinement_depth=1, local_sample_size=1,
                  granularity="step", llm_stream=True)
    assert run.result().status == "completed"
    assert run.bodies()[0]["stream"] is True
    events = run.control.read_events(0)["events"]
    deltas = [e["payload"] for e in events if e["kind"] == "assistant_delta"]
    completed = [e["payload"] for e in events if e["kind"] == "assistant_completed"]
    assert deltas and completed[0]["content"] == text
    assert all(text.startswith(d["content"]) for d in deltas)
    assert {d["response_id"] for d in deltas} == {"steer-stream:R1-C1-L1-K1"}


def token_limit(body: dict[str, Any]) -> Any:
    return body.get("max_tokens", body.get("max_completion_tokens"))


@pytest.mark.parametrize("granularity", ["step", "run"])
def test_runtime_settings_reach_every_later_step_on_workers_and_a_refused_one_is_reported(
        steered, model, granularity):
    paused = threading.Event()                   # step 1 ends after the pause: L2 takes them
    model.respond_with(holding(lambda step: paused if step[2] == 1 else None))
    run = Steered(steered, model, f"steer-settings-{granularity}", max_refinement_depth=3,
                  local_sample_size=1, granularity=granularity)
    run.wait_for_requests(1)
    run.send("pause")
    paused.set()
    run.wait_parked()
    env = {**os.environ, "SRH_REDIS_URL": steered.url, "SRH_BROKER_URL": steered.url,
           "SRH_TASK_MODULES": "none"}
    done = subprocess.run([sys.executable, "-m", "srh_core", "settings", run.run_id,
                           "llm_max_tokens=333", "llm_temperature=0.5"], env=env,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert "1 settings change(s) queued" in done.stdout
    run.control.apply(ControlCommand("settings", settings={"llm_temperature": 9}))
    assert run.send("resume")["interaction_state"] == "running"
    assert run.result().status == "completed"

    bodies = sorted(run.bodies(), key=lambda body: run.coordinate(body)[2])
    assert [(token_limit(b), b["temperature"]) for b in bodies] == [
        (4096, 1.0), (333, 0.5), (333, 0.5)]            # rebuilt agents replay the log
    events = run.control.read_events(0)["events"]
    applied = [e["payload"] for e in events if e["kind"] == "settings_applied"]
    failed = [e["payload"] for e in events if e["kind"] == "settings_failed"]
    assert applied == [{"settings": {"llm_max_tokens": 333, "llm_temperature": 0.5},
                        "coord": {"R": 1, "C": 1, "L": 2},
                        "previous": {"llm_max_tokens": 4096, "llm_temperature": 1.0}}]
    assert [(f["settings"], f["error_type"]) for f in failed] == [
        ({"llm_temperature": 9}, "ConfigurationError")]
    assert run.received() == ["pause", "settings", "settings", "resume"]
    assert run.control.read_status()["interaction_state"] == "idle"

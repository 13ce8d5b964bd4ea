"""An embedded run steered through its run directory, against a local OpenAI-compatible server.

The controller is a RunDirectoryChannel (what ``srh web`` uses for a run in
another process); the model is the real ``openai`` client talking to the
scripted server, whose recorded request bodies show what reached the model.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from srh_core.api import OpenAIAPI
from srh_core.interactive import ControlCommand, RunDirectoryChannel, SRAgentInteractive
from srh_core.interactive.agent import FORCE_PAUSE_NOTICE, MESSAGE_PREFIX
from srh_core.tools.base import BaseTool
from srh_core.types import SearchResult
from tests.support import cancellable_wait  # noqa: F401 - registers the tool
from tests.support.openai_payloads import chat_chunk, chat_completion, tool_call
from tests.support.openai_server import Reply

CHAT = "/v1/chat/completions"
STREAM_CHUNKS = 600  # a 30 s streamed reply: a force-pause sent once it started cuts it
WAIT_SECONDS = 60    # a tool call no pause waits out


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")


def evaluate(f: str, call_id: str, hold: threading.Event | None = None) -> Reply:
    """A step evaluating ``f``; with ``hold``, answered once the test sets it (so a command
    sent before lands while the step is open, however slow the machine)."""
    call = tool_call("evaluate_formula", {"f": f}, call_id)
    return Reply.json(chat_completion(content=None, tool_calls=[call]), path=CHAT, hold=hold)


def data() -> tuple[dict, dict]:
    rng = np.random.default_rng(0)
    x1, x2 = rng.uniform(1, 5, 120), rng.uniform(1, 5, 120)
    return {"x1": x1, "x2": x2}, {"y": x1 * x2**2}


class Run:
    """An interactive run on a thread, and its controller."""

    def __init__(self, server, tmp_path: Path, **settings) -> None:
        self.path = tmp_path / "run"
        self.server = server
        api = settings.pop("api", None)
        self.agent = SRAgentInteractive(
            llm_provider="openai", llm_model="test-model", base_url=server.base_url,
            tool_parser="openai", early_stop=False, run_id="steer", save_path=str(self.path),
            branch_threads=1,  # the steps below are scripted in branch order
            tools=["evaluate_formula", "cancellable_wait"], api=api, **settings)
        self.control = RunDirectoryChannel(self.path)
        self.result: SearchResult | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        X, y = data()
        self.result = SearchResult.from_dict(self.agent.run(X, y, "y from x1 and x2"))

    def start(self) -> Run:
        self.thread.start()
        return self

    def send(self, action: str, message: str | None = None) -> None:
        """Send a command and return once the run has it (its ``command_received`` event):
        the run's bridge reads the channel on a thread, so a held step let go only after
        this ends after the command arrived."""
        command = ControlCommand(action, message)
        self.control.send(command)
        wait_until(lambda: any(e["kind"] == "command_received"
                               and e["payload"].get("id") == command.id for e in self.events()))

    def paused(self, timeout: float = 10.0) -> None:
        wait_until(lambda: (self.control.read_status() or {}).get("waiting_at_boundary"),
                   timeout)

    def finish(self) -> SearchResult:
        self.thread.join(timeout=30)
        assert not self.thread.is_alive() and self.result is not None
        self.server.assert_script_consumed()
        return self.result

    def labels(self) -> list[str]:
        lines = (self.path / "nodes.jsonl").read_text().splitlines()
        return [json.loads(line)["node_label"].removesuffix("-K1") for line in lines]

    def events(self) -> list[dict]:
        return self.control.read_events(0)["events"]

    def branch_steps(self) -> list[tuple[int, int]]:
        state = json.loads((self.path / "state.json").read_text())["runtime"]
        return [(branch["C"], branch["L"]) for branch in state["branches"]]


def wait_until(condition, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached before the deadline"
        time.sleep(0.01)


def user_texts(body: dict) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "user"]


@pytest.mark.integration
def test_message_pause_resume_and_next_branch(openai_server, tmp_path):
    paused, moved_on, paused_again = threading.Event(), threading.Event(), threading.Event()
    openai_server.script(evaluate("x1*x2", "c1", paused), evaluate("x1*x2**2", "c2", moved_on),
                         evaluate("x1", "c3", paused_again), evaluate("x2", "c4"),
                         evaluate("x1*x2**2", "c5"))
    run = Run(openai_server, tmp_path, global_width=2, max_refinement_depth=3).start()

    openai_server.wait_for_requests(1, timeout=30)
    run.send("pause")                           # lands while step C1-L1 is open
    paused.set()
    run.paused()
    assert len(openai_server.requests) == 1 and run.labels() == ["R1-C1-L1"]
    assert run.branch_steps() == [(1, 2), (2, 1)]      # checkpointed: no step in flight
    time.sleep(0.3)
    assert len(openai_server.requests) == 1             # held

    run.send("message", "Hint: y grows with the square of x2.")   # releases the pause
    openai_server.wait_for_requests(2, timeout=30)
    hint = [t for t in user_texts(openai_server.bodies()[1]) if t.startswith(MESSAGE_PREFIX)]
    assert hint == [f"{MESSAGE_PREFIX}\nHint: y grows with the square of x2."]

    run.send("next_c")                          # C1 ends after L2: no C1-L3
    moved_on.set()
    openai_server.wait_for_requests(3, timeout=30)
    fresh = openai_server.bodies()[2]
    assert not any("Hint" in text for text in user_texts(fresh))
    assert not any(m["role"] == "tool" for m in fresh["messages"])

    run.send("pause")                           # lands while step C2-L1 is open
    paused_again.set()
    run.paused()
    assert len(openai_server.requests) == 3 and run.branch_steps()[1] == (2, 2)
    run.send("resume")
    result = run.finish()

    assert result.status == "completed", result.stop_reason
    assert run.labels() == ["R1-C1-L1", "R1-C1-L2", "R1-C2-L1", "R1-C2-L2", "R1-C2-L3"]
    assert result.best.formula == "x1*x2**2"
    events = run.events()
    states = [e["payload"]["current"] for e in events if e["kind"] == "state_changed"]
    assert states.count("paused") == 2 and states[-1] == "idle"
    received = [e["payload"]["action"] for e in events if e["kind"] == "command_received"]
    assert received == ["pause", "message", "next_c", "pause", "resume"]
    assert events[-1]["kind"] == "execution_completed"
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert run.control.read_status()["active"] is False
    # each branch's system and user prompts, then each step's progress message, published
    added = [(e["payload"]["coord"], e["payload"]["message"]["role"]) for e in events
             if e["kind"] == "prompt_added" and "L" not in e["payload"]["coord"]]
    assert added == [({"R": 1, "C": c}, role) for c in (1, 2)
                     for role in ("system", "user", "user")]


@pytest.mark.integration
def test_next_restart_skips_the_rest_of_the_restart(openai_server, tmp_path):
    sent = threading.Event()
    openai_server.script(evaluate("x1*x2", "c1", sent), evaluate("x1*x2**2", "c2"),
                         evaluate("x1", "c3"), evaluate("x2", "c4"), evaluate("x1+x2", "c5"))
    run = Run(openai_server, tmp_path, max_restart_loop=2, global_width=2,
              max_refinement_depth=2).start()
    openai_server.wait_for_requests(1, timeout=30)
    run.send("next_r")                          # lands while step C1-L1 is open
    sent.set()
    result = run.finish()
    assert result.status == "completed"
    assert run.labels() == ["R1-C1-L1", "R2-C1-L1", "R2-C1-L2", "R2-C2-L1", "R2-C2-L2"]


def streamed_reply(chunks: int) -> Reply:
    return Reply.sse([chat_chunk(content=f"tok{i} ", role="assistant" if i == 0 else None)
                      for i in range(chunks)], event_delay=0.05, path=CHAT)


@pytest.mark.integration
def test_tool_free_pause_and_force_pause_of_a_request_and_of_a_tool(openai_server, tmp_path):
    tools = [BaseTool.get_class(name).metadata for name in ("evaluate_formula", "cancellable_wait")]
    api = OpenAIAPI(model="test-model", base_url=openai_server.base_url, api_key="sk-test",
                    stream=True, tool_list=tools, tool_parser_name="openai")
    openai_server.script(
        Reply.sse([chat_chunk(content="Let me think.", role="assistant")], path=CHAT),
        streamed_reply(STREAM_CHUNKS),
        Reply.sse([chat_chunk(role="assistant", tool_calls=[{
            "index": 0, "id": "w1", "type": "function",
            "function": {"name": "cancellable_wait",
                         "arguments": json.dumps({"seconds": WAIT_SECONDS})}}])], path=CHAT),
        Reply.sse([chat_chunk(role="assistant", tool_calls=[{
            "index": 0, "id": "e1", "type": "function",
            "function": {"name": "evaluate_formula",
                         "arguments": '{"f": "x1*x2**2"}'}}])], path=CHAT))
    run = Run(openai_server, tmp_path, max_refinement_depth=4, api=api).start()

    run.paused()                                    # the tool-free reply asked for a pause
    assert len(openai_server.requests) == 1
    run.send("resume")
    openai_server.wait_for_requests(2, timeout=30)
    run.send("force_pause")                         # cuts the streamed reply
    run.paused()                                    # well before the stream's 30 s
    run.send("resume")
    wait_until(lambda: any(e["kind"] == "tool_started" for e in run.events()))
    run.send("force_pause")                         # cuts the running tool
    run.paused()                                    # well before the tool's 60 s
    run.send("resume")
    result = run.finish()

    assert result.status == "completed"
    assert run.labels() == ["R1-C1-L1", "R1-C1-L2", "R1-C1-L3", "R1-C1-L4"]
    bodies = openai_server.bodies()
    assert FORCE_PAUSE_NOTICE in user_texts(bodies[2])
    tool_texts = [m["content"] for m in bodies[3]["messages"] if m["role"] == "tool"]
    assert any("cancelled by a force-pause" in text for text in tool_texts)
    failed = [e for e in run.events() if e["kind"] == "assistant_failed"]
    assert len(failed) == 1 and failed[0]["payload"]["interrupted"] is True
    nodes = [json.loads(line) for line in (run.path / "nodes.jsonl").read_text().splitlines()]
    assert nodes[1]["detail"]["message"]["content"] == ""


@pytest.mark.integration
def test_a_streamed_reply_is_published_as_assistant_deltas(openai_server, tmp_path):
    openai_server.script(streamed_reply(8), Reply.sse([chat_chunk(role="assistant", tool_calls=[{
        "index": 0, "id": "e1", "type": "function",
        "function": {"name": "evaluate_formula", "arguments": '{"f": "x1*x2**2"}'}}])],
        path=CHAT))
    run = Run(openai_server, tmp_path, max_refinement_depth=2, llm_stream=True,
              pause_on_tool_free=False).start()
    result = run.finish()

    assert result.status == "completed"
    events = run.events()
    completed = [e["payload"] for e in events if e["kind"] == "assistant_completed"]
    text = "".join(f"tok{i} " for i in range(8))
    assert completed[0]["content"] == text
    streamed = [e["payload"] for e in events if e["kind"] == "assistant_delta"]
    assert streamed  # each the text so far of the streamed reply, ending with its piece
    assert all(text.startswith(d["content"]) and d["content"].endswith(d["delta"])
               for d in streamed)
    assert {d["response_id"] for d in streamed} == {completed[0]["response_id"]}
    assert streamed[0]["coord"] == {"R": 1, "C": 1, "L": 1, "K": 1}


def test_a_truncated_reply_pauses_by_default() -> None:
    agent = SRAgentInteractive(llm_provider="offline")
    assert agent.pause_on_truncated is True and agent.pause_on_tool_free is True


@pytest.mark.integration
def test_workspace_changed_for_a_data_refresh_and_for_written_files(openai_server, tmp_path):
    from srh_core.context import AgentContext

    shell = tool_call("workspace_shell", {"command": "mkdir notes"}, "s1")
    openai_server.script(Reply.json(chat_completion(content=None, tool_calls=[shell]),
                                    path=CHAT), evaluate("x1 + x2", "c2"))
    (tmp_path / "ws").mkdir()
    context = AgentContext(workspace=str(tmp_path / "ws"))
    X, y = data()
    path = tmp_path / "run"
    agent = SRAgentInteractive(
        llm_provider="openai", llm_model="test-model", base_url=openai_server.base_url,
        tool_parser="openai", early_stop=False, run_id="ws", save_path=str(path),
        tools=["workspace_shell", "evaluate_formula"], context=context,
        max_refinement_depth=2, pause_on_tool_free=False)

    def new_data(event) -> None:
        if event["event"] == "responses" and event["L"] == 1:
            context.commit_data({**X, "y": X["x1"] + X["x2"]}, target="y")

    agent.observers.append(new_data)
    assert agent.run(X, y, "y")["status"] == "completed"
    events = RunDirectoryChannel(path).read_events(0)["events"]
    changed = [e["payload"] for e in events if e["kind"] == "workspace_changed"]
    assert [c["what"] for c in changed] == ["files", "data"]
    assert changed[0]["tool"] == "workspace_shell" and changed[0]["call_id"] == "s1"
    assert (tmp_path / "ws" / "notes").is_dir()
    assert changed[1]["revision"] == context.revision and changed[1]["features"] == ["x1", "x2"]

"""The Prepare data and Build evaluator panels over HTTP: the authoring agents behind a live
workbench, their model the scripted OpenAI-compatible server reached by the real openai
client; the agents call their tools, the panels show the events and commit."""

from __future__ import annotations

import json
import signal
import threading
import time
import urllib.error
from pathlib import Path

import numpy as np
import pytest

from srh_core.cli import main
from srh_web.panels import Panels, PanelSettings
from tests.core.agent.test_authoring_agents import (
    WRITE_DATA,
    evaluator_program,
    program_call,
    reply,
)
from tests.support.commands import Command, environment, kill_session, wait_session_empty
from tests.support.openai_payloads import tool_call
from tests.support.openai_server import Reply
from tests.support.waits import START_SECONDS
from tests.web.support import Client, LiveServer, free_port, read_sse

PANEL = "lab"


@pytest.fixture
def workbench(openai_server, tmp_path, monkeypatch):
    """A workbench whose panels use the scripted server; a workspace with raw.csv (p = nRT/v)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    root = tmp_path / "workspaces"
    (root / PANEL).mkdir(parents=True)
    v = np.linspace(1.0, 2.0, 24)
    (root / PANEL / "raw.csv").write_text("v,p\n" + "\n".join(
        f"{a:.17g},{b:.17g}" for a, b in zip(v, 2494.2 / v, strict=True)))
    panels = Panels(PanelSettings(root, "openai:test-model", openai_server.base_url))
    with LiveServer([tmp_path / "runs"], panels=panels) as server:
        yield server, Client(server.url), root / PANEL


def finished(client: Client, kind: str) -> dict:
    """The panel's view once its turn ended (a deadline only against a hang)."""
    deadline = time.monotonic() + 60
    while True:
        view = client.json(f"/api/panels/{kind}/{PANEL}")
        if view["status"] != "working":
            return view
        assert time.monotonic() < deadline, "the panel's turn never ended"
        time.sleep(0.05)


def events(server, kind: str, until_kind: str = "execution_completed") -> list[dict]:
    pairs = read_sse(server.url, f"/api/panels/{kind}/{PANEL}/events?after=0",
                     lambda got: any(name == "timeline" and data["kind"] == until_kind
                                     for name, data in got))
    return [data for name, data in pairs if name == "timeline"]


def test_prepare_panel_converses_validates_and_commits(workbench, openai_server):
    server, client, workspace = workbench
    openai_server.script(reply(None, [program_call(WRITE_DATA, "c1")]),
                         reply(None, [tool_call("validate_context_data", {}, "c2")]),
                         reply("context.data holds v and p; p is the target."))
    assert client.json(f"/api/panels/prepare/{PANEL}")["status"] == "new"
    status, _, body = client.post(f"/api/panels/prepare/{PANEL}/messages",
                                  {"message": "Turn raw.csv into context.data; predict p."})
    assert status == 202, body
    view = finished(client, "prepare")
    openai_server.assert_script_consumed()
    assert view["status"] == "idle" and view["error"] is None, view
    result = view["result"]
    assert result["message"] == "context.data holds v and p; p is the target."
    assert result["committed"] and result["validation"]["ok"]
    assert [(e["name"], e["ok"]) for e in result["tool_events"]] == [
        ("workspace_code_executor", True), ("validate_context_data", True)]
    committed = view["committed"]
    assert committed["schema"]["target"] == "p" and committed["schema"]["features"] == ["v"]
    assert committed["path"] == str((workspace / "context.data").resolve())

    timeline = events(server, "prepare")
    kinds = [event["kind"] for event in timeline]
    assert kinds[0] == "prompt_added" and kinds[-1] == "execution_completed"
    assert kinds.count("tool_completed") == 2 and "workspace_changed" in kinds
    assert timeline[0]["payload"]["content"] == "Turn raw.csv into context.data; predict p."
    replies = [e["payload"]["content"] for e in timeline if e["kind"] == "assistant_completed"]
    assert replies[-1] == "context.data holds v and p; p is the target."

    # the user breaks the data by hand: the commit validates again and refuses
    (workspace / "context.data" / "p.npy").unlink()
    status, _, body = client.post(f"/api/panels/prepare/{PANEL}/commit", {})
    refused = json.loads(body)
    assert status == 409 and refused["type"] == "PanelStateError", refused
    assert "does not validate" in refused["error"] and not refused["validation"]["ok"]
    np.save(workspace / "context.data" / "p.npy", 2494.2 / np.linspace(1.0, 2.0, 24))
    status, _, body = client.post(f"/api/panels/prepare/{PANEL}/commit", {})
    assert status == 200 and json.loads(body)["committed"]["schema"]["n_samples"] == 24


def test_evaluator_panel_commits_only_a_proved_evaluator(workbench, openai_server):
    server, client, workspace = workbench
    validate = tool_call("validate_evaluator", {
        "f": 'param("a")/v', "fit": True, "evaluator_file": "context.evaluator/relative.py"},
        "c2")
    openai_server.script(
        reply(None, [program_call(evaluator_program('float(np.sqrt(metrics["mse"]))'), "c1")]),
        reply(None, [validate]),
        reply("relative.py adds max_relative_error; it validates."))
    status, _, body = client.post(f"/api/panels/evaluator/{PANEL}/commit", {})
    assert status == 404 and json.loads(body)["type"] == "PanelNotFoundError"
    status, _, body = client.post(f"/api/panels/evaluator/{PANEL}/messages", {
        "message": "Add the largest relative error as a metric.", "data": "raw.csv",
        "target": "p"})
    assert status == 202, body
    view = finished(client, "evaluator")
    openai_server.assert_script_consumed()
    result = view["result"]
    assert view["status"] == "idle" and result["valid"], view
    assert result["evaluator_file"] == "context.evaluator/relative.py" and not result["unproved"]
    assert "(RelativeErrorEvaluator): valid" in result["tool_events"][-1]["result_str"]
    assert view["committed"] is None                           # nothing until the user commits

    status, _, body = client.post(f"/api/panels/evaluator/{PANEL}/commit", {})
    assert status == 200, body
    committed = json.loads(body)["committed"]
    snapshot = Path(committed["path"])
    assert snapshot.parent == (workspace / "evaluators").resolve()
    assert snapshot.read_bytes() == (workspace / "context.evaluator" / "relative.py").read_bytes()
    assert committed["command"] == f"srh run --evaluator {snapshot}"
    kinds = [event["kind"] for event in events(server, "evaluator", "workspace_changed")]
    assert kinds.count("tool_completed") == 2 and kinds[-1] == "workspace_changed"

    # edited after its proof: no longer proved, so it is not committed
    source = workspace / "context.evaluator" / "relative.py"
    source.write_text(source.read_text() + "\n# edited\n")
    status, _, body = client.post(f"/api/panels/evaluator/{PANEL}/commit", {})
    refused = json.loads(body)
    assert status == 409 and "context.evaluator/relative.py" in refused["error"], refused
    assert sorted(p.name for p in (workspace / "evaluators").iterdir()) == [snapshot.name]


def test_the_offline_provider_is_refused_with_the_cli_line(workbench, capsys):
    server, client, workspace = workbench
    assert main(["prepare", "x", "--workspace", str(workspace)]) == 2
    cli_line = capsys.readouterr().err.strip().removeprefix("srh: error: ")
    status, _, body = client.post(f"/api/panels/prepare/{PANEL}/messages",
                                  {"message": "x", "llm": "offline"})
    refused = json.loads(body)
    assert status == 400 and refused == {"error": cli_line, "type": "ConfigurationError"}
    status, _, body = client.post(f"/api/panels/evaluator/{PANEL}/messages",
                                  {"message": "x", "llm": "offline"})
    assert status == 400 and "EvaluatorConstructionAgent needs a language model" in \
        json.loads(body)["error"]
    assert client.json(f"/api/panels/prepare/{PANEL}")["status"] == "new"


def test_a_failed_turn_is_shown_as_a_typed_error_and_the_panel_goes_on(workbench,
                                                                       openai_server):
    server, client, workspace = workbench
    openai_server.script(Reply.error(401, "invalid api key"), reply("Back again."))
    path = f"/api/panels/prepare/{PANEL}/messages"
    assert client.post(path, {"message": "Look at raw.csv."})[0] == 202
    view = finished(client, "prepare")
    assert view["status"] == "failed" and view["result"] is None
    error = view["error"]
    assert error["type"] == "ModelRequestError" and "\n" not in error["message"]
    assert "HTTP 401" in error["message"] and "invalid api key" in error["message"], error
    failed = events(server, "prepare", "execution_failed")[-1]["payload"]
    assert failed == {"error": error["message"], "type": error["type"]}
    assert client.post(path, {"message": "Try again."})[0] == 202       # the same conversation
    view = finished(client, "prepare")
    assert view["status"] == "idle" and view["result"]["message"] == "Back again."
    assert view["error"] is None and view["turns"] == 2


def test_one_turn_at_a_time_and_bad_requests(workbench, openai_server):
    server, client, workspace = workbench
    release = threading.Event()

    def held(request):  # the turn stays in flight until the test lets it end
        release.wait(60)     # (the fake server's lock is held meanwhile: no .requests here)
        return reply("Nothing to do yet.")

    openai_server.respond_with(held)
    path = f"/api/panels/prepare/{PANEL}/messages"
    try:
        assert client.post(path, {"message": "Look at raw.csv."})[0] == 202
        status, _, body = client.post(path, {"message": "And again."})
        assert status == 409 and json.loads(body)["type"] == "PanelStateError"
        assert "still working" in json.loads(body)["error"]
    finally:
        release.set()
    view = finished(client, "prepare")
    assert view["result"]["message"] == "Nothing to do yet." and not view["result"]["committed"]
    assert view["result"]["validation"] is None                 # no context.data was written

    assert client.post(path, {"message": "  "})[0] == 400
    assert client.post(path, {"message": "x", "llm": 3})[0] == 400
    assert client.post(path, b"[1]")[0] == 400
    assert client.post(path, {"message": "x"}, csrf=False)[0] == 403
    assert client.get("/api/panels/prepare/..%2Fetc")[0] == 404
    assert client.get("/api/panels/other/lab")[0] == 404
    status, _, body = client.post(f"/api/panels/evaluator/{PANEL}/messages", {
        "message": "x", "data": "../outside.csv", "target": "p"})
    assert status == 400 and "inside the workspace" in json.loads(body)["error"]
    listed = client.json("/api/panels")["panels"]
    assert {(p["kind"], p["panel_id"]) for p in listed} == {("prepare", PANEL),
                                                             ("evaluator", PANEL)}


def test_closing_the_panels_ends_a_turn_at_its_next_boundary(workbench, openai_server):
    server, client, workspace = workbench
    asked, release = threading.Event(), threading.Event()

    def endless(request):  # every reply calls a tool, so only a stop can end the turn
        asked.set()
        release.wait(60)
        return reply(None, [tool_call("validate_context_data", {}, "c1")])

    openai_server.respond_with(endless)
    assert client.post(f"/api/panels/prepare/{PANEL}/messages",
                       {"message": "Validate forever."})[0] == 202
    assert asked.wait(60)
    try:
        assert server.panels.close(timeout=0) is False       # stopping; the turn is in flight
        status, _, body = client.post(f"/api/panels/evaluator/{PANEL}/messages",
                                      {"message": "x"})
        assert status == 409 and "shutting down" in json.loads(body)["error"]
    finally:
        release.set()
    assert server.panels.close(timeout=60) is True   # the turn ended at its boundary
    view = client.json(f"/api/panels/prepare/{PANEL}")
    assert view["status"] == "idle" and view["result"]["stopped"] == "max_steps"
    assert view["result"]["steps"] == 1 and len(openai_server.requests) == 1


def test_srh_web_serves_the_panels_and_ctrl_c_ends_a_turn_in_flight(openai_server, tmp_path):
    workspaces = tmp_path / "workspaces"
    asked, release = threading.Event(), threading.Event()
    calls = []

    def endless(request):  # every reply calls a tool, so only a stop or max_steps ends it
        calls.append(request)
        asked.set()
        release.wait(60)
        return reply(None, [tool_call("validate_context_data", {}, "c1")])

    openai_server.respond_with(endless)
    port = free_port()
    command = Command(["web", "--port", str(port), "--runs", str(tmp_path / "runs"),
                       "--workspaces", str(workspaces), "--llm", "openai:test-model",
                       "--base-url", openai_server.base_url], cwd=tmp_path,
                      env=environment(OPENAI_API_KEY="sk-test"))
    try:
        client = Client(f"http://127.0.0.1:{port}")
        deadline = time.monotonic() + START_SECONDS  # srh web is starting
        while True:
            try:
                view = client.json(f"/api/panels/prepare/{PANEL}")
                break
            except urllib.error.URLError:  # not listening yet
                assert time.monotonic() < deadline, "srh web never answered"
                time.sleep(0.1)
        assert view["workspace"] == str(workspaces / PANEL)
        assert view["llm"] == "openai:test-model" and view["status"] == "new"
        assert client.post(f"/api/panels/prepare/{PANEL}/messages",
                           {"message": "Validate forever."})[0] == 202
        assert asked.wait(60)
        command.signal(signal.SIGINT)
        # The app's lifespan finds the turn in flight (its model still holds the reply):
        # released earlier, the turn could end on its own (max_steps) before the shutdown
        # reaches the lifespan, and nothing would be in flight to stop.
        command.wait_stderr("Stopping 1 panel turn(s) in flight", 60)
        release.set()                  # the turn goes on until its next safe boundary
        finished = command.finish(60)
        assert finished.returncode == 0, finished.stderr
        assert "Stopping 1 panel turn(s) in flight" in finished.stderr
        assert len(calls) == 1             # no further model response after the stop
        assert wait_session_empty(command.session, 10) == []
    finally:
        release.set()
        if command.process.poll() is None:
            kill_session(command.session)

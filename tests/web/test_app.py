"""The workbench over real run directories, a real sweep and a live interactive run."""

from __future__ import annotations

import csv
import io
import json
import threading
import time

import pytest

from srh_core.interactive import SRAgentInteractive
from tests.support.openai_payloads import chat_completion, tool_call
from tests.support.openai_server import Reply
from tests.web.support import Client, LiveServer, read_sse

CHAT = "/v1/chat/completions"
SCRIPT = "<script>window.__xss=1</script>"
PAYLOAD = f'x1 + "{SCRIPT}"'   # the tool's error message quotes it back


@pytest.fixture(scope="module")
def server(runs_root):
    with LiveServer([runs_root]) as live:
        yield live


def test_runs_are_listed_from_their_directories(server):
    runs = {run["key"]: run for run in Client(server.url).json("/api/runs")["runs"]}
    run = runs["offline-run"]
    assert run["status"] == "completed" and run["nodes"] == run["max_nodes"] == 8
    assert run["best_formula"] and run["source"] == "directory"
    assert sum(key.startswith("mini-") for key in runs) == 2     # the sweep's cell runs


def test_run_summary_tree_and_node_detail(server):
    client = Client(server.url)
    summary = client.json("/api/runs/offline-run")
    assert {k: summary["settings"][k] for k in ("R", "C", "L", "K", "max_nodes")} == {
        "R": 1, "C": 2, "L": 2, "K": 2, "max_nodes": 8}
    assert summary["elapsed_seconds"] > 0 and summary["tokens"]["total"] == 0
    assert summary["cost"] is None
    best = summary["best"]
    assert best["formula"] == "x1*x2**2" and best["latex"] == "x_{1} \\cdot {x_{2}}^{2}"
    complexities = [row["complexity"] for row in summary["front"]["front"]]
    assert complexities == sorted(set(complexities), reverse=True)   # the front's rule
    assert [b["C"] for b in summary["branches"]] == [1, 2]

    nodes = client.json("/api/runs/offline-run/nodes")
    assert nodes["total"] == 8
    labels = [n["label"] for n in nodes["nodes"]]
    assert "R1-C1-L1-K1" in labels and "R1-C2-L2-K2" in labels  # branches run on threads
    assert client.json("/api/runs/offline-run/nodes?after=6")["nodes"][0]["label"] == labels[6]
    step2 = next(n for n in nodes["nodes"] if n["label"] == "R1-C1-L2-K1")
    assert step2["parents"][0]["relation"] == "continuation"

    by_label = {n["label"]: n["node_id"] for n in nodes["nodes"]}
    detail = client.json(f"/api/runs/offline-run/nodes/{by_label['R1-C1-L1-K1']}")
    assert detail["prompt"][0]["role"] == "system" and detail["tool_calls"]
    assert all("result_str" in call for call in detail["tool_calls"])
    sibling = client.json(f"/api/runs/offline-run/nodes/{by_label['R1-C1-L1-K2']}")
    assert sibling["prompt"] == detail["prompt"] and sibling["prompt_node"]
    assert client.get("/api/runs/offline-run/nodes/nope")[0] == 404
    assert client.get("/api/runs/missing")[0] == 404


def test_pages_and_katex_are_served_from_the_package(server):
    client = Client(server.url)
    for path in ("/", "/runs/offline-run", "/sweeps", "/sweeps/mini", "/cluster"):
        status, headers, body = client.get(path)
        assert status == 200 and headers["content-type"].startswith("text/html")
        assert b"http://" not in body and b"https://" not in body    # nothing from the network
    status, _, script = client.get("/static/vendor/katex/katex.min.js")
    assert status == 200 and b"katex" in script[:400]
    status, _, css = client.get("/static/vendor/katex/katex.min.css")
    font = css.decode().split("url(")[1].split(")")[0]
    assert client.get(f"/static/vendor/katex/{font}")[0] == 200


def test_sweeps_page_filters_and_downloads_csv(server):
    client = Client(server.url)
    sweeps = client.json("/api/sweeps")["sweeps"]
    assert [(s["name"], s["total"], s["counts"]["done"]) for s in sweeps] == [("mini", 2, 2)]
    table = client.json("/api/sweeps/mini")
    assert {row["problem"] for row in table["rows"]} == {"feynman-I.12.4", "feynman-I.6.2a"}
    assert all(row["best_formula"] and row["seconds"] > 0 for row in table["rows"])
    assert all(isinstance(row["solved"], bool) for row in table["rows"])
    only = client.json("/api/sweeps/mini?q=I.12.4")["rows"]
    assert [row["problem"] for row in only] == ["feynman-I.12.4"]
    assert client.json("/api/sweeps/mini?status=failed")["rows"] == []
    status, headers, body = client.get("/api/sweeps/mini/results.csv?q=I.6.2a")
    assert status == 200 and "attachment" in headers["content-disposition"]
    rows = list(csv.DictReader(io.StringIO(body.decode())))
    assert [row["problem"] for row in rows] == ["feynman-I.6.2a"] and "cost" in rows[0]


def test_cluster_page_without_redis_says_so(server):
    assert Client(server.url).json("/api/cluster") == {"enabled": False}


# ------------------------------------------------------------ a live run
def reply(f: str, call_id: str, hold: threading.Event | None = None) -> Reply:
    return Reply.json(chat_completion(content=None, tool_calls=[
        tool_call("evaluate_formula", {"f": f}, call_id)]), path=CHAT, hold=hold)


@pytest.fixture
def live_run(openai_server, tmp_path, monkeypatch):
    """An interactive run whose first step is answered when the test sets the yielded event
    (a command sent before it lands in that step, however slow the machine); a tool result
    carries a script payload."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    first = threading.Event()
    openai_server.script(reply(PAYLOAD, "c1", hold=first), reply("x1*x2**2", "c2"))
    agent = SRAgentInteractive(llm_provider="openai", llm_model="test-model",
                               base_url=openai_server.base_url, max_refinement_depth=2,
                               early_stop=False, run_id="live", tools=["evaluate_formula"],
                               save_path=str(tmp_path / "runs" / "live"))
    agent.interaction_manager.command("message", "first hint")
    import numpy as np

    x1, x2 = np.linspace(1, 2, 50), np.linspace(2, 3, 50)
    thread = threading.Thread(target=agent.run, args=({"x1": x1, "x2": x2}, {"y": x1 * x2**2}),
                              daemon=True)
    with LiveServer([tmp_path / "runs"]) as live:
        client = Client(live.url)
        thread.start()
        yield live, client, agent, openai_server, first
        first.set()
        if agent.interaction_manager.state in ("pausing", "paused"):
            agent.interaction_manager.command("resume")
        thread.join(timeout=20)


def test_controls_and_live_events_of_an_interactive_run(live_run):
    live, client, agent, openai_server, first = live_run
    openai_server.wait_for_requests(1, timeout=30)
    status, _, body = client.post("/api/runs/live/control", {"action": "pause"})
    assert status == 202, body
    received = time.monotonic() + 30  # the run's bridge reads the command on its own thread
    while agent.interaction_manager.state != "pausing":
        assert time.monotonic() < received, agent.interaction_manager.state
        time.sleep(0.01)
    first.set()                       # step 1 ends after the pause: its boundary holds the run
    events = read_sse(live.url, "/api/runs/live/events", lambda got: any(
        name == "timeline" and data["kind"] == "state_changed"
        and data["payload"]["current"] == "paused" for name, data in got))
    kinds = [data["kind"] for name, data in events if name == "timeline"]
    assert "command_received" in kinds and "prompt_added" in kinds
    summary = client.json("/api/runs/live")
    assert summary["control"]["interaction_state"] == "paused" and summary["control"]["alive"]

    status, _, body = client.post("/api/runs/live/control", {"action": "jump"})
    assert status == 400 and b"Unknown control action" in body
    status, _, body = client.post("/api/runs/live/control", {"action": "message",
                                                             "message": "try x1*x2**2"})
    assert status == 202
    openai_server.wait_for_requests(2, timeout=30)
    last_user = [m for m in openai_server.bodies()[1]["messages"] if m["role"] == "user"][-1]
    assert last_user["content"].endswith("try x1*x2**2")


def test_a_script_in_a_tool_result_stays_text(live_run):
    live, client, agent, openai_server, first = live_run
    first.set()
    openai_server.wait_for_requests(2, timeout=30)
    node_id = client.json("/api/runs/live/nodes")["nodes"][0]["node_id"]
    status, _, raw = client.get(f"/api/runs/live/nodes/{node_id}")
    assert status == 200 and b"<script" not in raw and b"</script" not in raw
    detail = json.loads(raw)
    assert any(SCRIPT in call["result_str"] for call in detail["tool_calls"]), detail["tool_calls"]

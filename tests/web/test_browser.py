"""The workbench in a real browser: headless Chromium (Debian's) driven by Playwright.

A run's timeline: streamed reply text (assistant_delta) shown as it grows, and event kinds
the page has no code for shown from their payload. The Prepare data panel: a message typed
and sent, the agent's tool results and reply shown as they arrive (a script in the reply
shown as text), the committed data shown; then the Build evaluator panel of the same id
proves an evaluator on that data and commits it.
A live embedded run (``srh run --interactive`` in its own process, its model
the local OpenAI-compatible server) is watched through ``srh web``: nodes
appear, Pause holds the run with no step in flight, Resume finishes it, and a
script in a tool result is shown as text. Skipped where Chromium or Python's
playwright is missing; ``.ci/run`` installs Chromium and the README's test
command installs playwright, so CI runs it. Set ``SRH_WEB_SCREENSHOT=PATH`` to
also save the screenshot there (docs/workbench.png was made that way).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from srh_core.interactive import RunDirectoryChannel
from srh_web.panels import Panels, PanelSettings
from tests.core.agent.test_authoring_agents import WRITE_DATA, evaluator_program, program_call
from tests.support.openai_payloads import chat_completion, tool_call
from tests.support.openai_server import Reply
from tests.support.waits import START_SECONDS
from tests.web.support import LiveServer

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SCRIPT = "<script>window.__xss=1</script>"
CHAT = "/v1/chat/completions"
STEPS = 6

try:
    from playwright.sync_api import sync_playwright
except ImportError:  # pragma: no cover - the dev extra installs it
    sync_playwright = None

pytestmark = [
    pytest.mark.integration, pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None, reason="no Chromium installed (apt-get install "
                       "chromium); .ci/run installs it"),
    pytest.mark.skipif(sync_playwright is None, reason="playwright is not installed "
                       "(pip install -e '.[dev,web]')"),
]


def replies(paused: threading.Event) -> list[Reply]:
    """Step 1 returns a script in its tool result; step 2 calls no tool, so the run pauses
    itself and waits for the browser; step 3 is answered once the run has the browser's
    Pause (``paused`` set), so the Pause lands in it however slow the machine."""
    def evaluate(f: str, i: int, delay: float = 0.3, hold: threading.Event | None = None
                 ) -> Reply:
        return Reply.json(chat_completion(content=f"Step {i}: trying {f}.", tool_calls=[
            tool_call("evaluate_formula", {"f": f}, f"c{i}")]), path=CHAT, delay=delay,
            hold=hold)

    return [evaluate(f'x1 + "{SCRIPT}"', 1),
            Reply.json(chat_completion(content="Which family should I try next?"), path=CHAT),
            evaluate("x1*x2", 3, hold=paused), evaluate("x1*x2**2", 4), evaluate("x2**2", 5),
            evaluate("x1*x2**2", 6)]


@pytest.fixture
def live_run(openai_server, tmp_path):
    """``srh run --interactive`` in a subprocess; its run directory under ``tmp_path/runs``,
    and the event that lets step 3 be answered."""
    paused = threading.Event()
    openai_server.script(*replies(paused))
    rng = np.random.default_rng(3)
    x1, x2 = rng.uniform(1, 4, 60), rng.uniform(1, 4, 60)
    data = tmp_path / "data.csv"
    np.savetxt(data, np.column_stack([x1, x2, x1 * x2**2]), delimiter=",", header="x1,x2,y",
               comments="")
    command = [sys.executable, "-m", "srh_core", "run", "--interactive", "--data", str(data),
               "--target", "y", "--llm", "openai:test-model", "--base-url", openai_server.base_url,
               "-L", str(STEPS), "--no-early-stop", "--run-id", "browser",
               "--out", str(tmp_path / "runs" / "browser")]
    env = {**os.environ, "OPENAI_API_KEY": "sk-test", "PYTHONPATH": str(Path.cwd())}
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    try:
        yield process, tmp_path / "runs", paused
    finally:
        paused.set()
        if process.poll() is None:
            process.kill()
        process.wait(timeout=10)


def test_watch_pause_and_resume_a_live_run_in_chromium(live_run, openai_server, tmp_path):
    process, runs, paused = live_run
    with LiveServer([runs]) as server, chromium_page(tmp_path) as (page, errors):
        wait_for_run_page(page, f"{server.url}/runs/browser")
        nodes = page.locator("g.node")
        control = page.locator("#control-state")
        poll(page, lambda: control.inner_text() == "paused")     # the tool-free reply
        poll(page, lambda: nodes.count() == 2)   # the tree may render after the state

        page.locator("#resume").click()
        poll(page, lambda: control.inner_text() == "running")
        channel = RunDirectoryChannel(runs / "browser")
        pauses = received_pauses(channel)
        page.locator("#pause").click()                           # lands in held step 3
        poll(page, lambda: received_pauses(channel) > pauses)    # the run has it
        paused.set()
        poll(page, lambda: control.inner_text() == "paused")
        poll(page, lambda: nodes.count() == 3)                   # nodes appear live
        requests = len(openai_server.requests)
        assert "no step in flight" in page.locator("#control-note").inner_text()
        time.sleep(0.5)
        assert len(openai_server.requests) == requests == 3      # held: nothing is asked
        assert nodes.count() == 3

        nodes.nth(0).click()                  # the step whose tool result carries a script
        poll(page, lambda: "L1" in page.locator("#node-title").inner_text())
        result = page.locator("#node .tool-result").first.inner_text()
        assert "<script>window.__xss=1</script>" in result
        assert page.evaluate("window.__xss") is None
        assert page.locator("#node script").count() == 0
        assert page.locator("#best .katex").count() == 1     # the best formula as math
        shot = page.screenshot(path=str(tmp_path / "workbench.png"), full_page=True)
        if os.environ.get("SRH_WEB_SCREENSHOT"):
            Path(os.environ["SRH_WEB_SCREENSHOT"]).write_bytes(shot)

        page.locator("#resume").click()
        poll(page, lambda: nodes.count() == STEPS)
        poll(page, lambda: page.locator("#status").inner_text() == "completed")
        assert errors == []
    assert process.wait(timeout=30) == 0, process.stderr.read()
    openai_server.assert_script_consumed()
    assert (tmp_path / "workbench.png").stat().st_size > 10_000


def test_prepare_data_then_build_an_evaluator_in_chromium(openai_server, tmp_path,
                                                         monkeypatch):
    """Both panels of one id: the data prepared in the first is what the second proves on."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    workspace = tmp_path / "workspaces" / "lab"
    workspace.mkdir(parents=True)
    (workspace / "raw.csv").write_text("v,p\n" + "\n".join(f"{v},{8 / v}" for v in range(1, 17)))
    answer = f"context.data is ready: p from v. {SCRIPT}"
    validate = tool_call("validate_evaluator", {
        "f": 'param("a")/v', "fit": True, "evaluator_file": "context.evaluator/relative.py"},
        "c4")
    metric = 'float(np.sqrt(metrics["mse"]))'
    openai_server.script(
        Reply.json(chat_completion(tool_calls=[program_call(WRITE_DATA, "c1")]), path=CHAT),
        Reply.json(chat_completion(tool_calls=[tool_call("validate_context_data", {}, "c2")]),
                   path=CHAT),
        Reply.json(chat_completion(content=answer), path=CHAT),
        Reply.json(chat_completion(tool_calls=[program_call(evaluator_program(metric), "c3")]),
                   path=CHAT),
        Reply.json(chat_completion(tool_calls=[validate]), path=CHAT),
        Reply.json(chat_completion(content="relative.py is proved."), path=CHAT))
    panels = Panels(PanelSettings(tmp_path / "workspaces", "openai:test-model",
                                  openai_server.base_url))
    with LiveServer([tmp_path / "runs"], panels=panels) as server, \
            chromium_page(tmp_path) as (page, errors):
        page.goto(f"{server.url}/panels/prepare/lab")
        poll(page, lambda: page.locator("#live").inner_text() == "live")
        assert page.locator("#status").inner_text() == "new"
        page.locator("#message").fill("Turn raw.csv into context.data; predict p.")
        page.locator("#send").click()
        replies = page.locator("#conversation .msg.assistant .reply")
        poll(page, lambda: replies.count() == 1)
        assert replies.first.inner_text() == answer                 # text, not markup
        assert page.evaluate("window.__xss") is None
        conversation = page.locator("#conversation")
        assert page.locator("#conversation .msg.user").first.inner_text().endswith(
            "Turn raw.csv into context.data; predict p.")
        assert page.locator("#conversation .msg.tool").count() == 2
        assert "valid; it can be committed" in conversation.inner_text()
        poll(page, lambda: page.locator("#committed-text").count() == 1)
        assert "target p, features v, 16 samples" in \
            page.locator("#committed-text").inner_text()
        assert page.locator("#status").inner_text() == "idle"
        assert "workspace_changed" in conversation.inner_text()     # a generic event line

        page.locator("header.top a", has_text="Build evaluator").click()
        page.locator("#panel-id").fill("lab")
        page.locator("#open").click()
        poll(page, lambda: page.locator("#live").inner_text() == "live"
             and page.url.endswith("/panels/evaluator/lab"))
        assert page.locator("#commit").is_disabled()                # nothing proved yet
        page.locator("#message").fill("Add the largest relative error as a metric.")
        page.locator("#send").click()
        poll(page, lambda: "proved: context.evaluator/relative.py" in
             page.locator("#result").inner_text())
        poll(page, lambda: page.locator("#commit").is_enabled())
        page.locator("#commit").click()
        poll(page, lambda: page.locator("#committed-text").count() == 1)
        committed = page.locator("#committed-text").inner_text()
        assert f"srh run --evaluator {workspace.resolve() / 'evaluators'}/relative-" in committed
        assert errors == []
    openai_server.assert_script_consumed()


def test_streamed_text_and_any_event_kind_in_the_run_view(runs_root, tmp_path):
    run = tmp_path / "runs" / "streamed"
    shutil.copytree(runs_root / "offline-run", run)
    (run / "interaction.json").write_text(json.dumps({"status": {"interaction_state": "idle"}}))
    coord = {"R": 1, "C": 1, "L": 1, "K": 1}

    def publish(seq: int, kind: str, payload: dict) -> None:  # as the run process appends them
        with (run / "events.jsonl").open("a") as stream:
            stream.write(json.dumps({"seq": seq, "id": f"e{seq}", "kind": kind,
                                     "timestamp": 1.0e9, "payload": payload}) + "\n")

    publish(1, "assistant_delta", {"response_id": "r1", "coord": coord, "delta": "Trying",
                                   "content": "Trying"})
    publish(2, "settings_applied", {"settings": {"llm_model": "m2"}})
    publish(3, "novel_kind", {"detail": "shown generically", "coord": coord})
    with LiveServer([tmp_path / "runs"]) as server, chromium_page(tmp_path) as (page, errors):
        page.goto(f"{server.url}/runs/offline-run")    # the key is the run id
        stream = page.locator("#streams pre")
        poll(page, lambda: stream.count() == 1 and stream.inner_text() == "Trying")
        timeline = page.locator("#timeline")
        poll(page, lambda: "novel_kind" in timeline.inner_text())
        assert "R1-C1-L1-K1 detail=shown generically" in timeline.inner_text()
        assert "settings_applied llm_model=m2" in timeline.inner_text()
        assert "assistant_delta" not in timeline.inner_text()     # text, not a line each
        publish(4, "assistant_delta", {"response_id": "r1", "coord": coord,
                                       "delta": " x1*x2", "content": "Trying x1*x2"})
        poll(page, lambda: stream.inner_text() == "Trying x1*x2")
        publish(5, "assistant_completed", {"response_id": "r1", "coord": coord,
                                           "content": "Trying x1*x2.", "tool_calls": []})
        role = page.locator("#streams .role")           # (text_content: CSS uppercases it)
        poll(page, lambda: role.text_content().endswith("complete"))
        assert stream.inner_text() == "Trying x1*x2."
        assert errors == []


@contextmanager
def chromium_page(tmp_path: Path) -> Iterator[tuple[Any, list[str]]]:
    """A page of headless Chromium and the list its uncaught script errors go to."""
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=CHROMIUM, headless=True, args=FLAGS,
            viewport={"width": 1400, "height": 1000})
        try:
            page = browser.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda error: errors.append(str(error)))
            yield page, errors
        finally:
            browser.close()


def wait_for_run_page(page, url: str) -> None:
    """Open the run's page once its run directory exists (the run process is starting)."""
    deadline = time.monotonic() + START_SECONDS
    while True:
        page.goto(url)
        page.wait_for_timeout(300)
        if page.locator("#title").inner_text() == "Run browser":
            return
        assert time.monotonic() < deadline, "the run never showed up in srh web"


def received_pauses(channel: RunDirectoryChannel) -> int:
    return sum(e["kind"] == "command_received" and e["payload"]["action"] == "pause"
               for e in channel.read_events(0)["events"])


def poll(page, condition, timeout: float = 30.0) -> None:
    """Wait for ``condition()`` (read through locators: the page's CSP forbids eval)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the page never reached the expected state"
        page.wait_for_timeout(100)

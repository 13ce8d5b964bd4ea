"""``srh prepare`` and ``srh evaluator``: a subprocess against the scripted model server;
the refusals in process."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from srh_core.cli import main
from tests.core.agent.test_authoring_agents import WRITE_DATA, program_call, reply
from tests.support.commands import SRH
from tests.support.openai_payloads import tool_call


def test_prepare_commits_the_data_the_model_wrote(openai_server, tmp_path: Path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "raw.csv").write_text("v,p\n1,8\n2,4\n4,2\n8,1\n")
    openai_server.script(reply(None, [program_call(WRITE_DATA, "c1")]),
                         reply("context.data is ready: p from v."))
    completed = subprocess.run(
        [SRH, "prepare", "Make p from v searchable.", "--workspace", str(workspace),
         "--llm", "openai:test-model", "--base-url", openai_server.base_url, "--json"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
        env={**os.environ, "OPENAI_API_KEY": "sk-test"})
    openai_server.assert_script_consumed()
    assert completed.returncode == 0, completed.stderr
    result = json.loads(completed.stdout)
    assert result["committed"] and result["context"]["target"] == "p"
    assert result["context"]["features"] == ["v"] and result["context"]["n_samples"] == 4
    assert (workspace / "context.data" / "manifest.json").is_file()


@pytest.mark.parametrize(("argv", "expected"), [
    (["prepare", "x"], "needs a language model"),
    (["evaluator", "x", "--llm", "openai:m"], "No data to prove an evaluator on"),
    (["evaluator", "x", "--llm", "offline", "--data", "DATA", "--target", "y"],
     "needs a language model"),
], ids=["prepare-offline", "evaluator-no-data", "evaluator-offline"])
def test_what_cannot_author_is_refused_in_one_line(argv, expected, tmp_path, capsys):
    data = tmp_path / "d.csv"
    data.write_text("x,y\n1,2\n2,4\n3,6\n")
    argv = [str(data) if word == "DATA" else word for word in argv]
    assert main([*argv, "--workspace", str(tmp_path / "ws")]) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and expected in error[0]


def test_tool_call_asks_the_model_given_with_llm(openai_server, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    data = tmp_path / "d.csv"
    data.write_text("x,y\n1,2\n2,4\n3,6\n")
    openai_server.script(reply("Linear: y = 2x."))
    assert main(["tool", "call", "call_llm", "--data", str(data), "--target", "y",
                 "--params", '{"messages": "Shape of y?"}', "--llm", "openai:test-model",
                 "--base-url", openai_server.base_url]) == 0
    assert capsys.readouterr().out.startswith("Linear: y = 2x.")
    openai_server.assert_script_consumed()


def test_model_test_passes_only_for_the_exact_value(openai_server, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")

    def answer(value: str | None):
        def respond(request):
            asked = request.body["messages"][-1]["content"].split("'")[1]
            if value is None:
                return reply("Sure, the value is " + asked)
            return reply(None, [tool_call("report_model_test", {"answer": value or asked})])
        return respond

    argv = ["model-test", "--llm", "openai:test-model", "--base-url", openai_server.base_url,
            "--json"]
    for value, code, what in [("", 0, "with the requested value"), ("SRH-0", 1, "instead of"),
                              (None, 1, "without a tool call")]:
        openai_server.respond_with(answer(value))
        assert main(argv) == code
        outcome = json.loads(capsys.readouterr().out)
        assert outcome["passed"] is (code == 0) and what in outcome["what"]
    body = openai_server.bodies()[0]
    assert [tool["function"]["name"] for tool in body["tools"]] == ["report_model_test"]

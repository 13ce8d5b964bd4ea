"""code_executor: the stdin protocol, and every failure as an ok=True run report.

Decision under test: a program that fails, is killed or is refused by the
sandbox is still an ``ok=True`` result (``success`` false, with exit code,
kill reason and stderr), because its output is what the model needs.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import srh_core.tools.code as code
from srh_core.context import AgentContext
from srh_core.errors import ToolRunAbort
from srh_core.tools.code import CodeExecutorTool
from tests.core.tools.code.helpers import ESCAPES, call, escape_timeout, make_context

REPORT_KEYS = {"success", "exit_code", "killed_reason", "timed_out", "memory_error",
               "duration_seconds", "cpu_seconds", "peak_memory_mb", "stdout", "stderr",
               "stdout_truncated", "stderr_truncated", "limits", "isolation", "emitted", "data"}
PROTOCOL_PROGRAM = """
import sys, json
data_dict = json.loads(sys.stdin.read())
print(json.dumps({"names": sorted(data_dict), "rows": len(data_dict["x1"]),
                  "same": payload == data_dict}))
emit_result({"first_y": data_dict["y"][0]})
"""


def run(context: AgentContext, program: str, **params: Any) -> Any:
    return call("code_executor", context, program=program, **params)


def test_training_data_arrives_on_stdin_and_in_payload(context: AgentContext) -> None:
    result = run(context, PROTOCOL_PROGRAM)
    assert result.ok and result.result["success"], result.result_str
    assert set(result.result) == REPORT_KEYS
    seen = json.loads(result.result["stdout"])
    assert seen == {"names": ["x1", "x2", "y"], "rows": 30, "same": True}  # names -> lists
    assert result.result["data"]["target"] == "y"
    assert result.result["data"]["features"] == ["x1", "x2"]
    assert result.result["emitted"] == {"first_y": context.train_split.data["y"][0]}
    assert result.result["data"]["n_samples"] == 30 and not result.result["data"]["subsampled"]
    assert result.result_str.startswith("The program finished (exit code 0)")
    assert "rlimits" in result.result["isolation"]
    json.dumps(result.to_dict(), allow_nan=False)


def test_large_data_is_subsampled_deterministically(monkeypatch: pytest.MonkeyPatch,
                                                    context: AgentContext) -> None:
    monkeypatch.setattr(code, "MAX_PAYLOAD_VALUES", 30)
    payload = code.data_payload(context)
    assert payload["subsampled"] and payload["n_samples"] == 10
    assert payload["n_samples_total"] == 30
    again = code.data_payload(context)
    assert (payload["data"]["x1"] == again["data"]["x1"]).all()
    result = run(context, "import sys, json\nprint(len(json.load(sys.stdin)['y']))")
    assert result.result["stdout"].strip() == "10"
    assert "10 of 30 training rows (deterministic subsample)" in result.result_str


def test_fenced_program_runs(context: AgentContext) -> None:
    result = run(context, "```python\nprint(6 * 7)\n```")
    assert result.result["stdout"] == "42\n"


EXPECTED = {  # escape -> (field, value) that must show in the report
    "fork": ("stderr", "not allowed in the sandbox"),
    "subprocess": ("stderr", "not allowed in the sandbox"),
    "socket": ("stderr", "not allowed in the sandbox"),
    "read_passwd": ("stderr", "not allowed in the sandbox"),
    "write_outside": ("stderr", "not allowed in the sandbox"),
    "infinite_loop": ("killed_reason", "timeout"),
    "memory_bomb": ("memory_error", True),
    "output_flood": ("killed_reason", "output_limit"),
}


@pytest.mark.parametrize("name", ESCAPES, ids=ESCAPES.keys())
def test_escapes_are_stopped_and_reported(context: AgentContext, name: str) -> None:
    result = run(context, ESCAPES[name], timeout_seconds=escape_timeout(name),
                 memory_limit_mb=256, output_limit_bytes=4096)
    assert result.ok
    report = result.result
    assert report["success"] is False
    field, expected = EXPECTED[name]
    if isinstance(expected, str) and field == "stderr":
        assert expected in report["stderr"]
    else:
        assert report[field] == expected
    assert len(report["stdout"]) < 4096 + 200
    assert not Path("/tmp/srh-code-tool-escape.txt").exists()
    assert result.result_str.startswith("The program ")
    assert "finished" not in result.result_str.splitlines()[0]


def test_timeout_is_reported_in_words(context: AgentContext) -> None:
    result = run(context, "import time\ntime.sleep(30)", timeout_seconds=0.5)
    assert result.result["timed_out"]
    assert "ran past the 0.5 s time limit" in result.result_str


def test_cancellation_stops_the_program(context: AgentContext) -> None:
    tool = CodeExecutorTool(context)
    timer = threading.Timer(0.3, tool.cancel)
    started = time.monotonic()
    timer.start()
    with pytest.raises(ToolRunAbort):
        tool(program="import time\ntime.sleep(30)", timeout_seconds=20)
    assert time.monotonic() - started < 5


@pytest.mark.parametrize(("params", "needle"), [
    ({"program": ""}, "'program'"),
    ({"program": "print(1)", "timeout_seconds": 0}, "'timeout_seconds'"),
    ({"program": "print(1)", "memory_limit_mb": 64}, ">= 128"),
    ({"program": "print(1)", "output_limit_bytes": "lots"}, "output_limit_bytes"),
    ({"program": "print(1)", "workspace": "/"}, "Unknown argument"),
], ids=["empty", "timeout_zero", "memory_low", "output_text", "unknown_argument"])
def test_invalid_arguments(context: AgentContext, params: dict[str, Any], needle: str) -> None:
    result = call("code_executor", context, **params)
    assert not result.ok and needle in result.result_str


def test_run_settings_cap_the_limits() -> None:
    context = make_context(code_max_timeout_seconds=2)
    result = run(context, "print(1)", timeout_seconds=500)
    assert result.result["limits"]["timeout_seconds"] == 2.0
    assert result.result["limits"]["capped"] == ["timeout_seconds"]
    assert "reduced to the allowed maximum: timeout_seconds" in result.result_str


def test_available_on_linux() -> None:
    assert CodeExecutorTool.availability() is None


def test_a_context_without_data_still_runs_the_program() -> None:
    result = call("code_executor", None, program="import sys, json\nprint(json.load(sys.stdin))")
    assert result.ok and result.result["success"]
    assert result.result["stdout"].strip() == "{}"  # no variables

"""The stdin-JSON protocol, and runs inside a managed workspace."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from srh_core.errors import ConfigurationError, WorkspaceError
from srh_core.sandbox import SandboxRunner, run_python_with_json
from srh_core.workspace import Workspace

FIT_PROGRAM = """
import numpy as np
X = np.asarray(payload["X"], dtype=float)
y = np.asarray(payload["y"], dtype=float)
A = np.column_stack([X, np.ones(len(X))])
coef, *_ = np.linalg.lstsq(A, y, rcond=None)
print("noise on stdout, not part of the result")
emit_result({"coef": coef, "mse": float(np.mean((A @ coef - y) ** 2)), "n": np.int64(len(y))})
"""


def test_numpy_fit_returns_json(runner: SandboxRunner) -> None:
    X = np.linspace(0, 1, 50)
    payload = {"X": X, "y": 3 * X + 2}
    result, value = run_python_with_json(FIT_PROGRAM, payload, runner=runner, timeout_seconds=20)
    assert result.ok, result.stderr
    assert value["coef"] == pytest.approx([3.0, 2.0])
    assert value["mse"] < 1e-20 and value["n"] == 50
    assert "noise on stdout" in result.stdout


def test_stdin_is_still_readable_and_non_finite_values_survive(runner: SandboxRunner) -> None:
    code = "import json, sys\ndata = json.loads(sys.stdin.read())\nemit_result(data['v'] + [1])"
    result, value = run_python_with_json(code, {"v": [math.nan, math.inf]}, runner=runner)
    assert result.ok
    assert math.isnan(value[0]) and value[1:] == [math.inf, 1]


def test_last_emit_wins_and_missing_emit_is_none(runner: SandboxRunner) -> None:
    _, value = run_python_with_json("emit_result(1)\nemit_result({'a': 2})", {}, runner=runner)
    assert value == {"a": 2}
    result, value = run_python_with_json("print('[1, 2]')", {}, runner=runner)
    assert result.ok and value is None


def test_value_emitted_before_a_crash_is_returned_with_a_failed_result(
    runner: SandboxRunner,
) -> None:
    result, value = run_python_with_json("emit_result([1])\n1 / 0", {}, runner=runner)
    assert value == [1]
    assert not result.ok and "ZeroDivisionError" in result.stderr


@pytest.mark.parametrize("payload", [[1, 2], {"f": object()}], ids=["not_a_mapping", "object"])
def test_unencodable_payload_is_a_configuration_error(payload: object) -> None:
    with pytest.raises(ConfigurationError, match="payload"):
        run_python_with_json("pass", payload)  # type: ignore[arg-type]


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    source = tmp_path / "inputs_source"
    source.mkdir()
    (source / "train.csv").write_text("x,y\n1,2\n")
    ws = Workspace(tmp_path / "ws", read_only_mounts={"inputs": source})
    ws.write_text("context.data/manifest.json", "{}", make_parents=True)
    ws.lock("context.data")
    return ws


def test_workspace_run_reads_mounts_and_writes_the_workspace(
    runner: SandboxRunner, workspace: Workspace
) -> None:
    code = ("rows = open('inputs/train.csv').read().splitlines()\n"
            "open('out.csv', 'w').write(rows[1])\n"
            "print(open('context.data/manifest.json').read())")
    result = runner.run(code, workspace=workspace)
    assert result.ok, result.stderr
    assert result.stdout == "{}\n"
    assert workspace.read_text("out.csv") == "1,2"


WORKSPACE_VIOLATIONS = {
    "write_mount_file": "open('inputs/train.csv', 'a').write('x')",
    "create_in_mount": "open('inputs/new.csv', 'w')",
    "remove_mount": "import os\nos.remove('inputs')",
    "write_locked": "open('context.data/manifest.json', 'w')",
    "rename_locked_dir": "import os\nos.rename('context.data', 'moved')",
    "remove_locked": "import os\nos.remove('context.data/manifest.json')",
    "locked_via_dir_fd": (
        "import os\nfd = os.open('context.data', os.O_RDONLY)\n"
        "os.open('manifest.json', os.O_WRONLY | os.O_TRUNC, dir_fd=fd)"
    ),
    "locked_after_chdir": "import os\nos.chdir('context.data')\nopen('manifest.json', 'w')",
    "escape_parent": "open('../outside.txt', 'w')",
}


@pytest.mark.parametrize("code", WORKSPACE_VIOLATIONS.values(), ids=WORKSPACE_VIOLATIONS.keys())
def test_workspace_mounts_and_locks_hold_in_the_sandbox(
    runner: SandboxRunner, workspace: Workspace, code: str
) -> None:
    result = runner.run(code, workspace=workspace)
    assert result.exit_code == 1
    assert "not allowed in the sandbox" in result.stderr
    assert workspace.read_text("context.data/manifest.json") == "{}"
    assert workspace.read_text("inputs/train.csv") == "x,y\n1,2\n"
    assert not (workspace.root.parent / "outside.txt").exists()


def test_plain_directory_workspace(runner: SandboxRunner, tmp_path: Path) -> None:
    result = runner.run("open('made.txt', 'w').write('ok')", workspace=tmp_path)
    assert result.ok
    assert (tmp_path / "made.txt").read_text() == "ok"


def test_missing_workspace_directory_is_a_workspace_error(
    runner: SandboxRunner, tmp_path: Path
) -> None:
    with pytest.raises(WorkspaceError):
        runner.run("pass", workspace=tmp_path / "missing")

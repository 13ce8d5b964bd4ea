"""Attacks on the task cap, the disk budget, the result channel and memory reporting."""

from __future__ import annotations

import errno
import os
import time
from pathlib import Path

import pytest

from srh_core.json_limits import depth_problem, nesting_depth
from srh_core.sandbox import SandboxRunner, limits, run_python_with_json
from srh_core.sandbox.disk import DiskBudget
from srh_core.sandbox.tasks import pids_cgroup_base
from tests.support.waits import START_SECONDS

#: A run ends when its program is refused or done; the limit is only against a hang
#: (the sandbox's wall clock counts the interpreter's start, slow on a loaded machine).
TIMEOUT = START_SECONDS
MIB = 1024 * 1024
THREAD_BOMB = """
import threading
threading.stack_size(65536)
release, started = threading.Event(), 0
try:
    for _ in range(10_000):
        threading.Thread(target=release.wait).start()
        started += 1
except RuntimeError as error:
    print("refused:", error)
print("started", started)
release.set()
"""
# _posixsubprocess.fork_exec is not audited in 3.11; its preexec_fn runs Python in the
# forked child, which never execs: a fork primitive for when seccomp is missing.
FORK_BOMB = """
import _posixsubprocess, os, time
def hold():
    with open(os.path.join(os.getcwd(), f"pid-{os.getpid()}"), "w") as handle:
        handle.write("x")
    time.sleep(60)
started = 0
try:
    for _ in range(10_000):
        r, w = os.pipe()
        try:
            _posixsubprocess.fork_exec([b'/bin/true'], [b'/bin/true'], True, (), None, None,
                -1, -1, -1, -1, -1, -1, r, w, True, True, -1, None, None, -1, -1, hold, False)
        finally:
            os.close(r), os.close(w)
        started += 1
except OSError as error:
    print("refused:", error.errno)
print("started", started)
time.sleep(0.5)
"""


def started(result) -> int:
    return int(result.stdout.split("started")[-1])


def task_cap(result) -> set[str]:
    return set(result.isolation) & {"pids_cgroup", "dedicated_uid"}


@pytest.fixture(scope="module")
def root_only() -> None:
    if os.geteuid() != 0:
        pytest.skip("the dedicated uid layer applies to root children only")


@pytest.mark.parametrize("options", [{}, {"use_cgroup": False}], ids=["default", "no_cgroup"])
def test_ten_thousand_threads_stop_at_the_task_cap(options: dict, root_only: None) -> None:
    result = SandboxRunner(**options).run(THREAD_BOMB, timeout_seconds=TIMEOUT,
                                          memory_limit_mb=4096)
    expected = "pids_cgroup" if not options and pids_cgroup_base() else "dedicated_uid"
    assert task_cap(result) == {expected}
    assert result.ok and "refused: can't start new thread" in result.stdout
    assert started(result) < limits.PROCESS_LIMIT


@pytest.mark.parametrize("options", [{}, {"use_cgroup": False}], ids=["default", "no_cgroup"])
def test_fork_bomb_without_seccomp_is_capped_and_cleaned_up(
    options: dict, root_only: None, tmp_path: Path
) -> None:
    runner = SandboxRunner(use_seccomp=False, use_landlock=False, **options)
    result = runner.run(FORK_BOMB, workspace=tmp_path, timeout_seconds=TIMEOUT)
    assert task_cap(result), result.isolation
    assert f"refused: {errno.EAGAIN}" in result.stdout, result.stdout + result.stderr
    assert 0 < started(result) < limits.PROCESS_LIMIT
    forked = [int(path.name[4:]) for path in tmp_path.glob("pid-*")]
    assert forked, "the forked children never ran"
    deadline = time.monotonic() + 5
    while (alive := [pid for pid in forked if _running(pid)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive  # they left the process group (setsid), yet none survived the run
    assert {path.stat().st_uid for path in tmp_path.iterdir()} == {os.geteuid()}


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


FILL_SCRATCH = """
import os
written = 0
try:
    for index in range(1000):
        with open(f"fill-{index}", "wb") as handle:
            handle.write(b"x" * (1024 * 1024))
        written += 1024 * 1024
except OSError as error:
    print("errno", error.errno)
print("written", written)
"""


def test_filling_the_run_directory_stops_at_the_tmpfs_size() -> None:
    runner = SandboxRunner(disk_limit_bytes=8 * MIB)
    result = runner.run(FILL_SCRATCH, timeout_seconds=TIMEOUT)
    if "tmpfs" not in result.isolation:
        pytest.skip("no private mount namespace here: the supervisor's budget applies instead")
    assert result.ok and f"errno {errno.ENOSPC}" in result.stdout
    assert int(result.stdout.split("written")[-1]) <= 8 * MIB


def test_filling_the_workspace_is_killed_at_the_budget(tmp_path: Path) -> None:
    runner = SandboxRunner(disk_limit_bytes=16 * MIB)
    code = ("index = 0\nwhile True:\n    with open(f'fill-{index}', 'wb') as handle:\n"
            "        handle.write(b'x' * (1024 * 1024))\n    index += 1\n")
    result = runner.run(code, workspace=tmp_path, timeout_seconds=TIMEOUT)
    assert result.killed_reason == "disk_limit"
    # allocated bytes, as the budget counts them: a kill at exactly 16 whole files has
    # 16 MiB of content and a few blocks more allocated, so the content alone need not
    # pass the budget (seen under load: 16 files of 1 MiB, 16 MiB of st_size)
    written = sum(path.stat().st_blocks * 512 for path in tmp_path.iterdir())
    # the budget plus what one poll interval lets a writer add at page-cache speed
    assert 16 * MIB < written < 16 * MIB + 128 * MIB


def test_disk_budget_counts_only_files_changed_during_the_run(tmp_path: Path) -> None:
    (tmp_path / "old.bin").write_bytes(b"x" * MIB)
    time.sleep(0.2)
    budget = DiskBudget([str(tmp_path)], 2 * MIB)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "new.bin").write_bytes(b"y" * (3 * MIB))
    assert 3 * MIB <= budget.written_bytes() < 4 * MIB


def test_a_result_nested_990_deep_gets_a_clear_error() -> None:
    result, value = run_python_with_json(
        "value = []\nfor _ in range(990):\n    value = [value]\nemit_result(value)", {},
        timeout_seconds=TIMEOUT)
    assert value is None and result.exit_code == 1
    assert f"nested deeper than {limits.MAX_RESULT_DEPTH} levels" in result.stderr
    assert "RecursionError" not in result.stderr


FORGE_RESULT = """
fd = next(cell.cell_contents for cell in emit_result.__closure__
          if isinstance(cell.cell_contents, int))
import os
os.write(fd, b"[" * 100_000 + b"]" * 100_000)
"""


def test_a_forged_deep_result_file_is_refused_by_the_parent() -> None:
    result, value = run_python_with_json(FORGE_RESULT, {}, timeout_seconds=TIMEOUT)
    assert result.ok and value is None and result.result_json is None
    assert result.result_error == ("the result is nested 100000 levels deep; at most "
                                   f"{limits.MAX_RESULT_DEPTH} levels of arrays and objects "
                                   "are allowed.")


def test_result_size_is_bounded_in_the_child_and_the_parent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(limits, "MAX_RESULT_BYTES", 1000)
    result, value = run_python_with_json("emit_result('x' * 2000)", {}, timeout_seconds=TIMEOUT)
    assert value is None and "exceeds 1000" in result.stderr
    forged = FORGE_RESULT.replace('b"[" * 100_000 + b"]" * 100_000', 'b"1" * 2000')
    result, value = run_python_with_json(forged, {}, timeout_seconds=TIMEOUT)
    assert value is None and result.result_error == ("the result file holds 2000 bytes; "
                                                     "at most 1000 are accepted.")


def test_a_valid_result_still_travels() -> None:
    code = "import numpy as np\nemit_result({'coef': np.arange(3.0), 'nested': [[[1]]]})"
    result, value = run_python_with_json(code, {}, timeout_seconds=TIMEOUT)
    assert result.ok and value == {"coef": [0.0, 1.0, 2.0], "nested": [[[1]]]}


@pytest.mark.parametrize("code", [
    "import numpy as np\nx = np.ones((10**6, 10**5))",
    "import numpy as np\nx = np.empty(10**11, dtype=np.uint8)",
    "x = bytearray(10**11)",
], ids=["numpy_ones", "numpy_empty", "bytearray"])
def test_huge_allocations_are_reported_as_out_of_memory(runner: SandboxRunner,
                                                        code: str) -> None:
    result = runner.run(code, memory_limit_mb=256, timeout_seconds=TIMEOUT)
    assert result.exit_code == 1 and result.memory_error


def test_a_handled_memory_error_is_not_reported(runner: SandboxRunner) -> None:
    code = ("import numpy as np\ntry:\n    np.ones(10**11)\nexcept MemoryError:\n"
            "    print('MemoryError handled')\n")
    result = runner.run(code, memory_limit_mb=256, timeout_seconds=TIMEOUT)
    assert result.ok and not result.memory_error


@pytest.mark.parametrize(("text", "depth"), [
    ("1", 0), ("[]", 1), ('{"a": [1, {"b": 2}]}', 3), ('["[[[[", "]"]', 1),
    ('["\\\\", [2]]', 2), ("[" * 5000 + "]" * 5000, 5000),
], ids=["scalar", "empty", "mixed", "brackets_in_strings", "escapes", "very_deep"])
def test_nesting_depth_without_recursion(text: str, depth: int) -> None:
    assert nesting_depth(text) == depth
    assert (depth_problem(text, 2, "it") is None) == (depth <= 2)

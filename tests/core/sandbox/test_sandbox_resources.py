"""Limits, timeouts, interruption, output bounds, cleanup and concurrency."""

from __future__ import annotations

import math
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

import pytest

from srh_core.errors import ConfigurationError, SandboxError
from srh_core.sandbox import SandboxRunner, resolve_limits
from tests.support.waits import START_SECONDS


def test_normal_program_runs_and_reports_usage(runner: SandboxRunner) -> None:
    result = runner.run("import sys\nprint(input()[::-1])\nprint('warn', file=sys.stderr)",
                        stdin="olleh\n", timeout_seconds=START_SECONDS)
    assert result.ok
    assert result.stdout == "hello\n"
    assert result.stderr == "warn\n"
    assert result.cpu_seconds > 0
    assert result.peak_memory_bytes > 1_000_000
    # the wall time includes the interpreter's start: 0.3 s unloaded, seconds on a loaded machine
    assert 0 < result.duration_seconds < START_SECONDS


def test_exit_status_and_user_errors_are_results(runner: SandboxRunner) -> None:
    assert runner.run("import sys\nsys.exit(3)").exit_code == 3
    failed = runner.run("def f():\n    raise ValueError('bad fit')\nf()")
    assert failed.exit_code == 1 and not failed.ok
    assert failed.stderr.rstrip().endswith("ValueError: bad fit")
    assert "program.py\", line 3" in failed.stderr
    assert "bootstrap" not in failed.stderr  # the sandbox's own frames are hidden


def test_infinite_loop_is_killed_at_the_timeout(runner: SandboxRunner) -> None:
    result = runner.run("while True:\n    pass", timeout_seconds=1.0)
    assert result.timed_out and result.killed_reason == "timeout"
    assert result.exit_code == -9
    assert 1.0 <= result.duration_seconds < 1.8


def test_sleeping_program_is_killed_at_the_timeout(runner: SandboxRunner) -> None:
    result = runner.run("import time\ntime.sleep(60)", timeout_seconds=0.5)
    assert result.timed_out
    assert result.duration_seconds < 1.3


def test_cpu_limit_kills_a_busy_loop_before_the_timeout(runner: SandboxRunner) -> None:
    # CPU time, not wall time, says it was stopped at its limit: on a loaded machine the
    # loop gets a fraction of a core, so its 1 s of CPU may take many seconds of wall time
    result = runner.run("while True:\n    pass", timeout_seconds=START_SECONDS,
                        cpu_limit_seconds=1)
    assert result.killed_reason == "cpu_limit"
    assert not result.timed_out
    # SIGXCPU at 1 s (the kernel's tick-sampled count; rusage said 0.986 s once), the hard
    # limit's SIGKILL at 2 s
    assert 0.9 <= result.cpu_seconds < 2.0


@pytest.mark.parametrize("code", [
    "x = bytearray(10**10)",
    "chunks = []\nwhile True:\n    chunks.append(bytearray(10**7))",
], ids=["single_huge_allocation", "growing_list"])
def test_memory_bomb_hits_the_limit(runner: SandboxRunner, code: str) -> None:
    result = runner.run(code, memory_limit_mb=256, timeout_seconds=10)
    assert not result.ok
    assert result.memory_error or result.killed_reason is not None
    assert result.peak_memory_bytes < 300 * 1024 * 1024


def test_output_beyond_the_limit_is_cut_with_a_note(runner: SandboxRunner) -> None:
    result = runner.run("for i in range(200_000):\n    print(i)", output_limit_bytes=1000)
    assert result.ok and result.stdout_truncated
    kept, note = result.stdout.split("\n... [output truncated: ")
    assert len(kept.encode()) <= 1000
    assert note.endswith(" bytes omitted]")


def test_endless_output_flood_is_killed(runner: SandboxRunner) -> None:
    result = runner.run("while True:\n    print('x' * 10_000)", output_limit_bytes=1000,
                        timeout_seconds=30)
    assert result.killed_reason == "output_limit"
    assert result.stdout_truncated
    assert len(result.stdout) < 1200
    assert result.duration_seconds < 10


def test_stderr_flood_is_bounded_too(runner: SandboxRunner) -> None:
    result = runner.run("import sys\nfor _ in range(50_000):\n    sys.stderr.write('e' * 100)",
                        output_limit_bytes=500)
    assert result.stderr_truncated
    assert len(result.stderr) < 700


def test_interruption_event_stops_a_run(runner: SandboxRunner) -> None:
    event = threading.Event()
    threading.Timer(0.3, event.set).start()
    result = runner.run("while True:\n    pass", timeout_seconds=30, interruption_event=event)
    assert result.interrupted and result.killed_reason == "interrupted"
    assert not result.timed_out
    assert result.duration_seconds < 2


def test_temporary_directory_is_removed(runner: SandboxRunner) -> None:
    result = runner.run("import os\nopen('scratch.txt', 'w').write('x')\nprint(os.getcwd())")
    assert result.ok
    cwd = Path(result.stdout.strip())
    assert cwd.name == "work" and not cwd.parent.exists()


def test_concurrent_runs_from_threads(runner: SandboxRunner) -> None:
    code = "import sys, time\nn = int(sys.stdin.read())\ntime.sleep(0.2)\nprint(n * n)"
    with ThreadPoolExecutor(max_workers=8) as pool:
        # eight interpreters start at once: on a loaded machine that alone can take seconds
        results = list(pool.map(lambda n: runner.run(code, stdin=str(n),
                                                     timeout_seconds=START_SECONDS), range(8)))
    assert [result.stdout.strip() for result in results] == [str(n * n) for n in range(8)]


def _square_in_sandbox(number: int) -> str:
    return SandboxRunner().run(f"print({number} ** 2)").stdout.strip()


def test_concurrent_runs_from_a_process_pool() -> None:
    with ProcessPoolExecutor(max_workers=2) as pool:
        assert list(pool.map(_square_in_sandbox, [3, 4])) == ["9", "16"]


@pytest.mark.parametrize(("kwargs", "fragment"), [
    ({"timeout_seconds": 0}, "(0, 600]"),
    ({"timeout_seconds": -1}, "(0, 600]"),
    ({"timeout_seconds": 601}, "(0, 600]"),
    ({"timeout_seconds": math.nan}, "(0, 600]"),
    ({"timeout_seconds": "5"}, "(0, 600]"),
    ({"memory_limit_mb": 64}, "[128, 16384]"),
    ({"memory_limit_mb": 1024.5}, "[128, 16384]"),
    ({"output_limit_bytes": 10}, "[256, 16777216]"),
    ({"output_limit_bytes": True}, "[256, 16777216]"),
    ({"cpu_limit_seconds": 0}, "[1, 600]"),
], ids=lambda value: str(value))
def test_limits_are_validated_with_their_range(
    runner: SandboxRunner, kwargs: dict, fragment: str
) -> None:
    with pytest.raises(ConfigurationError) as caught:
        runner.run("pass", **kwargs)
    assert fragment in str(caught.value)
    assert caught.value.setting == next(iter(kwargs))


def test_resolved_limits_are_frozen() -> None:
    limits = resolve_limits(2.5, 256, 1024)
    assert limits.cpu_limit_seconds == 4
    assert limits.memory_limit_bytes == 256 * 1024 * 1024
    with pytest.raises(AttributeError):
        limits.timeout_seconds = 5  # type: ignore[misc]


def test_sandbox_error_only_when_the_child_cannot_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys, "executable", "/nonexistent/python3")
    with pytest.raises(SandboxError, match="could not start"):
        SandboxRunner(use_namespaces=False).run("print(1)")


def test_runs_without_kernel_layers_still_refuse_via_the_hook() -> None:
    plain = SandboxRunner(use_landlock=False, use_seccomp=False, use_namespaces=False,
                          use_cgroup=False, use_dedicated_uid=False)
    started = time.monotonic()
    result = plain.run("print(open('/etc/passwd').read())")
    assert result.isolation == ("rlimits", "audit_hook", "disk_budget")
    assert "not allowed in the sandbox" in result.stderr
    assert time.monotonic() - started < 5

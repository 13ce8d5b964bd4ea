"""Every input a command reads is bounded: one ``srh: error:`` line, exit 2, little memory.

``srh run --data /dev/zero`` used to read 23.5 GB before the kernel killed it.
The child processes run under an address-space limit (``RLIMIT_AS``), so a
reader that buffers without a bound fails with a MemoryError traceback here
instead of passing.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from srh_core.cli import main

SRH = str(Path(sys.executable).with_name("srh"))
#: Address space of a child srh: imports and a small run fit, an unbounded read does not.
CHILD_ADDRESS_SPACE = 2 * 1024**3
PROBLEM = ["--problem", "feynman-I.6.2a", "-L", "1"]


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CHILD_ADDRESS_SPACE, CHILD_ADDRESS_SPACE))


def _last_error_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert "Traceback" not in stderr and sum(line.startswith("srh: error:") for line in lines) == 1
    return lines[-1]


def test_dev_zero_as_data_is_refused_at_its_first_line(tmp_path: Path) -> None:
    completed = subprocess.run([SRH, "run", "--data", "/dev/zero", "--target", "y"], cwd=tmp_path,
                               capture_output=True, text=True, timeout=60,
                               preexec_fn=_limit_memory)
    assert completed.returncode == 2, completed.stderr
    assert _last_error_line(completed.stderr) == (
        "srh: error: /dev/zero, line 1: the line goes on past 16 MiB without a line end, longer "
        "than any line of a CSV file; is /dev/zero the right file?")


def test_an_endless_pipe_as_data_stops_at_the_data_limit(tmp_path: Path) -> None:
    endless = subprocess.Popen(["yes", "1,2"], stdout=subprocess.PIPE)
    try:
        completed = subprocess.run(
            [SRH, "run", "--data", "/dev/stdin", "--target", "y"], stdin=endless.stdout,
            cwd=tmp_path, capture_output=True, text=True, timeout=60, preexec_fn=_limit_memory,
            env={**os.environ, "SRH_MAX_DATA_BYTES": "8M"})
    finally:
        endless.stdout.close()
        endless.kill()
        endless.wait(timeout=10)
    assert completed.returncode == 2, completed.stderr
    assert _last_error_line(completed.stderr) == (
        "srh: error: The CSV file /dev/stdin is larger than 8 MiB, the most that is read: it is a "
        "stream (a pipe, FIFO or device) that went on past that; set SRH_MAX_DATA_BYTES to raise "
        "the limit (e.g. SRH_MAX_DATA_BYTES=1G).")
    assert not (tmp_path / "runs").exists()


def _big_toml(tmp: Path) -> str:
    path = tmp / "settings.toml"
    path.write_text("[search]\n" + "# padding\n" * 500_000, encoding="utf-8")  # 5 MB
    return str(path)


CASES = {
    "config_dev_zero": (["run", *PROBLEM, "--config", "/dev/zero"],
                        "The settings file /dev/zero is larger than 4 MiB, the most that is "
                        "read: it is a stream"),
    "config_oversized": (lambda tmp: ["run", *PROBLEM, "--config", _big_toml(tmp)],
                         "is larger than 4 MiB, the most that is read: it holds 4.77 MiB "
                         "(5000009 bytes); a settings file is much smaller"),
    "suite_dev_zero": (["problems", "--suite", "/dev/zero"],
                       "The suite file /dev/zero is larger than 64 MiB"),
    "run_suite_dev_zero": (["run", *PROBLEM, "--suite", "/dev/zero"],
                           "The suite file /dev/zero is larger than 64 MiB"),
    "suite_nested_deep": (lambda tmp: ["problems", "--suite", _write(tmp, "s.json",
                                                                     "[" * 100_000)],
                          "s.json is nested 100000 levels deep; at most 32 levels"),
    "suite_not_utf8": (lambda tmp: ["problems", "--suite", _write(tmp, "s.json", "\udcff")],
                       "Cannot read suite file"),
    "params_nested_deep": (lambda tmp: ["tool", "call", "evaluate_formula", "--data",
                                        _write(tmp, "d.csv", "x,y\n1,2\n"), "--target", "y",
                                        "--params", "[" * 50_000],
                           "--params is nested 50000 levels deep; at most 32 levels"),
}


def _write(tmp: Path, name: str, text: str) -> str:
    (tmp / name).write_bytes(text.encode("utf-8", "surrogateescape"))
    return str(tmp / name)


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_inputs_past_their_limits_are_one_error_line(case, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    arguments, expected = case
    monkeypatch.chdir(tmp_path)
    code = main(arguments(tmp_path) if callable(arguments) else arguments)
    stderr = capsys.readouterr().err
    assert code == 2, stderr
    line = _last_error_line(stderr)
    assert line.startswith("srh: error: ") and expected in line, stderr


def test_a_bad_data_limit_is_one_error_line(tmp_path: Path, capsys: pytest.CaptureFixture,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SRH_MAX_DATA_BYTES", "lots")
    code = main(["run", "--data", _write(tmp_path, "d.csv", "x,y\n1,2\n"), "--target", "y"])
    assert code == 2
    assert _last_error_line(capsys.readouterr().err) == (
        "srh: error: The SRH_MAX_DATA_BYTES environment variable must be a size in bytes > 0, "
        "optionally with a K, M, G or T suffix (e.g. 32G). Got 'lots' instead.")

"""``srh benchmark`` on the command line: judge, run, rerun, bad input, Ctrl-C."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from srh_core.cli import main
from tests.support.commands import Command, wait_session_empty
from tests.workers.support import ROOT


def srh(*args: str, cwd: Path = ROOT, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "srh_core", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout, check=False)


def test_judge_prints_the_verdict_of_one_pair(capsys):
    assert main(["benchmark", "judge", "0.5*m*v**2 + 3", "--truth", "m*v**2/2", "--json"]) == 0
    verdict = json.loads(capsys.readouterr().out)
    assert verdict["symbolic_solution"] is True
    assert verdict["reason"] == "the difference to the truth is constant"
    assert main(["benchmark", "judge", "m*v", "--truth", "m*v**2/2"]) == 1
    assert capsys.readouterr().out.startswith("not a solution:")
    assert main(["benchmark", "judge", "sqrt(m*v)", "--truth", "sqrt(m)*sqrt(v)"]) == 1
    capsys.readouterr()
    assert main(["benchmark", "judge", "sqrt(m*v)", "--truth", "sqrt(m)*sqrt(v)",
                 "--positive", "m, v", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["symbolic_solution"] is True


@pytest.mark.parametrize(("args", "message"), [
    (["--methods", "srh,eureqa"], "eureqa"),
    (["--noise", "0,lots"], "--noise"),
    (["--budget", "0"], "--budget"),
    (["--problem", "feynman-I.99.9"], "Unknown problem"),
    (["--trial", "0"], "--trial"),
    (["--seeds", "0"], "--seeds takes 1..100"),
    (["--noise", "-0.1"], "Invalid benchmark: noise: Value error, noise must be a level >= 0"),
    (["--suite", "SUITE:x1*(x2"], "Problem p1: its formula 'x1*(x2' does not parse"),
    (["--suite", "SUITE:x1*x3"], "its formula names ['x3'], which are not among its variables"),
])
def test_bad_benchmark_input_is_a_clear_error(tmp_path, capsys, args, message):
    if args[0] == "--suite":  # a suite file whose one formula is wrong: refused before a cell
        suite = {"suite": "bad", "problems": [{"id": "p1", "output": "y",
                                               "formula": args[1].removeprefix("SUITE:"),
                                               "variables": [{"name": "x1", "low": 1, "high": 2},
                                                             {"name": "x2", "low": 1, "high": 2}]}]}
        (tmp_path / "bad.json").write_text(json.dumps(suite))
        args = ["--suite", str(tmp_path / "bad.json")]
    base = {"--methods": "srh", "--budget": "2", "--problems": "1"} | dict(
        zip(args[::2], args[1::2], strict=True))
    flags = [item for pair in base.items() for item in pair]
    assert main(["benchmark", "run", *flags, "--out", str(tmp_path / "b")]) == 2
    error = capsys.readouterr().err
    assert message in error and "Traceback" not in error, error
    assert not (tmp_path / "b" / "sweep.json").exists()  # nothing ran


def test_trials_pick_srbench_seeds_by_position():
    from argparse import Namespace

    from srh_core.cli.benchmark_commands import trial_seeds

    assert trial_seeds(Namespace(trial=None, seeds=3)) == "srbench:3"
    assert trial_seeds(Namespace(trial=[2], seeds=1)) == [15795]
    assert trial_seeds(Namespace(trial=[3, 1, 3], seeds=1)) == [860, 23654]


def test_a_benchmark_reruns_only_what_is_missing_and_its_files_stay_valid(tmp_path):
    args = ["benchmark", "run", "--suite", "feynman-public", "--problem", "feynman-I.12.4",
            "--methods", "srh", "--budget", "3", "--samples", "300", "--noise", "0,0.01",
            "--out", str(tmp_path / "b")]
    first = srh(*args, "--json")
    assert first.returncode == 0, first.stderr[-2000:]
    rows = json.loads(first.stdout)["rows"]
    assert [(row["method"], row["noise"]) for row in rows] == [("srh", 0.0), ("srh", 0.01)]
    # whether a 3 s search solves it depends on the machine's load: only the rows' shape here
    # (test_benchmark_cluster checks what srh solves on both backends)
    assert all(row["status"] == "done" and isinstance(row["symbolic_solution"], bool)
               for row in rows), rows
    # a cell's budget is its fit time: the clock started once its tool process was ready
    clocks = [json.loads(path.read_text().splitlines()[0])
              for path in (tmp_path / "b" / "runs").glob("*/timeline.jsonl")]
    assert len(clocks) == 2 and all(c["time_limit_clock"] == "fit" and c["seconds_left"] >= 2.99
                                    and c["warm_up_seconds"] > 0 for c in clocks), clocks
    # nothing ran again: no run directory gained or changed a file (a wall-time bound said
    # this less surely: it counted the interpreter's start, which load stretches)
    ran = _files(tmp_path / "b" / "runs")
    again = srh(*args, "--format", "md")
    assert again.returncode == 0, again.stderr[-2000:]
    assert _files(tmp_path / "b" / "runs") == ran
    assert "| Method | Symbolic solution (noise 0) | Accuracy solution (noise 0) |" in again.stdout
    lines = (tmp_path / "b" / "results.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in lines] == rows
    summary = json.loads((tmp_path / "b" / "summary.json").read_text())
    assert {entry["noise"] for entry in summary["summary"]} == {0.0, 0.01}
    assert "[[variants]]" in (tmp_path / "b" / "benchmark.toml").read_text()


def _files(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``folder``: relative path -> (size, modification time in ns)."""
    return {str(path.relative_to(folder)): (path.stat().st_size, path.stat().st_mtime_ns)
            for path in sorted(folder.rglob("*")) if path.is_file()}


@pytest.mark.slow
def test_ctrl_c_of_a_benchmark_with_a_baseline_returns_and_leaves_nothing(tmp_path):
    command = Command(["benchmark", "run", "--suite", "feynman", "--problem", "feynman-I.12.1",
                       "--methods", "gplearn", "--budget", "120", "--samples", "300",
                       "--out", "b"], cwd=tmp_path)
    runs = tmp_path / "b" / "runs"
    # the run's clock record is written once its tool process is up and gplearn imported,
    # right before the first step, whose model request is the baseline's 120 s fit
    deadline = time.monotonic() + 150  # only against a hang: a loaded machine warms up slowly
    while time.monotonic() < deadline and not any(runs.glob("*/timeline.jsonl")):
        time.sleep(0.05)
    assert any(runs.glob("*/timeline.jsonl")), "the cell's fit never started"
    command.signal(signal.SIGINT, group=True)
    finished = command.finish(20)
    assert finished.returncode == 130, finished.stderr[-2000:]
    assert not wait_session_empty(command.session, 5)
    cells = json.loads((tmp_path / "b" / "sweep.json").read_text())["cells"]
    assert {entry["status"] for entry in cells.values()} == {"pending"}, cells

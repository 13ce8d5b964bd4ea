"""Does every command return, and leave nothing behind? Measured as batch jobs run them.

Part 1, the matrix: each case runs ``srh`` (or the estimator) in a subprocess
in its own session, on a noisy problem the offline proposer never fits
exactly (so its search step, islands in a tool worker's pool, runs), and
records the seconds it took to return (for a signal: from the signal), its
exit code, whether its result was written, and the processes left in its
session 15 s later (target: every case returns within its limit + 15 s and
leaves 0). A command that does not return by then is SIGKILLed alone, as
``timeout -s KILL`` would, and what it leaves is counted the same way.

Part 2, the hidden-suite measurement that found the hang: N problems of
``scripts/gen_problems.py --random`` through ``srh run --time-limit T``: how
many return (within T + 15 s), how many were solved exactly on fresh points,
the wall time per problem.

Usage: python scripts/bench_hygiene.py [--problems 20] [--limit 10] [--seed 2026]
           [--only matrix,suite] [--json out.json]
Prints a table per part and writes JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.commands import (  # noqa: E402 - after the path
    ESTIMATOR_SCRIPT,
    NOISY_PROBLEM,
    RETURN_MARGIN_SECONDS,
    SWEEP_FILE,
    kill_session,
    session_processes,
    wait_for_text,
)

SRH = [str(Path(sys.executable).with_name("srh"))]
NOISY = list(NOISY_PROBLEM)
MARGIN = RETURN_MARGIN_SECONDS


def environment() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("SRH_OFFLINE_SEARCH_SECONDS", None)  # the offline search step on
    return env


def run_case(name: str, argv: Sequence[str], cwd: Path, limit: float, *,
             result: Path | None = None, before_signal: Callable[[], bool] | None = None,
             signum: int | None = None, group: bool = False) -> dict[str, Any]:
    """Start, optionally signal, wait (bounded), then count what is left in the session."""
    started = time.monotonic()
    process = subprocess.Popen(list(argv), cwd=cwd, env=environment(), stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               start_new_session=True)
    if signum is not None:
        ready = before_signal() if before_signal else True
        time.sleep(1.5)
        started = time.monotonic()
        (os.killpg(process.pid, signum) if group else process.send_signal(signum)) \
            if ready else None
    returned = True
    try:
        out, _ = process.communicate(timeout=limit + MARGIN)
    except subprocess.TimeoutExpired:  # killed as `timeout -s KILL` would: the command only
        returned = False
        process.kill()
        out, _ = process.communicate()
    seconds = time.monotonic() - started
    deadline = time.monotonic() + 15
    while (left := session_processes(process.pid)) and time.monotonic() < deadline:
        time.sleep(0.2)
    kill_session(process.pid)
    return {"case": name, "returned": returned, "seconds": round(seconds, 1),
            "bound": limit + MARGIN, "exit": process.returncode,
            "result_written": None if result is None else result.exists(),
            "json_ok": _parses(out), "left": len(left), "left_commands": left}


def _parses(out: bytes) -> bool | None:
    text = out.decode(errors="replace").strip()
    if not text:
        return None
    try:
        json.loads(text)
        return True
    except ValueError:
        return False


def matrix(limit: int) -> list[dict[str, Any]]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="srh-hygiene-") as tmp:
        base = Path(tmp)
        run = base / "run"
        rows.append(run_case(f"run --time-limit {limit}", [*SRH, "run", *NOISY, "--time-limit",
                             str(limit), "--json", "--out", str(run)], base, limit,
                             result=run / "result.json"))
        rows.append(run_case("resume --time-limit 6", [*SRH, "resume", str(run), "--time-limit",
                             "6", "--json"], base, 6, result=run / "result.json"))
        pool = base / "pool"
        rows.append(run_case("run --max-workers 2 -L 3", [*SRH, "run", *NOISY, "-L", "3",
                             "--max-workers", "2", "--json", "--out", str(pool)], base, 60,
                             result=pool / "result.json"))
        for label, signum, group in (("SIGINT (process group)", signal.SIGINT, True),
                                     ("SIGTERM", signal.SIGTERM, False),
                                     ("SIGKILL", signal.SIGKILL, False)):
            target = base / f"signal-{signum}"
            rows.append(run_case(
                f"run, {label} mid-search",
                [*SRH, "run", *NOISY, "--time-limit", "120", "--json", "--out", str(target)],
                base, 10, result=None if signum == signal.SIGKILL else target / "result.json",
                before_signal=lambda t=target: wait_for_text(t / "plans.jsonl",
                                                        "expression_search", 60),
                signum=signum, group=group))
        (base / "sweep.toml").write_text(SWEEP_FILE.format(limit=8))
        rows.append(run_case("sweep --jobs 2, time_limit 8 cells",
                             [*SRH, "sweep", "sweep.toml", "--jobs", "2", "--out", "sweep",
                              "--json"], base, 26, result=base / "sweep" / "results.json"))
        (base / "sweep2.toml").write_text(SWEEP_FILE.format(limit=120))
        rows.append(run_case(
            "sweep --jobs 2, SIGINT (process group)",
            [*SRH, "sweep", "sweep2.toml", "--jobs", "2", "--out", "sweep2"], base, 10,
            result=base / "sweep2" / "results.json",
            before_signal=lambda: wait_for_text(base / "sweep2" / "sweep.json", '"running"', 60),
            signum=signal.SIGINT, group=True))
        (base / "fit.py").write_text(ESTIMATOR_SCRIPT.format(limit=limit))
        rows.append(run_case(f"estimator time_limit={limit}", [sys.executable, "fit.py"], base,
                             limit))
    return rows


def suite(count: int, limit: int, seed: int) -> list[dict[str, Any]]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="srh-hidden-") as tmp:
        base = Path(tmp)
        subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_problems.py"), "--random",
                        "--count", str(count), "--seed", str(seed), "--out", "suite.json"],
                       cwd=base, check=True)
        problems = json.loads((base / "suite.json").read_text())["problems"]
        for problem in problems:
            out = base / problem["name"]
            row = run_case(problem["name"], [*SRH, "run", "--suite", "suite.json", "--problem",
                                             problem["name"], "--time-limit", str(limit),
                                             "--seed", "0", "--json", "--out", str(out)],
                           base, limit, result=out / "result.json")
            judgement = out / "judgement.json"
            row["solved"] = (json.loads(judgement.read_text()).get("solved")
                             if judgement.exists() else None)
            rows.append(row)
            print(f"  {problem['name']}: {row['seconds']}s returned={row['returned']} "
                  f"solved={row['solved']} left={row['left']}", file=sys.stderr)
    return rows


def print_matrix(rows: list[dict[str, Any]]) -> None:
    print(f"{'case':44} {'returned':>8} {'seconds':>8} {'bound':>6} {'exit':>5} "
          f"{'result':>6} {'json':>5} {'left':>4}")
    for row in rows:
        print(f"{row['case']:44} {str(row['returned']):>8} {row['seconds']:>8} "
              f"{row['bound']:>6.0f} {str(row['exit']):>5} {str(row['result_written']):>6} "
              f"{str(row['json_ok']):>5} {row['left']:>4}")


def summarize_suite(rows: list[dict[str, Any]], limit: int) -> dict[str, Any]:
    seconds = [row["seconds"] for row in rows]
    summary = {"problems": len(rows), "returned": sum(r["returned"] for r in rows),
               "result_written": sum(bool(r["result_written"]) for r in rows),
               "solved": sum(bool(r["solved"]) for r in rows),
               "left": sum(r["left"] for r in rows), "limit": limit,
               "seconds_median": statistics.median(seconds) if seconds else None,
               "seconds_max": max(seconds) if seconds else None}
    print(f"hidden-style suite at --time-limit {limit}: {summary['returned']}/{len(rows)} "
          f"returned, {summary['result_written']} wrote result.json, {summary['solved']} "
          f"solved exactly, {summary['left']} processes left; wall per problem median "
          f"{summary['seconds_median']} s, max {summary['seconds_max']} s")
    return summary


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--problems", type=int, default=20)
    parser.add_argument("--limit", type=int, default=10)
    parser.add_argument("--seed", type=int, default=2026, help="seed of the generated suite")
    parser.add_argument("--only", default="matrix,suite")
    parser.add_argument("--json", default=None)
    parser.add_argument("--srh", default=None,
                        help="the srh command to measure, e.g. 'python -m srh_core' with "
                             "PYTHONPATH set to another checkout (default: this venv's srh)")
    args = parser.parse_args(argv)
    if args.srh:
        SRH[:] = args.srh.split()
    parts = set(args.only.split(","))
    report: dict[str, Any] = {"settings": vars(args)}
    if "matrix" in parts:
        report["matrix"] = matrix(args.limit)
        print_matrix(report["matrix"])
    if "suite" in parts:
        report["suite"] = suite(args.problems, args.limit, args.seed)
        report["suite_summary"] = summarize_suite(report["suite"], args.limit)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))
    bad = [row for row in report.get("matrix", []) + report.get("suite", [])
           if not row["returned"] or row["left"]]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

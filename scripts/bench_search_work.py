#!/usr/bin/env python
"""Fixed-work search benchmark: CPU seconds for a fixed count of evaluations, and the fronts.

Run alone::

    .venv/bin/python scripts/bench_search_work.py --suite FILE [--units] [--evaluations N]
        [--samples 2000] [--seed 0] [--problems A B ...] [--json out.json] [--profile N]
    .venv/bin/python scripts/bench_search_work.py --compare BEFORE.json AFTER.json

Every problem is searched in this process (``workers=1``) with
``max_evaluations=N`` and a time budget far above what the work needs (``BUDGET``), so the
search stops at the count, never at the clock: every run evaluates as many
expressions, and the figure a loaded machine does not skew is the process's CPU time
(``time.process_time``, BLAS held to one thread by the search). The fronts are
not always the same bit for bit: two runs of one version of the code differed
on some problems (measured at main def490b: fitted constants in the last digits,
then other choices downstream; memory-dependent rounding is the likely cause, not
established), so a front that differs between versions is only evidence when the
same problem reproduces with each version alone. The table gives per problem the CPU
seconds, the evaluations, the evaluations per CPU second and the front (complexity,
MSE and formula of each entry); the JSON holds the same. ``--units`` passes the suite's units
(as ``bench_search_budget.py --methods search-units`` does). ``--profile N`` adds
the N costliest functions by cumulative CPU time over the suite (cProfile).

``--compare`` reads two JSON files of this script (the same suite, count and
seed, run by two versions of the code, or twice by one): per problem the ratio
of CPU seconds (after / before), and whether the fronts are identical; the exit
status is 1 when any front differs.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import platform
import pstats
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from srh_core.problems import load_suite  # noqa: E402
from srh_engine.search import search  # noqa: E402

BUDGET = 1e7
"""Seconds given to each search: far above what the evaluation count takes, in every nested
share too (a phase gets a share of a share of what is left: with 600 s, some were cut by
the clock on a loaded machine, and the fronts of two runs of one version differed)."""


def run_problem(problem: Any, evaluations: int, samples: int, seed: int, units: bool
                ) -> dict[str, Any]:
    """One search at a fixed evaluation count: CPU seconds, count and front."""
    X, y = problem.sample(samples, seed=seed)
    M = np.column_stack([X[name] for name in problem.feature_names])
    given = problem.si_units() if units else {}
    target_units = given.pop(problem.output, None)
    started, wall = time.process_time(), time.monotonic()
    result = search(M, y, problem.feature_names, time_budget=BUDGET, seed=seed, workers=1,
                    max_evaluations=evaluations, units=given or None,
                    target_units=target_units)
    cpu, wall = time.process_time() - started, time.monotonic() - wall
    front = [[entry.complexity, float(entry.mse), entry.formula] for entry in result.front]
    return {"problem": problem.name, "cpu_seconds": round(cpu, 3),
            "wall_seconds": round(wall, 3), "evaluated": result.evaluated,
            "evaluated_per_cpu_second": round(result.evaluated / cpu, 1) if cpu > 0 else None,
            "front": front}


def print_rows(rows: Sequence[dict[str, Any]]) -> None:
    print(f"{'problem':<28} {'cpu s':>8} {'evaluated':>10} {'eval/cpu s':>11}  best formula")
    for row in rows:
        best = min(row["front"], key=lambda e: (e[1], e[0]), default=[0, 0.0, ""])
        print(f"{row['problem'][:28]:<28} {row['cpu_seconds']:>8.2f} {row['evaluated']:>10} "
              f"{row['evaluated_per_cpu_second'] or 0:>11.0f}  {best[2][:60]}")
    cpu = sum(r["cpu_seconds"] for r in rows)
    evaluated = sum(r["evaluated"] for r in rows)
    print(f"{'total':<28} {cpu:>8.2f} {evaluated:>10} {evaluated / max(cpu, 1e-9):>11.0f}")


def compare(before_path: str, after_path: str) -> int:
    """Print per-problem CPU ratios and front equality; 1 when a front differs."""
    before = json.loads(Path(before_path).read_text(encoding="utf-8"))
    after = json.loads(Path(after_path).read_text(encoding="utf-8"))
    by_name = {row["problem"]: row for row in before["rows"]}
    differ = 0
    print(f"{'problem':<28} {'cpu before':>10} {'cpu after':>10} {'ratio':>7}  front")
    pairs = []
    for row in after["rows"]:
        old = by_name.get(row["problem"])
        if old is None:
            continue
        same = old["front"] == row["front"] and old["evaluated"] == row["evaluated"]
        differ += not same
        ratio = row["cpu_seconds"] / old["cpu_seconds"] if old["cpu_seconds"] else float("nan")
        pairs.append((old["cpu_seconds"], row["cpu_seconds"]))
        print(f"{row['problem'][:28]:<28} {old['cpu_seconds']:>10.2f} {row['cpu_seconds']:>10.2f} "
              f"{ratio:>7.3f}  {'same' if same else 'DIFFERS'}")
    total_before, total_after = sum(p[0] for p in pairs), sum(p[1] for p in pairs)
    ratios = [a / b for b, a in pairs if b > 0]
    geometric = float(np.exp(np.mean(np.log(ratios)))) if ratios else float("nan")
    print(f"total cpu {total_before:.2f} -> {total_after:.2f} s: ratio "
          f"{total_after / max(total_before, 1e-9):.3f} (geometric mean per problem "
          f"{geometric:.3f}); fronts differing: {differ} of {len(pairs)}")
    return 1 if differ else 0


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--suite", help="suite JSON (scripts/gen_problems.py)")
    parser.add_argument("--problems", nargs="*", default=None, help="names or ids to run")
    parser.add_argument("--units", action="store_true", help="pass the suite's units")
    parser.add_argument("--evaluations", type=int, default=300_000)
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", default=None)
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="print the N costliest functions (cumulative CPU time)")
    parser.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"))
    args = parser.parse_args(argv)
    if args.compare is None and not args.suite:
        parser.error("--suite FILE (or --compare BEFORE AFTER) is required")
    if args.evaluations < 1:
        parser.error("--evaluations must be a positive int")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.compare:
        return compare(*args.compare)
    problems = load_suite(args.suite).select(args.problems)
    profiler = cProfile.Profile(time.process_time) if args.profile else None
    rows = []
    for problem in problems:
        if profiler is not None:
            profiler.enable()
        rows.append(run_problem(problem, args.evaluations, args.samples, args.seed, args.units))
        if profiler is not None:
            profiler.disable()
        print(f"  {rows[-1]['cpu_seconds']:.2f} cpu s {problem.name}", file=sys.stderr,
              flush=True)
    print_rows(rows)
    if profiler is not None:
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(args.profile)
        print(text.getvalue())
    if args.json:
        document = {"suite": args.suite, "units": args.units, "evaluations": args.evaluations,
                    "samples": args.samples, "seed": args.seed,
                    "platform": platform.platform(), "rows": rows}
        Path(args.json).write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

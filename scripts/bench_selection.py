#!/usr/bin/env python
"""Selection benchmark: the reported best formula on noisy data, ``best`` against ``accuracy``.

Run alone::

    .venv/bin/python scripts/bench_selection.py [--suite FILE] [--problems A B ...]
        [--noise 0.01] [-C 2 -L 6 -K 2] [--samples 2000] [--seed 0] [--json out.json]

Each problem is sampled once with Gaussian noise of ``--noise`` x RMS(y) on the
target (the suite protocol); the offline agent searches it once per
selection rule (the same seed, so the same candidates: only the reported
formula differs). Each reported formula is judged on 1,000 fresh noiseless
points. Columns: R^2 there; "good" = R^2 > 0.999 with a complexity of at
most the truth's + 4 (engine node counts); "exact" = max relative error
< 1e-6.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from srh_core.agent import SRAgent  # noqa: E402
from srh_core.problems import load_suite  # noqa: E402
from srh_engine import complexity  # noqa: E402

SELECTIONS = ("best", "accuracy")
GOOD_R2 = 0.999
COMPLEXITY_SLACK = 4


def judged(problem: Any, result: dict[str, Any]) -> dict[str, Any]:
    index = result["best_candidate"]
    if index is None:
        return {"formula": None, "complexity": None, "r2": None, "exact": False}
    best = result["candidates"][index]
    judgement = problem.judge(best["formula"])
    return {"formula": best["formula"], "complexity": best["complexity"],
            "r2": judgement.r2, "exact": bool(judgement.solved)}


def good(row: dict[str, Any], selection: str) -> bool:
    outcome = row[selection]
    return (outcome["r2"] is not None and outcome["r2"] > GOOD_R2
            and outcome["complexity"] <= row["truth_complexity"] + COMPLEXITY_SLACK)


def run_problem(problem: Any, args: argparse.Namespace) -> dict[str, Any]:
    X, y = problem.sample(args.samples, seed=args.seed, noise=args.noise)
    row: dict[str, Any] = {"problem": problem.name,
                           "truth_complexity": complexity(problem.expression())}
    for selection in SELECTIONS:
        agent = SRAgent(global_width=args.C, max_refinement_depth=args.L,
                        local_sample_size=args.K, selection=selection, seed=args.seed)
        row[selection] = judged(problem, agent.run(X, {problem.output: y}))
    return row


def summary(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, int]]:
    return {selection: {"good": sum(good(row, selection) for row in rows),
                        "r2_above_0.999": sum((row[selection]["r2"] or 0) > GOOD_R2
                                              for row in rows),
                        "exact": sum(row[selection]["exact"] for row in rows),
                        "problems": len(rows)} for selection in SELECTIONS}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--suite", default=None, help="suite JSON (default: the public suite)")
    parser.add_argument("--problems", nargs="*", default=None, help="names to run")
    parser.add_argument("--noise", type=float, default=0.01, help="noise std / RMS(y)")
    for flag, default in (("-C", 2), ("-L", 6), ("-K", 2), ("--samples", 2000), ("--seed", 0)):
        parser.add_argument(flag, type=int, default=default)
    parser.add_argument("--json", default=None, help="write every row and the summary here")
    args = parser.parse_args(argv)
    problems = [p for p in load_suite(args.suite).problems
                if not args.problems or p.name in args.problems]
    print(f"{'problem':26} truth | best: cplx R2 | accuracy: cplx R2")
    rows = []
    for problem in problems:
        row = run_problem(problem, args)
        rows.append(row)
        cells = " | ".join(f"{row[s]['complexity']} {row[s]['r2'] or float('nan'):.6f}"
                           for s in SELECTIONS)
        print(f"{problem.name[:26]:26} {row['truth_complexity']:5} | {cells}", flush=True)
    totals = summary(rows)
    for selection, counts in totals.items():
        print(f"TOTAL {selection:8} good {counts['good']}/{counts['problems']}, R2>0.999 "
              f"{counts['r2_above_0.999']}, exact {counts['exact']}")
    if args.json:
        Path(args.json).write_text(json.dumps({"settings": vars(args), "summary": totals,
                                               "rows": rows}, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

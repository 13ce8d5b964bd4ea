#!/usr/bin/env python
"""Screening benchmark: the offline agent on problems hidden among noise features.

Run alone::

    .venv/bin/python scripts/bench_screening.py --suite heldout.json [--features 50]
        [--samples 1000] [--seed 0] [-R 1 -C 2 -L 6 -K 2] [--json out.json]

For every problem of the suite (e.g. one from ``scripts/gen_problems.py``), its
variables are sampled as usual and ``--features`` minus their number noise
features (uniform on [1, 5], an independent stream) are added, in a shuffled
column order. The offline agent searches twice: on the problem's own
variables ("clean") and on all the features ("noisy"). Solved = the judge of
the suite (max relative error < 1e-6 on 1,000 fresh points); a formula that
reads a noise feature is not solved. The table shows both solve rates, the
wall time, and how many tool calls failed because they named too many inputs.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from srh_core.agent import SRAgent  # noqa: E402
from srh_core.problems import Problem, load_suite  # noqa: E402

TOO_MANY_INPUTS = ("pass at most", "accepts at most")


def with_noise(X: dict[str, np.ndarray], features: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng([seed, 7])
    noisy = dict(X)
    for index in range(max(features - len(X), 0)):
        noisy[f"noise{index}"] = rng.uniform(1, 5, len(next(iter(X.values()))))
    return {name: noisy[name] for name in rng.permutation(list(noisy))}


def solve(problem: Problem, X: dict[str, np.ndarray], y: np.ndarray, args: Any
          ) -> dict[str, Any]:
    agent = SRAgent(max_restart_loop=args.R, global_width=args.C, max_refinement_depth=args.L,
                    local_sample_size=args.K, run_id="bench-screening", seed=args.seed)
    started = time.perf_counter()
    result = agent.run(X, {problem.output: y}, f"Find {problem.output}")
    seconds = time.perf_counter() - started
    best = result["candidates"][result["best_candidate"]]["formula"] \
        if result.get("best_candidate") is not None else None
    solved = False
    if best is not None:
        try:
            solved = bool(problem.judge(best).solved)
        except Exception:  # noqa: BLE001 - a formula reading a noise feature cannot be judged
            solved = False
    results = [r for node in agent.store.records(include_detail=True)
               for r in node["detail"]["tool_results"]]
    too_many = sum(not r["ok"] and any(t in r["result_str"] for t in TOO_MANY_INPUTS)
                   for r in results)
    return {"solved": solved, "seconds": seconds, "best": best, "too_many_inputs": too_many}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", help="suite JSON (default: the built-in public suite)")
    parser.add_argument("--features", type=int, default=50)
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--limit", type=int, help="first N problems only")
    for flag, default in (("-R", 1), ("-C", 2), ("-L", 6), ("-K", 2)):
        parser.add_argument(flag, type=int, default=default, dest=flag[1])
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    suite = load_suite(args.suite)
    rows = []
    for problem in suite.problems[:args.limit]:
        X, y = problem.sample(args.samples, seed=args.seed)
        clean = solve(problem, X, y, args)
        noisy = solve(problem, with_noise(X, args.features, args.seed), y, args)
        rows.append({"problem": problem.name, "variables": len(X), "clean": clean,
                     "noisy": noisy})
        print(f"{problem.name:<24} clean {'ok' if clean['solved'] else '--'} "
              f"{clean['seconds']:5.1f}s | noisy {'ok' if noisy['solved'] else '--'} "
              f"{noisy['seconds']:5.1f}s  {noisy['best']}", file=sys.stderr)
    summary = {kind: {"solved": sum(r[kind]["solved"] for r in rows), "problems": len(rows),
                      "seconds": sum(r[kind]["seconds"] for r in rows),
                      "too_many_inputs": sum(r[kind]["too_many_inputs"] for r in rows)}
               for kind in ("clean", "noisy")}
    print(f"| suite | features | clean solved | noisy solved | clean s | noisy s | "
          f"too-many-input failures |\n|---|---|---|---|---|---|---|\n"
          f"| {suite.name} | {args.features} | {summary['clean']['solved']}/{len(rows)} | "
          f"{summary['noisy']['solved']}/{len(rows)} | {summary['clean']['seconds']:.0f} | "
          f"{summary['noisy']['seconds']:.0f} | {summary['noisy']['too_many_inputs']} |")
    report = {"suite": suite.name, "features": args.features, "summary": summary, "rows": rows}
    print(json.dumps(report))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python
"""How far past its budget ``srh_engine.search.search`` returns: a table and JSON.

    .venv/bin/python scripts/bench_search_overrun.py --suite FILE [--budgets 1,2.5]
        [--problems 12] [--workers N] [--samples 2000] [--json out.json]

For the first ``--problems`` problems of the suite and each budget, one
search (seed 0, ``--workers`` islands, default: as the search chooses) on
``--samples`` noiseless points; the island pool is started before the first
timed search, so no search pays for it. Prints per budget the median and
largest overrun (wall seconds minus the budget) and the load (1-minute load
average) at the start and the end. Time-budgeted figures depend on the
machine's load: compare two trees by running them side by side.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def measure(suite_path: str, budgets: list[float], count: int, workers: int | None,
            samples: int) -> dict:
    from srh_core.problems import load_suite
    from srh_engine.search import search

    suite = load_suite(suite_path)
    problems = suite.problems[:count]
    first = problems[0].sample(200, seed=0)
    search(np.column_stack(list(first[0].values())), first[1], list(first[0]),
           time_budget=0.5, seed=0, workers=workers)  # starts the island pool
    load_start = os.getloadavg()[0]
    rows = []
    for budget in budgets:
        for problem in problems:
            X, y = problem.sample(samples, seed=0)
            started = time.monotonic()
            search(np.column_stack([X[name] for name in X]), y, list(X), time_budget=budget,
                   seed=0, workers=workers)
            rows.append({"problem": problem.name, "budget": budget,
                         "overrun_s": round(time.monotonic() - started - budget, 3)})
    summary = {}
    for budget in budgets:
        overruns = [row["overrun_s"] for row in rows if row["budget"] == budget]
        summary[str(budget)] = {"median_overrun_s": round(statistics.median(overruns), 3),
                                "max_overrun_s": round(max(overruns), 3)}
    return {"rows": rows, "summary": summary, "load_start": load_start,
            "load_end": os.getloadavg()[0]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--suite", required=True)
    parser.add_argument("--budgets", default="1,2.5")
    parser.add_argument("--problems", type=int, default=12)
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    budgets = [float(text) for text in args.budgets.split(",")]
    result = measure(args.suite, budgets, args.problems, args.workers, args.samples)
    print(f"load {result['load_start']:.1f} -> {result['load_end']:.1f}")
    print(f"{'budget':>8} {'median overrun':>15} {'max overrun':>12}")
    for budget, entry in result["summary"].items():
        print(f"{budget:>8} {entry['median_overrun_s']:>15.3f} {entry['max_overrun_s']:>12.3f}")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

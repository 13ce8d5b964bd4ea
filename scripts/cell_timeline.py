#!/usr/bin/env python
"""Where the seconds of a time-limited run go: a timeline per run directory, and totals.

    .venv/bin/python scripts/cell_timeline.py RUN_DIR_OR_BENCHMARK_OUT [...] [--show N]
        [--json FILE]

For each run directory (a benchmark's ``OUT/runs/*`` or any run's ``--out``)
it reads what the run recorded: ``run.json`` (when the run was created),
``timeline.jsonl`` (when its time limit started and the seconds its tool
processes took to start, for runs that record it), ``nodes.jsonl`` (when
each step ended), ``tool_calls.jsonl`` (each call's seconds, its error) and
``settings.json``. Times are seconds since the run was created. For every
``expression_search`` call: the budget it was asked for, the budget it ran
(shortened to the time left, for runs that record it), the seconds it took
and the overrun past the budget it ran; "cut" when its executor stopped it
while it ran (no result), "never started" when an earlier call of its step
was stopped at the step's limit already (the calls of a sample run in turn).
``--show N`` prints the step-by-step timeline of the first N runs. The
summary counts runs, runs with no candidate, searches (cut, never started,
shortened), and the median and largest overrun.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

SEARCH = "expression_search"


def _time(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def _lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def run_dirs(paths: list[str]) -> list[Path]:
    found = []
    for text in paths:
        path = Path(text)
        if (path / "run.json").exists():
            found.append(path)
        found += sorted(p.parent for p in path.glob("runs/*/run.json"))
    return found


def timeline(run_dir: Path) -> dict[str, Any]:
    """One run's timeline: its steps, its searches, when its clock started."""
    created = _time(json.loads((run_dir / "run.json").read_text())["created_at"])
    clock = next((r for r in _lines(run_dir / "timeline.jsonl") if r.get("event") == "clock"),
                 None)
    steps: dict[int, dict[str, Any]] = {}
    for node in _lines(run_dir / "nodes.jsonl"):
        L = node["coordinate"]["L"] if isinstance(node.get("coordinate"), dict) else None
        steps.setdefault(L, {"L": L, "calls": []})["ended"] = round(
            _time(node["created_at"]) - created, 2)
    searches = []
    timed_out: set[Any] = set()  # steps with a call stopped at the batch limit so far
    for record in _lines(run_dir / "tool_calls.jsonl"):
        call, meta = record["call"], record.get("meta") or {}
        step = steps.setdefault(record["L"], {"L": record["L"], "calls": []})
        elapsed = meta.get("elapsed_s")
        step["calls"].append(f"{call['name']} {'-' if elapsed is None else f'{elapsed:.2f}'}s"
                             + (f" [{meta['error_type']}]" if meta.get("error_type") else ""))
        if call["name"] == SEARCH:
            searches.append(_search(record, meta, queued=record["L"] in timed_out))
        if meta.get("error_type") == "TimeoutError":
            timed_out.add(record["L"])
    candidates = len(_lines(run_dir / "candidates.jsonl"))
    return {"run": run_dir.name,
            "clock_at": None if clock is None else round(_time(clock["at"]) - created, 2),
            "warm_up_seconds": None if clock is None else clock.get("warm_up_seconds"),
            "steps": [steps[L] for L in sorted(steps, key=lambda v: (v is None, v or 0))],
            "searches": searches, "candidates": candidates}


def _search(record: dict[str, Any], meta: dict[str, Any], queued: bool) -> dict[str, Any]:
    """``queued``: a call before it in its step was stopped at the batch's limit, so the
    search never started (the calls of a sample run one after another in one worker)."""
    asked = record["call"]["params"].get("time_budget")
    elapsed = meta.get("elapsed_s")
    cut = (elapsed is None or meta.get("error_type") == "TimeoutError") and not queued
    ran = asked
    result_str = record.get("result_str") or ""
    if "shortened from" in result_str:
        ran = float(result_str.split(" to ", 1)[1].split("s", 1)[0])
    return {"asked": asked, "ran": ran, "seconds": elapsed, "cut": cut,
            "overrun": None if cut or ran is None or elapsed is None else round(elapsed - ran, 3),
            "shortened": "shortened from" in result_str,
            "never_started": queued and elapsed is None}


def summary(timelines: list[dict[str, Any]]) -> dict[str, Any]:
    searches = [s for t in timelines for s in t["searches"]]
    overruns = [s["overrun"] for s in searches if s["overrun"] is not None]
    return {"runs": len(timelines),
            "runs_without_candidate": sum(t["candidates"] == 0 for t in timelines),
            "searches": len(searches), "searches_cut": sum(s["cut"] for s in searches),
            "searches_never_started": sum(s["never_started"] for s in searches),
            "searches_shortened": sum(s["shortened"] for s in searches),
            "median_overrun_s": round(statistics.median(overruns), 3) if overruns else None,
            "max_overrun_s": round(max(overruns), 3) if overruns else None,
            "median_clock_at_s": _median([t["clock_at"] for t in timelines]),
            "median_warm_up_s": _median([t["warm_up_seconds"] for t in timelines])}


def _median(values: list[Any]) -> float | None:
    values = [v for v in values if v is not None]
    return round(statistics.median(values), 2) if values else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("paths", nargs="+", help="run directories or benchmark outputs")
    parser.add_argument("--show", type=int, default=0, help="print the first N timelines")
    parser.add_argument("--json", default=None, help="write timelines and summary here")
    args = parser.parse_args(argv)
    timelines = [timeline(path) for path in run_dirs(args.paths)]
    for entry in timelines[:args.show]:
        clock = "not recorded" if entry["clock_at"] is None else \
            f"at {entry['clock_at']}s (warm-up {entry['warm_up_seconds']}s)"
        print(f"{entry['run']}: clock started {clock}, {entry['candidates']} candidates")
        for step in entry["steps"]:
            print(f"  L{step['L']} ended at {step.get('ended', '-')}s: "
                  + "; ".join(step["calls"]))
    total = summary(timelines)
    print(json.dumps(total))
    if args.json:
        Path(args.json).write_text(json.dumps({"timelines": timelines, "summary": total},
                                              indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

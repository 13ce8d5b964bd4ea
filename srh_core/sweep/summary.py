"""What a sweep's cell entries add up to: cells by state, solved, spend, time left."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

__all__ = ["CELL_STATES", "counts_by_state", "eta_seconds", "summary_of"]

CELL_STATES = ("pending", "running", "done", "failed", "skipped", "cancelled")


def counts_by_state(entries: Mapping[str, Mapping[str, Any]]) -> dict[str, int]:
    totals = {state: 0 for state in CELL_STATES}
    for entry in entries.values():
        totals[entry["status"]] = totals.get(entry["status"], 0) + 1
    return totals


def eta_seconds(entries: Mapping[str, Mapping[str, Any]], parallel: int,
                now: float | None = None) -> float | None:
    """Time left, from the finished cells' median time and the cells still to run.

    None until a cell finished. With ``parallel`` cells at a time, the cells left
    take ``ceil(left / parallel)`` rounds of the median cell; the running ones are
    credited with the time they already ran.
    """
    now = time.time() if now is None else now
    times = sorted(float(entry["seconds"]) for entry in entries.values()
                   if entry["status"] in ("done", "failed") and entry.get("seconds") is not None)
    if not times:
        return None
    median = times[len(times) // 2] if len(times) % 2 else sum(
        times[len(times) // 2 - 1:len(times) // 2 + 1]) / 2
    pending = sum(entry["status"] == "pending" for entry in entries.values())
    running = [entry for entry in entries.values() if entry["status"] == "running"]
    slots = max(1, parallel)
    rest = max((max(0.0, median - (now - float(entry.get("submitted_at") or now)))
                for entry in running), default=0.0)
    return rest + -(-pending // slots) * median


def summary_of(entries: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Cells by state, solved, the solve rate over judged finished cells, spend."""
    judged = [entry for entry in entries.values()
              if entry["status"] in ("done", "failed") and not entry.get("dataset")]
    solved = sum(entry.get("solved") is True for entry in judged)
    return {"cells": len(entries), "by_state": counts_by_state(entries), "solved": solved,
            "judged": len(judged), "solve_rate": solved / len(judged) if judged else None,
            "tokens": sum(int(entry.get("spent_tokens") or 0) for entry in entries.values()),
            "cost": sum(float(entry.get("spent_cost") or 0.0) for entry in entries.values())}

"""Comparing results across runs: the run totals' times differ between any two runs."""

from __future__ import annotations

from typing import Any

TIME_FIELDS = ("model_seconds", "tool_seconds", "wall_seconds")


def without_times(result: dict[str, Any]) -> dict[str, Any]:
    """``result`` (a ``SearchResult.to_dict()``) with the totals' seconds left out."""
    totals = result.get("totals")
    if not totals:
        return result
    return {**result, "totals": {k: v for k, v in totals.items() if k not in TIME_FIELDS}}


def snapshot_without_times(snapshot: dict[str, Any]) -> dict[str, Any]:
    """An ``export_state()`` snapshot with its spend's seconds left out."""
    spend = snapshot.get("spend")
    if not spend:
        return snapshot
    return {**snapshot, "spend": {k: v for k, v in spend.items() if k not in TIME_FIELDS}}

"""Reading a sweep directory: its cells, their status and results, as a filterable table.

A sweep directory holds ``sweep.json`` (every cell's state, rewritten as the
sweep runs) and, when finished, ``results.csv`` / ``results.json``; cells run
embedded leave their run directories under ``runs/``, which is where a
cell's cost comes from (the sum of its steps' model prices).
"""

from __future__ import annotations

import csv
import io
import json
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

SWEEP_MARKER = "sweep.json"
COLUMNS = ("cell", "problem", "seed", "variant", "status", "run_status", "solved", "r2_fresh",
           "best_formula", "complexity", "train_mse", "validation_mse", "seconds", "cost",
           "attempts", "run_id", "error")
STATUSES = ("pending", "running", "done", "failed", "skipped", "cancelled")


def is_sweep_directory(path: Path) -> bool:
    return path.is_dir() and (path / SWEEP_MARKER).is_file()


class SweepReader:
    """One sweep directory.

    Args:
        path: The sweep's output directory.
        cost_of: Cost of a cell's run, by run id (None when unknown).
    """

    def __init__(self, path: str | Path,
                 cost_of: Callable[[str], float | None] | None = None) -> None:
        self.path = Path(path)
        self.cost_of = cost_of or (lambda run_id: None)

    @property
    def name(self) -> str:
        return self.path.name

    def _state(self) -> dict[str, Any]:
        try:
            return dict(json.loads((self.path / SWEEP_MARKER).read_text(encoding="utf-8")))
        except (OSError, ValueError):
            return {"cells": {}}

    def rows(self) -> list[dict[str, Any]]:
        """One row per cell, in the order of ``sweep.json``."""
        now = time.time()
        rows = []
        for cell_id, entry in (self._state().get("cells") or {}).items():
            row = {column: entry.get(column) for column in COLUMNS}
            row["cell"] = cell_id
            if row["seconds"] is None and entry.get("status") == "running" \
                    and entry.get("submitted_at"):
                row["seconds"] = now - float(entry["submitted_at"])
            if entry.get("run_id"):
                row["cost"] = self.cost_of(str(entry["run_id"]))
            rows.append(row)
        return rows

    def table(self, filters: Mapping[str, str]) -> dict[str, Any]:
        """The filtered rows, with counts per status of the whole sweep."""
        rows = self.rows()
        counts = {status: 0 for status in STATUSES}
        for row in rows:
            counts[str(row["status"])] = counts.get(str(row["status"]), 0) + 1
        kept = [row for row in rows if matches(row, filters)]
        return {"name": self.name, "sweep": self._state().get("sweep"), "path": str(self.path),
                "counts": counts, "total": len(rows), "rows": kept,
                "solved": sum(row["solved"] is True for row in rows)}

    source = "directory"

    def listing(self) -> dict[str, Any]:
        table = self.table({})
        return {**{key: table[key] for key in ("name", "sweep", "counts", "total", "solved")},
                "source": self.source}

    def report_rows(self) -> tuple[str, list[dict[str, Any]]]:
        """(status, rows) for the sweep report (srh_core.sweep.report)."""
        from srh_core.sweep.runner import sweep_status

        cells = self._state().get("cells") or {}
        return sweep_status(cells, None), [
            {**entry, "cell": cell_id, "label": entry.get("label") or cell_id}
            for cell_id, entry in cells.items()]

    def csv_text(self, filters: Mapping[str, str]) -> str:
        return rows_csv(self.table(filters)["rows"])


def rows_csv(rows: list[dict[str, Any]]) -> str:
    """The table's rows as CSV text, in :data:`COLUMNS` (other fields left out)."""
    stream = io.StringIO()
    writer = csv.DictWriter(stream, fieldnames=COLUMNS, extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    return stream.getvalue()


def matches(row: Mapping[str, Any], filters: Mapping[str, str]) -> bool:
    """``status`` (exact), ``solved`` ("yes"/"no"), ``q`` (text in problem, variant or formula)."""
    status = filters.get("status")
    if status and row.get("status") != status:
        return False
    solved = filters.get("solved")
    if solved in ("yes", "no") and (row.get("solved") is True) != (solved == "yes"):
        return False
    text = (filters.get("q") or "").strip().lower()
    haystack = " ".join(str(row.get(k) or "") for k in ("problem", "variant", "best_formula",
                                                        "cell"))
    return not text or text in haystack.lower()


class ClusterSweep:
    """A sweep coordinated on the cluster, read from Redis, with its controls.

    Its table has the shape of a sweep directory's (:class:`SweepReader`), plus the
    status view (``status``, ``eta_seconds``, ``coordinator``, ...) and which
    controls apply now.
    """

    source = "redis"
    CONTROLS = {"running": ("pause", "stop", "cancel"), "paused": ("resume", "stop", "cancel"),
                "stopped": ("resume", "cancel"), "cancelled": (), "completed": (),
                "failed": ()}

    def __init__(self, cluster: Any, name: str) -> None:
        self.cluster = cluster
        self.name = name

    def status(self) -> dict[str, Any]:
        from srh_workers.sweeps.control import sweep_status_view

        view = sweep_status_view(self.cluster.client, self.name)
        return {**view, "controls": list(self.CONTROLS.get(view["status"], ()))}

    def rows(self) -> list[dict[str, Any]]:
        from srh_workers.sweeps.control import sweep_rows

        now = time.time()
        rows = []
        for row in sweep_rows(self.cluster.client, self.name):
            if row.get("seconds") is None and row.get("status") == "running" \
                    and row.get("submitted_at"):
                row["seconds"] = now - float(row["submitted_at"])
            rows.append({**row, "cell": row.get("label") or row["cell"], "key": row["cell"]})
        return rows

    def report_rows(self) -> tuple[str, list[dict[str, Any]]]:
        """(status, rows) for the sweep report (srh_core.sweep.report)."""
        from srh_workers.sweeps.control import sweep_rows

        return self.status()["status"], sweep_rows(self.cluster.client, self.name)

    def table(self, filters: Mapping[str, str]) -> dict[str, Any]:
        rows = self.rows()
        view = self.status()
        kept = [row for row in rows if matches(row, filters)]
        return {"name": self.name, "sweep": self.name, "source": self.source,
                "counts": view["cells"], "total": len(rows), "rows": kept,
                "solved": view["solved"], "status": view}

    def listing(self) -> dict[str, Any]:
        view = self.status()
        return {"name": self.name, "sweep": self.name, "source": self.source,
                "counts": view["cells"], "total": view["total"], "solved": view["solved"],
                "status": view["status"]}

    def csv_text(self, filters: Mapping[str, str]) -> str:
        return rows_csv(self.table(filters)["rows"])

    def control(self, action: str) -> dict[str, Any]:
        """Apply ``action`` (pause, resume, stop, cancel); the new status view.

        Raises:
            ValueError: Not one of the four actions.
            ConfigurationError: The action does not apply to the sweep's status.
        """
        from srh_workers.sweeps import control

        if action not in ("pause", "resume", "stop", "cancel"):
            raise ValueError(f"Unknown sweep action {action!r}: pause, resume, stop or cancel.")
        if action == "cancel":
            control.cancel_sweep(self.cluster.client, self.name, self.cluster.send)
        else:
            getattr(control, f"{action}_sweep")(self.cluster.client, self.name)
        return self.status()

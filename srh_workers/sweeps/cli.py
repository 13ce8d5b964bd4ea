"""``srh sweep submit|status|list|pause|resume|stop|cancel``; ``srh sweep FILE --backend celery``.

Connection settings come from the usual ``SRH_*`` environment (``SRH_REDIS_URL``,
``SRH_BROKER_URL``). ``submit`` returns at once and prints the sweep's name;
the workers coordinate the sweep. ``srh sweep run FILE --backend celery`` is
submit + follow: it shows progress until the sweep is over, writes the results
table under ``--out`` and copies each finished cell's run directory to
``OUT/runs/`` (from Redis); Ctrl-C stops following, not the sweep.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from srh_core.errors import SearchStateError

logger = logging.getLogger("srh.sweep")
FOLLOW_POLL_SECONDS = 1.0


def register() -> None:
    """Plug the cluster's sweep actions, follower and report source into ``srh sweep``."""
    from srh_core.cli import SWEEP_ACTIONS, SWEEP_FOLLOWERS, SWEEP_SOURCES

    SWEEP_FOLLOWERS["celery"] = follow_celery
    if add_actions not in SWEEP_ACTIONS:
        SWEEP_ACTIONS.append(add_actions)
    if cluster_source not in SWEEP_SOURCES:
        SWEEP_SOURCES.append(cluster_source)


def add_actions(actions: Any) -> None:
    from srh_core.cli.commands import add_sweep_budget_arguments

    submit = actions.add_parser("submit", help="(cluster) submit a sweep file and return at once",
                                description="Submit a sweep to the cluster and print its name; "
                                "the workers coordinate it. Submitting it again runs only the "
                                "cells missing, failed or cancelled.")
    submit.add_argument("suite_file", help="sweep TOML file")
    add_sweep_budget_arguments(submit)
    submit.add_argument("--json", action="store_true")
    submit.set_defaults(handler=handle_submit)
    status = actions.add_parser("status", help="(cluster) a sweep's status, cells and ETA")
    status.add_argument("name")
    status.add_argument("--json", action="store_true")
    status.set_defaults(handler=handle_status)
    listing = actions.add_parser("list", help="(cluster) the submitted sweeps")
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(handler=handle_list)
    for action, text in (("pause", "no new cell starts; running cells finish"),
                         ("resume", "a paused or stopped sweep starts cells again"),
                         ("stop", "no new cell; running cells finish; then stopped"),
                         ("cancel", "running cells cancelled now; status cancelled")):
        parser = actions.add_parser(action, help=f"(cluster) {text}")
        parser.add_argument("name")
        parser.add_argument("--json", action="store_true")
        parser.set_defaults(handler=handle_control, control=action)


def _client() -> Any:
    from srh_workers.cli.connections import checked, connections

    client, app = connections()
    return checked(client), app


def handle_submit(args: argparse.Namespace) -> int:
    from srh_core.cli.commands import load_sweep_from_args
    from srh_workers.sweeps.control import submit_sweep

    spec = load_sweep_from_args(args)
    client, _ = _client()
    submitted = submit_sweep(client, spec)
    if args.json:
        print(json.dumps(submitted))
    else:
        print(f"Submitted sweep {spec.name} ({submitted['cells']} cells); follow it with "
              f"`srh sweep status {spec.name}`", file=sys.stderr)
        print(spec.name)
    return 0


def handle_status(args: argparse.Namespace) -> int:
    from srh_workers.sweeps.control import sweep_status_view

    client, _ = _client()
    view = sweep_status_view(client, args.name)
    print(json.dumps(view) if args.json else status_text(view))
    return 0


def status_text(view: dict[str, Any]) -> str:
    from srh_core.sweep.progress import duration

    cells = ", ".join(f"{n} {state}" for state, n in view["cells"].items() if n)
    lines = [f"Sweep {view['sweep']}: {view['status']}"
             + (f" ({view['control']} requested)" if view["control"] else ""),
             f"  cells: {view['total']} ({cells})",
             f"  solved: {view['solved']}/{view['judged']} judged",
             f"  elapsed {duration(view['elapsed_seconds'])}"
             + (f", ETA {duration(view['eta_seconds'])}" if view["status"] == "running" else ""),
             f"  spend: {view['tokens']:,} tokens, ${view['cost']:.4f}"]
    if view["coordinator"]:
        lines.append(f"  coordinator: {view['coordinator']}")
    if view["error"]:
        lines.append(f"  error: {view['error']}")
    return "\n".join(lines)


def handle_list(args: argparse.Namespace) -> int:
    from srh_workers.sweeps.control import list_view

    client, _ = _client()
    rows = list_view(client)
    if args.json:
        print(json.dumps({"sweeps": rows}))
        return 0
    if not rows:
        print("No sweeps on this cluster.")
    for row in rows:
        cells = row.get("cells") or {}
        done = sum(cells.get(state, 0) for state in ("done", "failed", "skipped", "cancelled"))
        print(f"{row['sweep']:<32} {row['status']:<10} {done}/{row.get('total', '?')} "
              f"finished, {row.get('solved', '?')} solved")
    return 0


def handle_control(args: argparse.Namespace) -> int:
    from srh_workers.flow.tasks import sender
    from srh_workers.sweeps import control

    client, app = _client()
    if args.control == "cancel":
        view = control.cancel_sweep(client, args.name, sender(app))
    else:
        view = getattr(control, f"{args.control}_sweep")(client, args.name)
    print(json.dumps(view) if args.json else status_text(view))
    return 0


def cluster_source(name: str) -> tuple[str, str, list[dict[str, Any]]] | None:
    """The report's rows of a sweep on the cluster (None when there is no such sweep)."""
    import redis

    from srh_workers.sweeps.control import sweep_rows, sweep_status_view

    try:
        client, _ = _client()
        view = sweep_status_view(client, name)
    except (SearchStateError, redis.exceptions.RedisError):
        return None
    except Exception as error:  # noqa: BLE001 - no cluster configured: not a cluster sweep
        logger.debug("no cluster sweep %s: %s", name, error)
        return None
    return name, view["status"], sweep_rows(client, name)


def follow_celery(args: argparse.Namespace, spec: Any, out: Path,
                  finish: Callable[[list[dict[str, Any]]], int] | None = None,
                  on_final: Callable[[dict[str, Any]], None] | None = None) -> int:
    """``srh sweep run FILE --backend celery``: submit, follow, then the table and run dirs.

    ``finish`` prints the end (default: the sweep's table; ``srh benchmark`` its own);
    ``on_final`` gets each cell's row when the follower first sees it final (a cell final
    before this submission, with the same run, is not reported again)."""
    from srh_core.cli.commands import print_sweep_rows
    from srh_core.sweep.progress import SweepProgress
    from srh_core.sweep.runner import write_table
    from srh_workers.sweeps.control import submit_sweep, sweep_rows, sweep_status_view
    from srh_workers.sweeps.store import SweepRecord

    client, _ = _client()
    reported = _final_cells(client, spec.name)
    submit_sweep(client, spec)
    print(f"Submitted sweep {spec.name}; the cluster coordinates it (Ctrl-C stops following, "
          "not the sweep)", file=sys.stderr)
    record = SweepRecord(client, spec.name)
    progress = SweepProgress(spec.name, 0, started=float(record.meta().get("submitted_at")
                                                          or time.time()))
    try:
        while True:
            view = sweep_status_view(client, spec.name)
            entries = record.entries()
            current = {row["cell"]: row for row in sweep_rows(client, spec.name)}
            live = {cell_id: {**current[cell_id], **entries.get(cell_id, {})}
                    for cell_id in current}
            progress.update(live, view["status"], spec.max_parallel)
            if on_final is not None:
                for row in current.values():
                    key = (row["cell"], row.get("run_id"), row["status"])
                    if row["status"] in FINAL and key not in reported:
                        reported.add(key)
                        on_final(row)
            if view["over"]:
                break
            time.sleep(FOLLOW_POLL_SECONDS)
    except KeyboardInterrupt:
        print(f"\nStopped following; sweep {spec.name} goes on on the cluster: "
              f"`srh sweep status {spec.name}`, `srh sweep cancel {spec.name}`", file=sys.stderr)
        return 130
    rows = sweep_rows(client, spec.name)
    write_table(out, spec.name, rows)
    _export_cells(client, rows, out / "runs")
    progress.finish(live, view["status"])
    if finish is not None:
        return finish(rows)
    return print_sweep_rows(spec.name, rows, out, args.json)


#: Cell states that end a cell (until a new submission reopens it).
FINAL = ("done", "failed", "cancelled")


def _final_cells(client: Any, name: str) -> set[tuple[str, Any, str]]:
    """(cell, run id, status) of the cells already final before a submission."""
    from srh_workers.sweeps.control import sweep_rows

    try:
        rows = sweep_rows(client, name)
    except SearchStateError:  # a new sweep
        return set()
    return {(row["cell"], row.get("run_id"), row["status"]) for row in rows
            if row["status"] in FINAL}


def _export_cells(client: Any, rows: list[dict[str, Any]], folder: Path) -> None:
    """Each finished cell's run directory under ``folder`` (copied from Redis)."""
    try:
        from srh_workers.artifacts import export_run
    except ImportError:  # pragma: no cover - the artifacts module is part of the package
        return
    for row in rows:
        run_id = row.get("run_id")
        if not run_id or row["status"] not in ("done", "failed", "cancelled"):
            continue
        target = folder / str(run_id)
        if target.exists():
            continue
        try:
            export_run(client, str(run_id), target)
        except Exception as error:  # noqa: BLE001 - the table is written; say what is missing
            logger.warning("run %s: its run directory could not be copied (%s)", run_id, error)

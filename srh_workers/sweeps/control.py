"""Sweeps on the cluster, from a client: submit, status, list, pause, resume, stop, cancel.

:func:`submit_sweep` publishes the sweep (its spec and the files its cells
need) and returns at once; the sweep's coordination then runs on the workers
(:mod:`srh_workers.sweeps.coordinator`), so the submitting shell may exit. The
controls only write the sweep's control field (the coordinator obeys it at its
next look, within a second or so); :func:`cancel_sweep` also cancels the running
cells' runs at once, so no model request starts after their current steps.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from redis import Redis

from srh_core.errors import ConfigurationError, InputTooLargeError
from srh_core.skills.bundle import skill_files
from srh_core.sweep.runner import is_over, new_entry, sweep_status, table_row
from srh_core.sweep.spec import SweepSpec, cells, resumed_cells
from srh_core.sweep.summary import eta_seconds, summary_of
from srh_workers.submit import cancel_run
from srh_workers.sweeps.store import SweepRecord, list_sweeps

#: The most a sweep's files (a suite file, datasets) may weigh in Redis together.
MAX_INPUT_BYTES = 256 * 1024**2
INPUTS_DIR = "srh-sweep-inputs"


def pack_inputs(spec: SweepSpec) -> tuple[SweepSpec, dict[str, bytes]]:
    """The spec with its files renamed into the sweep's inputs, and those files' bytes.

    Raises:
        ConfigurationError: A file cannot be read.
        InputTooLargeError: The files weigh more than :data:`MAX_INPUT_BYTES`.
    """
    inputs: dict[str, bytes] = {}
    changes: dict[str, Any] = {"base_dir": "."}

    def take(path: Path, name: str) -> str:
        try:
            data = path.read_bytes()
        except OSError as error:
            raise ConfigurationError(f"Sweep {spec.name}: cannot read {path}: {error}") from None
        inputs[name] = data
        total = sum(len(value) for value in inputs.values())
        if total > MAX_INPUT_BYTES:
            raise InputTooLargeError(f"Sweep {spec.name}: its files weigh {total:,} bytes, over "
                                     f"the {MAX_INPUT_BYTES // 1024**2} MiB a sweep may ship to "
                                     "the cluster; put the data on a shared volume instead.",
                                     path=str(path), limit=MAX_INPUT_BYTES, size=total)
        return name

    base = Path(spec.base_dir)
    folders: dict[str, str] = {}  # a skills_dir -> its name among the inputs

    def take_folder(given: Any) -> Any:
        if not isinstance(given, str):
            return given
        if given not in folders:
            folders[given] = name = f"skills/{len(folders)}"
            root = base / given
            if not root.is_dir():
                raise ConfigurationError(f"Sweep {spec.name}: skills_dir {given!r} is not a "
                                         f"directory (relative to {base}).",
                                         setting="skills_dir")
            for relative, path in skill_files(root):  # the files a run would ship
                take(path, f"{name}/{relative}")
        return folders[given]

    if "skills_dir" in spec.settings:
        changes["settings"] = {**spec.settings,
                               "skills_dir": take_folder(spec.settings["skills_dir"])}
    changes["variants"] = [
        variant.model_copy(update={"skills_dir": take_folder(variant.overrides()["skills_dir"])})
        if "skills_dir" in variant.overrides() else variant for variant in spec.variants]
    if spec.suite and (base / spec.suite).is_file():
        changes["suite"] = take(base / spec.suite, "suite" + (base / spec.suite).suffix)
    changes["datasets"] = [
        dataset.model_copy(update={"path": take(base / dataset.path, f"datasets/{dataset.name}"
                                                f"{Path(dataset.path).suffix}")})
        for dataset in spec.datasets]
    return spec.model_copy(update=changes), inputs


def materialize(spec: SweepSpec, inputs: Mapping[str, bytes], root: Path) -> SweepSpec:
    """The spec with its base directory at a local copy of its inputs (made once per content)."""
    if not inputs:
        return spec
    digest = hashlib.sha1()
    for name in sorted(inputs):
        digest.update(name.encode() + b"\0" + hashlib.sha1(inputs[name]).digest())
    folder = root / INPUTS_DIR / f"{spec.name}-{digest.hexdigest()[:12]}"
    if not folder.is_dir():
        staging = folder.with_name(f".{folder.name}.{time.time_ns()}")
        for name, data in inputs.items():
            target = staging / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        try:
            staging.rename(folder)
        except OSError:  # another coordinator of this host made it first
            import shutil

            shutil.rmtree(staging, ignore_errors=True)
    return spec.model_copy(update={"base_dir": str(folder)})


def submit_sweep(client: Redis, spec: SweepSpec, now: float | None = None) -> dict[str, Any]:
    """Publish the sweep; a coordinator on the workers takes it from there.

    Submitting a sweep again under the same name runs only the cells that are
    missing, failed, skipped or cancelled (a changed setting is a new cell), and
    clears a pause, stop or cancel.

    Returns:
        ``{"sweep", "generation", "cells"}``.
    """
    packed, inputs = pack_inputs(spec)
    generation = SweepRecord(client, spec.name).publish(packed.model_dump_json(), inputs,
                                                       time.time() if now is None else now)
    return {"sweep": spec.name, "generation": generation, "cells": len(cells(spec))}


def load_spec(record: SweepRecord) -> SweepSpec:
    return SweepSpec.model_validate_json(record.require()["spec"])


def sweep_entries(record: SweepRecord, spec: SweepSpec) -> dict[str, dict[str, Any]]:
    """The current spec's cells (those not yet seen by a coordinator as pending)."""
    known = record.entries()
    return {cell.cell_id: known.get(cell.cell_id) or new_entry(cell)
            for cell in resumed_cells(cells(spec), known)}


def status_of(meta: Mapping[str, str], entries: Mapping[str, Any]) -> str:
    """The status a client shows: the coordinator's error, else the cells and the control."""
    if meta.get("error"):
        return "failed"
    control = meta.get("control") or None
    if int(meta.get("generation") or 0) > int(meta.get("applied") or 0):
        # a submission no coordinator has taken yet: its old cells say nothing
        return {"pause": "paused", "cancel": "cancelled"}.get(control or "", "running")
    return sweep_status(entries, control)


def sweep_status_view(client: Redis, name: str, now: float | None = None) -> dict[str, Any]:
    """A JSON-ready view of a sweep: status, cells by state, solved, ETA, its coordinator."""
    record = SweepRecord(client, name)
    meta = record.require()
    spec = SweepSpec.model_validate_json(meta["spec"])
    entries = sweep_entries(record, spec)
    now = time.time() if now is None else now
    status = status_of(meta, entries)
    summary = summary_of(entries)
    submitted = float(meta.get("submitted_at") or now)
    finished = meta.get("finished_at")
    return {"sweep": name, "status": status, "control": meta.get("control") or None,
            "error": meta.get("error") or None, "cells": summary["by_state"],
            "total": summary["cells"], "solved": summary["solved"],
            "judged": summary["judged"], "solve_rate": summary["solve_rate"],
            "tokens": summary["tokens"], "cost": summary["cost"],
            "eta_seconds": None if status != "running" else eta_seconds(entries,
                                                                         spec.max_parallel, now),
            "submitted_at": submitted,
            "elapsed_seconds": (float(finished) if finished else now) - submitted,
            "coordinator": record.lease_holder(), "over": is_over(status, entries)
            and int(meta.get("generation") or 0) <= int(meta.get("applied") or 0)}


def sweep_rows(client: Redis, name: str) -> list[dict[str, Any]]:
    """The results table of a sweep on the cluster (one row per cell of its current spec)."""
    record = SweepRecord(client, name)
    spec = load_spec(record)
    return [table_row(cell_id, entry) for cell_id, entry in sweep_entries(record, spec).items()]


def list_view(client: Redis, limit: int = 100) -> list[dict[str, Any]]:
    rows = []
    for name in list_sweeps(client, limit):
        try:
            view = sweep_status_view(client, name)
        except Exception as error:  # noqa: BLE001 - one unreadable sweep must not hide the rest
            rows.append({"sweep": name, "status": "unreadable", "error": str(error)})
            continue
        rows.append({key: view[key] for key in ("sweep", "status", "total", "cells", "solved",
                                                "submitted_at", "elapsed_seconds")})
    return rows


def _control(client: Redis, name: str, control: str | None, allowed: tuple[str, ...]
             ) -> dict[str, Any]:
    record = SweepRecord(client, name)
    view = sweep_status_view(client, name)
    if view["status"] not in allowed:
        raise ConfigurationError(f"Sweep {name} is {view['status']}; this applies only to a "
                                 f"sweep that is {' or '.join(allowed)}.")
    record.set_control(control)
    return sweep_status_view(client, name)


def pause_sweep(client: Redis, name: str) -> dict[str, Any]:
    """No new cell starts; running cells finish (their results are kept)."""
    return _control(client, name, "pause", ("running", "paused"))


def resume_sweep(client: Redis, name: str) -> dict[str, Any]:
    """A paused or stopped sweep starts cells again."""
    return _control(client, name, None, ("paused", "stopped", "running"))


def stop_sweep(client: Redis, name: str) -> dict[str, Any]:
    """No new cell; the running ones finish; then the sweep is ``stopped``."""
    return _control(client, name, "stop", ("running", "paused", "stopped"))


def cancel_sweep(client: Redis, name: str, send: Callable[..., Any] | None = None
                 ) -> dict[str, Any]:
    """Every running cell's run cancelled now; the sweep ends ``cancelled``."""
    view = _control(client, name, "cancel", ("running", "paused", "stopped", "cancelled"))
    record = SweepRecord(client, name)
    for entry in record.entries().values():
        if entry.get("status") == "running" and entry.get("run_id"):
            try:
                cancel_run(client, entry["run_id"], send)
            except Exception:  # noqa: BLE001 - not submitted yet: the coordinator cancels it
                continue
    return view


__all__ = ["MAX_INPUT_BYTES", "cancel_sweep", "list_view", "materialize", "pack_inputs",
           "pause_sweep", "resume_sweep", "stop_sweep", "submit_sweep", "sweep_rows",
           "sweep_status_view"]

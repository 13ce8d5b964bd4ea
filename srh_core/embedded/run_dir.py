"""The run directory: what a run leaves so it can be shown, resumed and audited.

This module is the only one that knows the layout; the embedded runtime
writes it as the run goes, a Celery run's finalizing worker writes the same
files at the end (:meth:`RunDirectory.write_finished`), so both runtimes
leave the same set of files. All JSON is strict; nothing is ever pickled::

    settings.json       SearchSettings, as validated
    problem.json        description, target, feature names, run id (and the data's
                        layout for graph data: relations, num_nodes, axes, descriptions)
    data.npz            the arrays the run started with (np.savez; read with allow_pickle=False)
    data_revisions/     the data of every refresh during the run (``<revision>.npz`` and its
                        ``<revision>.json`` problem record, written last): resume takes the latest
    run.json            run id, creation time, agent metadata (class, settings)
    nodes.jsonl         append-only node log
    candidates.jsonl    append-only candidate log
    tool_calls.jsonl    append-only log of every executed tool call
    plans.jsonl         append-only log of opened steps (prompt and the K responses)
    response.jsonl      one line per model response: coordinate, model, tokens, latency, price
    state.json          snapshot after every step (atomic), with the branch states
    result.json         the final SearchResult, with the run's totals (tokens, cost, times)
    pareto.png          Pareto-front plot (when matplotlib is installed)

An interactive run (``srh run --interactive``, :mod:`srh_core.interactive`) adds its
control channel: ``commands.jsonl`` (appended by a controller such as ``srh web``),
``events.jsonl`` (the run's event timeline) and ``interaction.json`` (its state).
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from srh_core.agent.settings import RUN_ID_PATTERN, SearchSettings
from srh_core.errors import ConfigurationError, SearchStateError
from srh_core.jsonio import (
    append_jsonl,
    atomic_write_json,
    atomic_write_text,
    dumps,
    read_json,
    read_jsonl,
)
from srh_core.records import StepPlan, response_records
from srh_core.types import SearchResult, finite_float

logger = logging.getLogger("srh.agent")

RUN_FILES = ("settings.json", "problem.json", "data.npz", "run.json", "nodes.jsonl",
             "candidates.jsonl", "tool_calls.jsonl", "plans.jsonl", "response.jsonl", "state.json",
             "result.json")

REVISIONS = "data_revisions"  # the folder of the data refreshed during a run

_RUN_ID = re.compile(RUN_ID_PATTERN)


def path_inside(root: str | Path, relative: str | Path, *, setting: str = "save_path") -> Path:
    """``root / relative``, resolved, checked to lie strictly inside ``root``.

    Raises:
        ConfigurationError: The path is ``root`` itself or escapes it (``..``, an
            absolute path elsewhere, a symlink out).
    """
    base = Path(root).resolve()
    path = (base / relative).resolve()
    if base not in path.parents:
        raise ConfigurationError(f"The {setting!r} path {str(relative)!r} must stay inside "
                                 f"{base}; it resolves to {path}.", setting=setting)
    return path


def run_path(runs_dir: str | Path, run_id: str) -> Path:
    """The directory of run ``run_id`` under ``runs_dir`` (the id checked, the path kept inside).

    Raises:
        ConfigurationError: The id does not match the run id pattern (no ``.``, ``..``
            or separators), or the resolved path leaves ``runs_dir``.
    """
    if not isinstance(run_id, str) or not _RUN_ID.fullmatch(run_id):
        raise ConfigurationError(f"The 'run_id' setting must be a string matching "
                                 f"{RUN_ID_PATTERN}. Got {run_id!r} instead.", setting="run_id")
    return path_inside(runs_dir, run_id, setting="run_id")


def run_inputs(context: Any, description: str, run_id: str
               ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """``problem.json`` and the arrays of ``data.npz`` for a run over ``context``'s data.

    Both runtimes write these through this function. Plain data keeps its
    features and target; data with a layout (relations, ``num_nodes``,
    declared axes) keeps every array and records the layout, so
    :func:`resumed_inputs` can commit the same data again.
    """
    problem: dict[str, Any] = {"description": description, "target": context.target,
                               "features": list(context.feature_names()), "run_id": run_id,
                               "data_revision": context.revision}
    names = [*context.feature_names(), context.target]
    weights = getattr(context, "weights_name", None)
    if weights is not None:  # the weights column is data, not a feature
        problem["weights"] = weights
        names.insert(-1, weights)
    axes = {name: list(value) for name, value in context.variable_axes.items() if value}
    if context.relation_names or context.num_nodes is not None or axes:
        problem["layout"] = {
            "relation_names": sorted(context.relation_names), "num_nodes": context.num_nodes,
            "variable_structures": context.variable_structures, "variable_axes": axes,
            "variable_descriptions": context.variable_descriptions}
        names = list(context.data)
    units = getattr(context, "variable_units", None)
    if units:  # a manifest's units live on the context only: resume gives them back
        problem["variable_units"] = dict(units)
    return problem, {name: context.data[name] for name in names}


def resumed_inputs(problem: Mapping[str, Any], arrays: Mapping[str, np.ndarray]
                   ) -> tuple[dict[str, Any], dict[str, np.ndarray], dict[str, Any] | None]:
    """Features, the target and the recorded layout of a run (None for plain data without
    units; the recorded ``variable_units`` join the layout)."""
    target = str(problem["target"])
    layout = problem.get("layout")
    names = [n for n in arrays if n != target] if layout else list(problem["features"])
    if problem.get("weights") and not layout:
        names.append(str(problem["weights"]))
    if problem.get("variable_units"):
        layout = {**(layout or {}), "variable_units": dict(problem["variable_units"])}
    return {n: arrays[n] for n in names}, {target: arrays[target]}, layout


class RunDirectory:
    """Reads and writes one run directory (safe to share between threads)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._mended: set[str] = set()

    # ------------------------------------------------------------ writing
    def write_start(self, settings: SearchSettings, problem: Mapping[str, Any],
                    arrays: Mapping[str, np.ndarray]) -> None:
        """The files a run starts with: settings, problem and data."""
        self.path.mkdir(parents=True, exist_ok=True)
        atomic_write_json(self.path / "settings.json", settings.model_dump())
        atomic_write_json(self.path / "problem.json", dict(problem))
        _write_arrays(self.path / "data.npz", arrays)

    def write_data_revision(self, problem: Mapping[str, Any],
                            arrays: Mapping[str, np.ndarray]) -> Path:
        """Record the data of a refresh (``problem["data_revision"]`` names it).

        The arrays first, then the problem record (each atomic): a revision
        counts once its record is there, so a run killed in between resumes
        on the previous one. Returns the record's path.
        """
        revision = int(problem["data_revision"])
        folder = self.path / REVISIONS
        folder.mkdir(parents=True, exist_ok=True)
        _write_arrays(folder / f"{revision}.npz", arrays)
        atomic_write_json(folder / f"{revision}.json", dict(problem))
        return folder / f"{revision}.json"

    def write_run_record(self, run_id: str, agent_metadata: Mapping[str, Any]) -> None:
        """``run.json``, once (a resumed run keeps its creation time)."""
        path = self.path / "run.json"
        if not path.exists():
            self.path.mkdir(parents=True, exist_ok=True)
            atomic_write_json(path, {"run_id": run_id, "created_at": now(),
                                     "agent": dict(agent_metadata)})

    def append(self, log: str, records: Iterable[Mapping[str, Any]]) -> None:
        """Append records to a log (``nodes``, ``candidates``, ``tool_calls``, ``plans``...)."""
        path = self.path / f"{log}.jsonl"
        with self._lock:
            if log not in self._mended:
                _end_torn_line(path)
                self._mended.add(log)
            for record in records:
                append_jsonl(path, record)

    def rewrite(self, log: str, records: Iterable[Mapping[str, Any]]) -> None:
        """Replace a log with exactly ``records`` (resume drops what followed the snapshot)."""
        text = "".join(dumps(record) + "\n" for record in records)
        with self._lock:
            atomic_write_text(self.path / f"{log}.jsonl", text)

    def write_snapshot(self, snapshot: Mapping[str, Any]) -> None:
        with self._lock:
            atomic_write_json(self.path / "state.json", snapshot)

    def write_result(self, result: SearchResult) -> None:
        atomic_write_json(self.path / "result.json", result.to_dict())

    def write_finished(self, settings: SearchSettings, problem: Mapping[str, Any],
                       arrays: Mapping[str, np.ndarray], snapshot: Mapping[str, Any],
                       logs: Mapping[str, Sequence[Mapping[str, Any]]],
                       result: SearchResult) -> None:
        """Every file of a finished run at once (what a Celery run's finalizer writes).

        Args:
            snapshot: ``export_state()`` of the run, with its "runtime" part.
            logs: The ``tool_calls``, ``plans`` and ``timeline`` records of the run.
        """
        self.write_start(settings, problem, arrays)
        self.write_run_record(str(snapshot["run_id"]), snapshot.get("agent_metadata") or {})
        self.rewrite("nodes", snapshot.get("nodes") or [])
        self.rewrite("candidates", snapshot.get("candidates") or [])
        for log in ("tool_calls", "plans", "timeline"):
            self.rewrite(log, logs.get(log) or [])
        self.rewrite("response", _response_lines(str(snapshot["run_id"]), logs.get("plans") or []))
        self.write_snapshot(snapshot)
        self.plot_pareto(result, settings.ranking_metric)
        self.write_result(result)  # last: a run directory with a result is complete

    # ------------------------------------------------------------ reading
    def settings(self, **overrides: Any) -> SearchSettings:
        data = self._read("settings.json")
        data.update({k: v for k, v in overrides.items() if v is not None})
        return SearchSettings.build(**data)

    def problem(self) -> dict[str, Any]:
        return self._read("problem.json")

    def run_record(self) -> dict[str, Any]:
        return self._read("run.json")

    def arrays(self) -> dict[str, np.ndarray]:
        return _read_arrays(self.path / "data.npz")

    def data_revisions(self) -> list[int]:
        """The refreshed data revisions recorded in ``data_revisions/``, ascending."""
        folder = self.path / REVISIONS
        if not folder.is_dir():
            return []
        return sorted(int(path.stem) for path in folder.glob("*.json") if path.stem.isdigit()
                      and (folder / f"{path.stem}.npz").exists())

    def latest_data(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """``problem.json`` and the arrays of the latest data: the last refresh recorded,
        else the data the run started with (its problem has ``"refreshed": True``)."""
        revisions = self.data_revisions()
        if not revisions:
            return self.problem(), self.arrays()
        name = f"{REVISIONS}/{revisions[-1]}"
        return ({**self._read(f"{name}.json"), "refreshed": True},
                _read_arrays(self.path / f"{name}.npz"))

    def snapshot(self) -> dict[str, Any]:
        return self._read("state.json")

    def records(self, log: str) -> list[dict[str, Any]]:
        """The records of one log, in order (none when it does not exist)."""
        path = self.path / f"{log}.jsonl"
        return list(read_jsonl(path)) if path.exists() else []

    def result(self) -> SearchResult:
        return SearchResult.from_dict(self._read("result.json"))

    def has_result(self) -> bool:
        return (self.path / "result.json").exists()

    def _read(self, name: str) -> dict[str, Any]:
        path = self.path / name
        try:
            return dict(read_json(path))
        except FileNotFoundError:
            raise SearchStateError(f"{path} is missing: {self.path} is not a run directory "
                                   "(or the run never started).") from None
        except ValueError as error:
            raise SearchStateError(f"{path} is not valid JSON: {error}") from error

    # ------------------------------------------------------------ the plot
    def plot_pareto(self, result: SearchResult, metric: str) -> Path | None:
        """Write pareto.png; None (and a debug log) when matplotlib is absent."""
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            logger.debug("matplotlib is not installed; skipping pareto.png")
            return None
        points = [_plot_point(candidate, metric) for candidate in result.candidates]
        front = [points[i] for i in result.pareto_front if points[i] is not None]
        cloud = [point for point in points if point is not None]
        figure, axes = plt.subplots(figsize=(6, 4))
        if cloud:
            axes.scatter(*zip(*cloud, strict=True), s=10, alpha=0.4, label="candidates")
        if front:
            axes.step(*zip(*front, strict=True), where="post", color="C3", label="Pareto front")
        axes.set(xlabel="complexity", ylabel=metric, yscale="symlog")
        if cloud or front:  # a run with no scored candidate has nothing to label
            axes.legend(loc="best")
        path = self.path / "pareto.png"
        figure.savefig(path, dpi=100, bbox_inches="tight")
        plt.close(figure)
        return path


def _write_arrays(path: Path, arrays: Mapping[str, np.ndarray]) -> None:
    temporary = path.with_name(f".{path.stem}.tmp.npz")
    np.savez(temporary, **{name: np.asarray(value) for name, value in arrays.items()})
    temporary.replace(path)


def _read_arrays(path: Path) -> dict[str, np.ndarray]:
    if not path.exists():
        raise SearchStateError(f"{path} is missing; the run directory cannot be resumed.")
    with np.load(path, allow_pickle=False) as archive:
        return {name: archive[name] for name in archive.files}


def _response_lines(run_id: str, plans: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [line for plan in plans for line in response_records(run_id, StepPlan.from_dict(plan))]


def _end_torn_line(path: Path) -> None:
    """Close a last line a killed process left unfinished, so the next record stays whole."""
    if not path.exists() or path.stat().st_size == 0:
        return
    with path.open("rb+") as stream:
        stream.seek(-1, 2)
        if stream.read(1) != b"\n":
            stream.write(b"\n")


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def clock_record(settings: SearchSettings, seconds_left: float | None,
                 warm_up_seconds: float = 0.0, at: float | None = None) -> dict[str, Any]:
    """``timeline.jsonl``'s record of when a run's time limit started counting.

    Args:
        settings: The run's settings (its ``time_limit_clock``).
        seconds_left: The time limit left then (None: no limit).
        warm_up_seconds: Seconds spent starting the tool processes before it.
        at: Epoch seconds when it started (default: now).
    """
    when = now() if at is None else datetime.fromtimestamp(at, UTC).isoformat(
        timespec="milliseconds")
    return {"event": "clock", "at": when, "time_limit_clock": settings.time_limit_clock,
            "warm_up_seconds": round(warm_up_seconds, 3),
            "seconds_left": None if seconds_left is None else round(seconds_left, 3)}


def _plot_point(candidate: Any, metric: str) -> tuple[float, float] | None:
    value = finite_float(candidate.metric(metric, "validation"))
    value = finite_float(candidate.metric(metric, "train")) if value is None else value
    return None if value is None or candidate.complexity is None else (candidate.complexity, value)

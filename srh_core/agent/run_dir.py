"""The run directory: what a run writes so it can be shown, resumed and audited.

Layout (all JSON is strict; nothing is ever pickled)::

    settings.json       SearchSettings, as validated
    problem.json        description, target, feature names
    data.npz            the arrays the run searched (np.savez, allow_pickle=False to read)
    run.json            run id, creation time, agent metadata      (SearchRunState)
    nodes.jsonl         append-only node log                        (SearchRunState)
    candidates.jsonl    append-only candidate log                   (SearchRunState)
    tool_calls.jsonl    append-only log of every executed tool call
    state.json          snapshot after every step (atomic), with the branch states
    result.json         the final SearchResult
    pareto.png          Pareto-front plot (when matplotlib is installed)
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from srh_core.agent.settings import SearchSettings
from srh_core.errors import SearchStateError
from srh_core.jsonio import append_jsonl, atomic_write_json, read_json
from srh_core.types import SearchResult, ToolCall, ToolCallResult, finite_float

logger = logging.getLogger("srh.agent")


class RunDirectory:
    """Reads and writes one run directory."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def write_start(self, settings: SearchSettings, problem: Mapping[str, Any],
                    arrays: Mapping[str, np.ndarray]) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        atomic_write_json(self.path / "settings.json", settings.model_dump())
        atomic_write_json(self.path / "problem.json", dict(problem))
        temporary = self.path / ".data.tmp.npz"
        np.savez(temporary, **{name: np.asarray(value) for name, value in arrays.items()})
        temporary.replace(self.path / "data.npz")

    def log_tool_calls(self, coordinate: Mapping[str, int], calls: Sequence[ToolCall],
                       results: Sequence[ToolCallResult], forced: bool) -> None:
        for call, result in zip(calls, results, strict=False):
            append_jsonl(self.path / "tool_calls.jsonl", {
                **coordinate, "forced": forced, "call": call.to_dict(),
                "ok": result.ok, "result_str": result.result_str, "meta": result.meta_data})

    def settings(self, **overrides: Any) -> SearchSettings:
        data = self._read("settings.json")
        data.update({k: v for k, v in overrides.items() if v is not None})
        return SearchSettings.build(**data)

    def problem(self) -> dict[str, Any]:
        return self._read("problem.json")

    def arrays(self) -> dict[str, np.ndarray]:
        path = self.path / "data.npz"
        if not path.exists():
            raise SearchStateError(f"{path} is missing; the run directory cannot be resumed.")
        with np.load(path, allow_pickle=False) as archive:
            return {name: archive[name] for name in archive.files}

    def snapshot(self) -> dict[str, Any]:
        return self._read("state.json")

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
        axes.legend(loc="best")
        path = self.path / "pareto.png"
        figure.savefig(path, dpi=100, bbox_inches="tight")
        plt.close(figure)
        return path


def _plot_point(candidate: Any, metric: str) -> tuple[float, float] | None:
    value = finite_float(candidate.metric(metric, "validation"))
    value = finite_float(candidate.metric(metric, "train")) if value is None else value
    return None if value is None or candidate.complexity is None else (candidate.complexity, value)

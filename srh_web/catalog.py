"""What the workbench can show: runs and sweeps under the run roots, and runs in Redis.

Run directories are found by their files (``run.json`` and
``settings.json``) up to four levels under each root, so a sweep's
``runs/`` are found too; a directory with ``sweep.json`` is a sweep. The
scan is repeated at most every :data:`SCAN_SECONDS`; readers are kept, so
each run's files are read incrementally across requests.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from srh_core.interactive import ControlChannel, RunDirectoryChannel
from srh_web.errors import RunNotFoundError
from srh_web.run_reader import RunReader, iter_run_directories
from srh_web.sweep_reader import ClusterSweep, SweepReader, is_sweep_directory

SCAN_SECONDS = 2.0
SWEEP_DEPTH = 2


class DirectoryRun:
    """A run directory as the app sees it."""

    source = "directory"

    def __init__(self, reader: RunReader) -> None:
        self.reader = reader
        self._channel: ControlChannel | None = None

    def summary(self) -> dict[str, Any]:
        return self.reader.summary()

    def nodes(self, after: int) -> dict[str, Any]:
        return self.reader.nodes(after)

    def node(self, node_id: str) -> dict[str, Any] | None:
        return self.reader.node(node_id)

    def control(self) -> dict[str, Any] | None:
        return self.reader.control_status()

    def channel(self) -> ControlChannel | None:
        """The run directory's control channel when the run is interactive."""
        if self.reader.control_status() is None:
            return None
        if self._channel is None:
            self._channel = RunDirectoryChannel(self.reader.path)
        return self._channel

    def signature(self) -> tuple[Any, ...]:
        """Changes whenever the run's files do (what the live stream watches)."""
        return (self.reader.node_count(), self.reader.read_json("result.json") != {},
                self.reader.updated_at())


class RedisRun:
    """A run that only Redis knows (through the cluster adapter)."""

    source = "redis"

    def __init__(self, cluster: Any, run_id: str) -> None:
        self.cluster, self.run_id = cluster, run_id
        self._channel: ControlChannel | None = None

    def summary(self) -> dict[str, Any]:
        return self.cluster.summary(self.run_id)

    def nodes(self, after: int) -> dict[str, Any]:
        return self.cluster.nodes(self.run_id, after)

    def node(self, node_id: str) -> dict[str, Any] | None:
        return self.cluster.node(self.run_id, node_id)

    def control(self) -> dict[str, Any] | None:
        return self.cluster.control(self.run_id)

    def channel(self) -> ControlChannel | None:
        """The run's Redis control channel when it is interactive (commands applied at once)."""
        if self._channel is None:
            self._channel = self.cluster.channel(self.run_id)
        return self._channel

    def signature(self) -> tuple[Any, ...]:
        listing = self.cluster.listing(self.run_id)
        return listing["nodes"], listing["status"], listing.get("interaction_state")


class Catalog:
    """Runs and sweeps under ``roots``, plus the cluster's runs when ``cluster`` is given."""

    def __init__(self, roots: Sequence[str | Path], cluster: Any = None) -> None:
        self.roots = [Path(root) for root in roots]
        self.cluster = cluster
        self._lock = threading.Lock()
        self._scanned_at = 0.0
        self._runs: dict[str, DirectoryRun] = {}
        self._by_path: dict[Path, DirectoryRun] = {}
        self._sweeps: dict[str, SweepReader] = {}

    def _scan(self) -> None:
        with self._lock:
            if time.monotonic() - self._scanned_at < SCAN_SECONDS:
                return
            runs: dict[str, DirectoryRun] = {}
            for root in self.roots:
                for path in iter_run_directories(root):
                    run = self._by_path.get(path) or DirectoryRun(RunReader(path))
                    self._by_path[path] = run
                    key = run.reader.run_id
                    while key in runs:
                        key += "~"
                    runs[key] = run
            self._runs = runs
            self._sweeps = {}
            for root in self.roots:
                for path in _sweep_directories(root, SWEEP_DEPTH):
                    name = path.name
                    while name in self._sweeps:
                        name += "~"
                    self._sweeps[name] = SweepReader(path, self._cost_of)
            self._scanned_at = time.monotonic()

    def _cost_of(self, run_id: str) -> float | None:
        run = self._runs.get(run_id)
        return None if run is None else run.reader.summary()["cost"]

    # ----------------------------------------------------------------- runs
    def runs(self) -> list[dict[str, Any]]:
        """Every run, directories first then Redis-only ones, newest first within each."""
        self._scan()
        listed = [{**run.reader.listing(), "key": key} for key, run in self._runs.items()]
        listed.sort(key=lambda row: row.get("updated_at") or 0, reverse=True)
        if self.cluster is not None:
            known = {row["run_id"] for row in listed}
            try:
                listed += [{**self.cluster.listing(run_id), "key": run_id}
                           for run_id in self.cluster.run_ids() if run_id not in known]
            except Exception as error:  # Redis down: the directories still list
                listed.append({"key": None, "run_id": None, "source": "redis",
                               "status": "unavailable", "error": str(error)})
        return listed

    def run(self, key: str) -> DirectoryRun | RedisRun:
        """The run listed under ``key``.

        Raises:
            RunNotFoundError: Neither a run directory nor Redis has it.
        """
        self._scan()
        if key in self._runs:
            return self._runs[key]
        if self.cluster is not None and self.cluster.has_run(key):
            return RedisRun(self.cluster, key)
        raise RunNotFoundError(key)

    # --------------------------------------------------------------- sweeps
    def sweeps(self) -> list[dict[str, Any]]:
        """Sweep directories, then the cluster's sweeps (keyed ``NAME~cluster`` on a clash)."""
        self._scan()
        listed = [{**sweep.listing(), "key": key} for key, sweep in self._sweeps.items()]
        if self.cluster is not None:
            try:
                for name in self.cluster.sweep_names():
                    key = name if name not in self._sweeps else f"{name}~cluster"
                    listed.append({**ClusterSweep(self.cluster, name).listing(), "key": key})
            except Exception as error:  # Redis down: the directories still list
                listed.append({"key": None, "name": None, "source": "redis",
                               "status": "unavailable", "error": str(error)})
        return listed

    def sweep(self, key: str) -> SweepReader | ClusterSweep:
        """The sweep listed under ``key``: a directory, else a cluster sweep.

        Raises:
            RunNotFoundError: Neither has it.
        """
        self._scan()
        if key in self._sweeps:
            return self._sweeps[key]
        name = key.removesuffix("~cluster")
        if self.cluster is not None and self.cluster.has_sweep(name):
            return ClusterSweep(self.cluster, name)
        raise RunNotFoundError(key, kind="sweep")


def _sweep_directories(root: Path, depth: int) -> list[Path]:
    if is_sweep_directory(root):
        return [root]
    if depth <= 0 or not root.is_dir():
        return []
    found: list[Path] = []
    for child in sorted(root.iterdir()):
        if child.is_dir() and not child.name.startswith("."):
            found += _sweep_directories(child, depth - 1)
    return found

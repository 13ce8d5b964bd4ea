"""Reading one run directory while it is written: only its files, only what was appended.

:class:`JsonlTail` follows an append-only JSONL file by byte offset and
notices when the file was replaced (a resumed run rewrites ``nodes.jsonl``),
so each poll costs what was appended since the last one. :class:`RunReader`
keeps the nodes' summaries and byte offsets in memory and reads one node's
full detail only when it is asked for.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from srh_core.interactive.run_dir_channel import run_is_live
from srh_core.types import CandidateRecord
from srh_web import views

RUN_MARKERS = ("run.json", "settings.json")


def is_run_directory(path: Path) -> bool:
    return path.is_dir() and all((path / name).exists() for name in RUN_MARKERS)


class JsonlTail:
    """Incremental reader of one append-only JSONL file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.identity: tuple[int, int] | None = None

    def read(self) -> tuple[bool, list[tuple[int, dict[str, Any]]]]:
        """``(reset, [(offset, record), ...])`` for the complete lines appended since last time.

        ``reset`` is True when the file was replaced or shrank: the caller
        drops what it kept and the records returned start from the top.
        """
        try:
            info = self.path.stat()
        except FileNotFoundError:
            return False, []
        identity = (info.st_dev, info.st_ino)
        reset = self.identity is not None and (identity != self.identity
                                               or info.st_size < self.offset)
        if reset or self.identity is None:
            self.offset, self.identity = 0, identity
        if info.st_size == self.offset:
            return reset, []
        with self.path.open("rb") as stream:
            stream.seek(self.offset)
            data = stream.read(info.st_size - self.offset)
        complete = data[:data.rfind(b"\n") + 1]
        records, position = [], self.offset
        for line in complete.splitlines(keepends=True):
            try:
                value = json.loads(line)
            except ValueError:
                value = None
            if isinstance(value, dict):
                records.append((position, value))
            position += len(line)
        self.offset += len(complete)
        return reset, records

    def line_at(self, offset: int) -> dict[str, Any] | None:
        with self.path.open("rb") as stream:
            stream.seek(offset)
            try:
                return json.loads(stream.readline())
            except ValueError:
                return None


class RunReader:
    """One run directory, read through its files (thread-safe, incremental)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._nodes_tail = JsonlTail(self.path / "nodes.jsonl")
        self._candidates_tail = JsonlTail(self.path / "candidates.jsonl")
        self._nodes: list[dict[str, Any]] = []
        self._offsets: dict[str, int] = {}
        self._usage: list[dict[str, Any]] = []
        self._candidates: list[CandidateRecord] = []
        self._json_cache: dict[str, tuple[float, Any]] = {}

    # ------------------------------------------------------------ files
    def read_json(self, name: str) -> dict[str, Any]:
        """A JSON file of the run, cached until its mtime changes ({} when absent)."""
        path = self.path / name
        try:
            mtime = path.stat().st_mtime
        except FileNotFoundError:
            return {}
        cached = self._json_cache.get(name)
        if cached is not None and cached[0] == mtime:
            return cached[1]
        try:
            value = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, OSError):
            return cached[1] if cached else {}
        if name == "state.json":  # keep the runtime part only: the snapshot repeats every node
            value = {"runtime": value.get("runtime") or {}}
        self._json_cache[name] = (mtime, value)
        return value

    def refresh(self) -> None:
        with self._lock:
            reset, records = self._nodes_tail.read()
            if reset:
                self._nodes, self._offsets, self._usage = [], {}, []
            for offset, record in records:
                if record.get("node_id") in self._offsets:
                    continue
                self._offsets[str(record.get("node_id"))] = offset
                self._nodes.append(views.node_summary(record))
                self._usage.append({"coordinate": record.get("coordinate"),
                                    "usage": views.step_usage(record)})
            reset, rows = self._candidates_tail.read()
            if reset:
                self._candidates = []
            self._candidates += [CandidateRecord.from_dict(row) for _, row in rows]

    # ------------------------------------------------------------ views
    @property
    def run_id(self) -> str:
        return str(self.read_json("run.json").get("run_id") or self.path.name)

    def nodes(self, after: int = 0) -> dict[str, Any]:
        """Node summaries from index ``after`` on (the client's cursor)."""
        self.refresh()
        with self._lock:
            return {"total": len(self._nodes), "nodes": self._nodes[after:]}

    def node_count(self) -> int:
        self.refresh()
        with self._lock:
            return len(self._nodes)

    def node(self, node_id: str) -> dict[str, Any] | None:
        self.refresh()
        record = self._record(node_id)
        return None if record is None else views.node_detail(record, self._prompt_of)

    def _record(self, node_id: str) -> dict[str, Any] | None:
        offset = self._offsets.get(node_id)
        return None if offset is None else self._nodes_tail.line_at(offset)

    def _prompt_of(self, node_id: str) -> list[Any] | None:
        record = self._record(node_id)
        return None if record is None else (record.get("detail") or {}).get("prompt")

    def summary(self) -> dict[str, Any]:
        """Progress, budget, usage, best formula and front of the run."""
        self.refresh()
        settings = views.settings_view(self.read_json("settings.json"))
        result, state = self.read_json("result.json"), self.read_json("state.json")
        runtime = state.get("runtime") or {}
        with self._lock:
            front = views.front_view(list(self._candidates), settings["ranking_metric"],
                                     settings["larger_is_better"], settings["selection"])
            usage = views.usage_totals(self._usage)
            count = len(self._nodes)
        return {"run_id": self.run_id, "source": "directory", "path": str(self.path),
                "status": result.get("status") or runtime.get("status") or "starting",
                "stop_reason": result.get("stop_reason"), "settings": settings,
                "nodes": count, "elapsed_seconds": self._elapsed(bool(result)),
                "updated_at": self.updated_at(), **usage, "best": front["best"],
                "front": front, "branches": [_branch_view(b) for b in
                                             runtime.get("branches") or []],
                "restart": runtime.get("restart"), "problem": self._problem(),
                "control": self.control_status()}

    def listing(self) -> dict[str, Any]:
        """The short form the runs page lists."""
        summary = self.summary()
        best = summary["best"] or {}
        return {key: summary[key] for key in ("run_id", "source", "status", "nodes",
                                              "elapsed_seconds", "updated_at", "cost")} | {
            "max_nodes": summary["settings"]["max_nodes"], "best_formula": best.get("formula"),
            "interactive": summary["control"] is not None, "path": str(self.path)}

    def control_status(self) -> dict[str, Any] | None:
        """The interactive run's last published status (None for a run that is not)."""
        state = self.read_json("interaction.json")
        if not state:
            return None
        status = dict(state.get("status") or {})
        status["alive"] = run_is_live(state)
        return status

    def _problem(self) -> dict[str, Any]:
        problem = self.read_json("problem.json")
        return {"description": problem.get("description"), "target": problem.get("target"),
                "features": problem.get("features") or []}

    def _elapsed(self, finished: bool) -> float | None:
        created = _parse_time(self.read_json("run.json").get("created_at"))
        if created is None:
            return None
        end = time.time()
        if finished:  # a copied directory has new mtimes; its nodes keep their times
            with self._lock:
                stamps = [_parse_time(node.get("created_at")) for node in self._nodes[-1:]]
            end = stamps[0] if stamps and stamps[0] else (self._mtime("result.json") or end)
        return max(0.0, end - created)

    def updated_at(self) -> float | None:
        """The newest modification time of the files a live run appends to."""
        stamps = [self._mtime(name) for name in ("nodes.jsonl", "state.json", "result.json",
                                                 "events.jsonl")]
        return max((s for s in stamps if s is not None), default=None)

    def _mtime(self, name: str) -> float | None:
        try:
            return (self.path / name).stat().st_mtime
        except FileNotFoundError:
            return None


def _branch_view(branch: dict[str, Any]) -> dict[str, Any]:
    return {key: branch.get(key) for key in ("R", "C", "L", "status", "stop_reason")}


def _parse_time(text: Any) -> float | None:
    try:
        return datetime.fromisoformat(str(text)).timestamp()
    except ValueError:
        return None




def iter_run_directories(root: Path, depth: int = 4) -> Iterator[Path]:
    """Run directories under ``root`` (itself included), at most ``depth`` levels down."""
    if is_run_directory(root):
        yield root
        return
    if depth <= 0 or not root.is_dir():
        return
    for child in sorted(root.iterdir()):
        if child.is_dir() and not child.name.startswith("."):
            yield from iter_run_directories(child, depth - 1)

"""A cluster run's evidence on disk: the artifact root, ``srh export``, and compaction.

With ``SRH_ARTIFACTS`` set (a volume every worker mounts), the worker that
finishes a run writes its run directory (nodes, tool calls, model responses,
result: the files an embedded run leaves, readable by ``srh show`` and ``srh
web``) to ``$SRH_ARTIFACTS/runs/<run_id>``, whichever worker that is, and then
compacts the run's Redis keys (:meth:`RedisRunStore.compact`): only what
``srh status``, ``srh result`` and sweep reports read stays in Redis. The
sweep coordinator adds ``judgement.json`` (solved, fresh R^2) to a cell's
directory when its run is judged.

:func:`export_run` (``srh export RUN_ID DIR``) writes the same directory for
any run still in Redis, from any machine, and compacts it too. A run whose
directory could not be written (a full or read-only volume) keeps all its keys:
the result is never lost, and an export later writes the directory.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from srh_core.embedded.run_dir import RunDirectory, run_inputs
from srh_core.errors import ConfigurationError, SearchStateError
from srh_core.jsonio import atomic_write_json
from srh_workers.flow.run_view import run_view_for
from srh_workers.flow.steps import write_run_files
from srh_workers.store import RedisRunStore

if TYPE_CHECKING:
    from redis import Redis

logger = logging.getLogger("srh.workers.artifacts")
JUDGEMENT_FILE = "judgement.json"
#: How long the sweep coordinator waits for a finished run's worker to write its directory.
DIRECTORY_GRACE_SECONDS = 3.0


def export_run(client: Redis, run_id: str, directory: str | Path, *, partial: bool = False,
               compact: bool = True) -> Path:
    """Write a run's directory from Redis to ``directory`` (atomically) and compact it.

    Args:
        client: Redis of the run store.
        run_id: The run.
        directory: Where the run directory goes (missing or empty).
        partial: Export a run that is still running (its directory then has no result
            and the run is not compacted).
        compact: Shrink the finished run's keys once its directory is written.

    Raises:
        SearchStateError: The run is unknown, still running (without ``partial``), or
            was compacted already (its directory is where the meta hash says).
        ConfigurationError: ``directory`` exists and is not empty.
        OSError: The directory cannot be written (nothing changed in Redis).
    """
    target = Path(directory)
    probe = RedisRunStore(client, run_id, register=False)
    if probe.spec_json() is None:
        raise SearchStateError(f"No run {run_id!r} in Redis (finished runs expire after their "
                               "TTL; srh status lists the runs).")
    if probe.is_compacted():
        raise SearchStateError(f"Run {run_id} was exported already, to "
                               f"{probe.exported_to() or 'the artifact root'}; its details are "
                               "no longer in Redis.")
    result = probe.stored_result()
    if result is None and not partial:
        raise SearchStateError(f"Run {run_id} is still running; export it once it has a "
                               "result, or now with --partial (no result, not compacted).")
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise ConfigurationError(f"{target} exists and is not an empty directory; export to a "
                                 "new one.", setting="directory")
    rt = run_view_for(client, run_id)
    staging = target.with_name(f".{target.name}.export-{time.time_ns()}")
    staging.parent.mkdir(parents=True, exist_ok=True)
    try:
        if result is not None:
            write_run_files(rt, result, staging)
        else:
            _write_partial(rt, staging)
        if target.exists():
            target.rmdir()
        staging.rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    if compact and result is not None:
        rt.store.compact(exported_to=str(target.resolve()))
    return target


def _write_partial(rt: Any, path: Path) -> None:
    """A running run's directory: its inputs and the nodes so far, no result."""
    problem, arrays = run_inputs(rt.context, rt.spec.description, rt.spec.run_id)
    snapshot = rt.store.save_snapshot({"restart": rt.store.flow.latest_restart(),
                                       "status": "running", "backend": "celery"})
    directory = RunDirectory(path)
    directory.write_start(rt.settings, problem, arrays)
    directory.write_run_record(rt.run_id, snapshot.get("agent_metadata") or {})
    directory.rewrite("nodes", snapshot.get("nodes") or [])
    directory.rewrite("candidates", snapshot.get("candidates") or [])
    directory.rewrite("tool_calls", rt.store.tool_log())
    directory.write_snapshot(snapshot)


def write_judgement(run_dir: str | Path, judgement: Mapping[str, Any]) -> Path:
    """``judgement.json`` in a run directory (how a sweep judged the run)."""
    path = Path(run_dir) / JUDGEMENT_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_json(path, dict(judgement))
    return path


def judge_into_artifacts(root: Path, client: Redis) -> Any:
    """The sweep coordinator's ``on_finished`` hook: a judged cell's judgement on disk.

    The worker that finished the run writes its directory just after storing the
    result; when no complete directory (one with ``result.json``) appears within
    :data:`DIRECTORY_GRACE_SECONDS` (that worker died in between, or its volume
    failed), the coordinator writes it from Redis and compacts the run itself, so a
    cell's evidence is on disk whoever finished it.
    """
    def on_finished(entry: Mapping[str, Any], spec: Any) -> None:
        if not entry.get("run_id") or entry.get("dataset"):
            return
        run_id = str(entry["run_id"])
        run_dir = root / "runs" / run_id
        try:
            ensure_run_directory(client, run_id, run_dir)
            write_judgement(run_dir, {key: entry.get(key) for key in (
                "problem", "seed", "variant", "settings_hash", "run_status", "solved",
                "r2_fresh", "best_formula", "complexity")} | {"sweep": spec.name})
        except (OSError, SearchStateError) as error:
            logger.error("run %s: its run directory or judgement.json was not written: %s",
                         run_id, error)

    return on_finished


def ensure_run_directory(client: Redis, run_id: str, run_dir: Path, *,
                         grace: float | None = None) -> bool:
    """Make sure a finished run's complete directory is at ``run_dir``; True if written here."""
    grace = DIRECTORY_GRACE_SECONDS if grace is None else grace
    end = time.monotonic() + grace
    while not RunDirectory(run_dir).has_result():
        if time.monotonic() >= end:
            break
        time.sleep(0.1)
    else:
        return False
    rt = run_view_for(client, run_id)
    if rt.store.is_compacted():  # written meanwhile by a late worker
        return False
    result = rt.store.stored_result()
    if result is None:
        raise SearchStateError(f"Run {run_id} has no result; its directory is written when "
                               "it finishes.")
    logger.warning("run %s: no run directory from its worker; writing it from Redis to %s",
                   run_id, run_dir)
    write_run_files(rt, result, run_dir)
    rt.store.compact(exported_to=str(run_dir))
    return True


__all__ = ["DIRECTORY_GRACE_SECONDS", "ensure_run_directory", "export_run",
           "judge_into_artifacts", "write_judgement"]

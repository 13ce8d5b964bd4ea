"""The sweep coordinator: a thread in every worker that drives the sweeps it holds.

Every ``SRH_SWEEP_INTERVAL`` seconds each worker's coordinator looks at the
active sweeps (:data:`~srh_workers.sweeps.store.SWEEPS_ACTIVE`). For each, it
holds the sweep's lease (renews it if it is its own, takes it if nobody holds
it) and, if it does, runs one tick of the sweep runner
(:meth:`srh_core.sweep.SweepRunner.tick`: poll the running cells, start the
pending ones the controls and ``max_parallel`` allow). The state is the
cells' hash in Redis, so a coordinator that dies (its worker SIGKILLed) loses
nothing: its lease expires after ``SRH_SWEEP_LEASE`` seconds and another
worker's coordinator goes on from the cells in Redis.

Why no cell runs twice: a cell's run id is fixed before its run is submitted
(``<sweep>-<cell hash>-a<attempt>``) and written (fenced by the lease) before the
submission; a successor finds the cell ``running`` under that id and follows
it, a submission of an id that exists is refused (:class:`RunExists`), and a
run that was never published reads as lost and is retried under the next
attempt's id.

A new submission of the sweep (a higher ``generation``) is applied by the
coordinator: the failed, skipped and cancelled cells become pending again. The
coordinator ends a sweep (removes it from the active set, releases its lease)
once :func:`~srh_core.sweep.runner.is_over`, in one script that checks that no
submission or control came in meanwhile.
"""

from __future__ import annotations

import logging
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import redis

from srh_core.sweep.progress import SweepProgress, summary_text
from srh_core.sweep.runner import BackendUnavailable, SweepRunner, is_over
from srh_core.sweep.spec import SweepSpec, cells
from srh_workers.sweeps.backend import CelerySweepBackend
from srh_workers.sweeps.control import materialize
from srh_workers.sweeps.store import (
    SWEEPS_ACTIVE,
    Lease,
    LeaseLost,
    RedisSweepState,
    SweepRecord,
    active_sweeps,
)

logger = logging.getLogger("srh.workers.sweeps")
LOG_EVERY_FAILURES = 10

#: End the sweep only if nothing was submitted or asked since the coordinator looked.
_END = """
local generation = redis.call('HGET', KEYS[1], 'generation') or ''
local control = redis.call('HGET', KEYS[1], 'control') or ''
if generation ~= ARGV[2] or control ~= ARGV[3] then return 0 end
redis.call('SREM', KEYS[2], ARGV[1])
redis.call('HSET', KEYS[1], 'status', ARGV[4], 'finished_at', ARGV[5], 'updated_at', ARGV[5])
if redis.call('GET', KEYS[3]) == ARGV[6] then redis.call('DEL', KEYS[3]) end
return 1
"""


class _Held:
    """A sweep this coordinator drives: its runner, for the generation it was built for."""

    def __init__(self, runner: SweepRunner, generation: int) -> None:
        self.runner = runner
        self.generation = generation


class SweepCoordinator:
    """Holds sweep leases and ticks their runners (see the module docstring).

    Args:
        client: Redis of the cluster.
        send: Enqueues one action (the app's ``send_task``).
        owner: This coordinator's name in the leases (worker host name and pid).
        interval: Seconds between two looks.
        lease_seconds: Lease lifetime without renewal.
        inputs_root: Where sweeps' files are copied for their cells (a temporary
            directory by default).
        on_finished: Called with ``(entry, spec)`` when a cell's run has finished
            (the artifacts' judgement, metrics).
    """

    def __init__(self, client: redis.Redis, send: Callable[[Any], Any], owner: str, *,
                 interval: float = 1.0, lease_seconds: float = 15.0,
                 inputs_root: Path | None = None,
                 on_finished: Callable[[dict[str, Any], SweepSpec], None] | None = None) -> None:
        self.client = client
        self.send = send
        self.owner = owner
        self.interval = interval
        self.lease_ms = max(1, int(lease_seconds * 1000))
        self.inputs_root = inputs_root or Path(tempfile.gettempdir())
        self.on_finished = on_finished
        self._held: dict[str, _Held] = {}
        self._end = client.register_script(_END)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # ---------------------------------------------------------------- looks
    def check(self) -> list[str]:
        """One look at every active sweep; returns the sweeps this coordinator ticked."""
        ticked = []
        for name in active_sweeps(self.client):
            try:
                if self.coordinate(name):
                    ticked.append(name)
            except LeaseLost as lost:
                logger.warning("%s; leaving it to its new coordinator", lost)
                self._held.pop(name, None)
            except BackendUnavailable as error:
                logger.warning("sweep %s: the cluster is unreachable (%s); next look in "
                               "%g s", name, error, self.interval)
        for name in list(self._held):  # ended, or taken by another coordinator
            if name not in ticked:
                self._held.pop(name, None)
        return ticked

    def coordinate(self, name: str) -> bool:
        """One tick of ``name`` if this coordinator holds (or takes) its lease."""
        record = SweepRecord(self.client, name)
        lease = Lease(record, self.owner, self.lease_ms)
        taken = lease.hold()
        if not taken:
            return False
        meta = record.meta()
        if not meta.get("spec"):  # deleted under us
            self.client.srem(SWEEPS_ACTIVE, name)
            lease.release()
            return False
        generation = int(meta.get("generation") or 0)
        held = self._held.get(name)
        if held is None or taken == 2 or held.generation != generation:
            held = self._build(record, meta, generation, taken == 2)
            if held is None:
                return False
            self._held[name] = held
        runner = held.runner
        control = meta.get("control") or ""
        status = runner.tick()
        runner.progress.update(runner.state, status, runner.spec.max_parallel)
        record.client.hset(record.meta_key, mapping={"status": status, "owner": self.owner,
                                                     "updated_at": time.time()})
        if is_over(status, runner.state):
            self._finish(record, held, generation, control, status)
        return True

    def _build(self, record: SweepRecord, meta: dict[str, str], generation: int,
               takeover: bool) -> _Held | None:
        name = record.name
        try:
            spec = SweepSpec.model_validate_json(meta["spec"])
            spec = materialize(spec, record.inputs(), self.inputs_root)
            backend = CelerySweepBackend(self.client, self.send)
            if self.on_finished is not None:
                backend.finished = self.on_finished  # type: ignore[attr-defined]
            runner = SweepRunner(
                spec, None, backend,
                progress=SweepProgress(name, len(cells(spec)), line=logger.info),
                state=RedisSweepState(record, self.owner, self.lease_ms))
        except (ValueError, OSError, LookupError) as error:
            self._fail(record, f"cannot read the sweep: {type(error).__name__}: {error}")
            return None
        except Exception as error:  # noqa: BLE001 - a ConfigurationError from the suite
            if isinstance(error, redis.exceptions.RedisError):
                raise
            self._fail(record, f"cannot prepare the sweep: {type(error).__name__}: {error}")
            return None
        if int(meta.get("applied") or 0) < generation:
            runner.reopen()
            record.client.hset(record.meta_key, "applied", generation)
            logger.info("sweep %s: submission %d applied (%d cells)", name, generation,
                        len(runner.state), extra={"event": "sweep_submitted", "sweep": name})
        elif takeover:
            logger.warning("sweep %s: taken over by %s (its coordinator's lease expired)",
                           name, self.owner, extra={"event": "sweep_takeover", "sweep": name})
        return _Held(runner, generation)

    def _fail(self, record: SweepRecord, reason: str) -> None:
        logger.error("sweep %s failed: %s", record.name, reason,
                     extra={"event": "sweep_failed", "sweep": record.name})
        now = time.time()
        pipe = record.client.pipeline(transaction=True)
        pipe.hset(record.meta_key, mapping={"error": reason, "status": "failed",
                                            "finished_at": now, "updated_at": now})
        pipe.srem(SWEEPS_ACTIVE, record.name)
        pipe.execute()
        Lease(record, self.owner, self.lease_ms).release()

    def _finish(self, record: SweepRecord, held: _Held, generation: int, control: str,
                status: str) -> None:
        ended = self._end(keys=[record.meta_key, SWEEPS_ACTIVE, record.lease_key],
                          args=[record.name, str(generation), control, status, time.time(),
                                self.owner])
        if ended:
            self._held.pop(record.name, None)
            logger.info(summary_text(record.name, held.runner.state, status,
                                     time.time() - float(record.meta().get("submitted_at")
                                                         or time.time())),
                        extra={"event": "sweep_finished", "sweep": record.name,
                               "status": status})

    # ---------------------------------------------------------------- thread
    def start(self) -> SweepCoordinator:
        """Start the looking thread (a daemon: it never keeps a worker alive)."""
        self._thread = threading.Thread(target=self._loop, name="srh-sweeps", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop looking and give the held leases back, so another worker goes on at once."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
        for name in list(self._held):
            try:
                Lease(SweepRecord(self.client, name), self.owner, self.lease_ms).release()
            except redis.exceptions.RedisError:
                pass
        self._held.clear()

    def _loop(self) -> None:
        failures = 0
        while not self._stop.wait(self.interval):
            try:
                self.check()
                failures = 0
            except redis.exceptions.RedisError as error:
                failures += 1
                if failures == 1 or failures % LOG_EVERY_FAILURES == 0:
                    logger.warning("sweep coordinator: Redis unreachable (%s); %d look(s) "
                                   "failed", error, failures)
            except Exception:  # noqa: BLE001 - a bug must not end the thread silently
                logger.exception("sweep coordinator: a look failed")


__all__ = ["SweepCoordinator"]

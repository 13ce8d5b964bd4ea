"""srh_workers: the SRHarness search on Celery + Redis.

The same agent loop as the embedded runtime (``SRAgent``'s step functions,
the rules of :mod:`srh_core.agent.outcome`), cut into short, idempotent
tasks: each (R, C) branch is a chain of step tasks on the ``branches``
queue, the K samples of a step fan out to the ``tools`` queue, and Redis
holds the run, so the submitter may exit and workers may die without losing
anything. Runs whose steps are too cheap to distribute (the offline model)
run as one chunked task instead (setting ``granularity``).

Layout:

- :mod:`srh_workers.store`: the key schema, the Lua scripts, and
  :class:`RedisRunStore`, the one class that reads and writes a run in Redis;
- :mod:`srh_workers.flow`: task names, the worker's view of a run, the task bodies
  and the Celery tasks;
- :mod:`srh_workers.app`, :mod:`srh_workers.config`, :mod:`srh_workers.reliability`:
  the Celery app, its settings (``SRH_*``) and the delivery cap and retries;
- :mod:`srh_workers.shutdown`: a stopping worker's bound (tasks still running
  after ``SRH_SHUTDOWN_GRACE`` are handed back to the broker);
- :mod:`srh_workers.submit`, :mod:`srh_workers.sweeps`: submitting and reading runs,
  the sweep backend;
- :mod:`srh_workers.observability`: structured logs and Prometheus metrics;
- :mod:`srh_workers.cli`: ``srh worker``, ``status``,
  ``result``, ``cancel``, ``kick`` and the ``celery`` backends of ``run`` and ``sweep``.

The names below are imported on first use, so ``import srh_workers`` is cheap.
"""

from __future__ import annotations

from srh_engine.lazy import lazy_exports

_EXPORTS = {
    "RedisRunStore": "srh_workers.store",
    "RunKeys": "srh_workers.store",
    "RunSpec": "srh_workers.spec",
    "WorkerRunView": "srh_workers.flow.run_view",
    "resolve_granularity": "srh_workers.flow.run_view",
    "make_app": "srh_workers.app",
    "get_app": "srh_workers.app",
    "WorkerSettings": "srh_workers.config",
    "submit_run": "srh_workers.submit",
    "run_status": "srh_workers.submit",
    "run_result": "srh_workers.submit",
    "wait_for_result": "srh_workers.submit",
    "cancel_run": "srh_workers.submit",
    "kick_run": "srh_workers.submit",
    "list_runs": "srh_workers.submit",
    "refresh_run_data": "srh_workers.submit",
    "CelerySweepBackend": "srh_workers.sweeps",
    "AgentBuildError": "srh_workers.errors",
    "PoisonTaskError": "srh_workers.errors",
    "TransientTaskError": "srh_workers.errors",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

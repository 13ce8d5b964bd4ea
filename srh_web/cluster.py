"""The only module of srh_web that reads Redis or asks Celery: runs, workers, queues.

Everything the workbench shows of the cluster comes through
:class:`ClusterSource`, in the same shapes :class:`~srh_web.run_reader.RunReader`
gives for run directories (see :mod:`srh_web.views`), so rewiring the
workers' key schema means changing this module alone. Reads use
``srh_workers``' own readers (``list_runs``, ``run_status``, the candidate
store, ``queue_depths``). The one write is a command to an interactive run,
through its :class:`~srh_workers.control.RedisControlChannel` (which applies
it in Redis and re-sends the steps a release lets go through the broker);
the run's live events come from the same channel.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import wraps
from typing import Any, TypeVar

from srh_web import views
from srh_web.errors import ClusterUnavailableError

logger = logging.getLogger("srh.web")

RECENT_RUNS = 50
INSPECT_TIMEOUT_SECONDS = 1.0
Method = TypeVar("Method", bound=Callable[..., Any])


@contextmanager
def _redis_errors(url: str) -> Iterator[None]:
    import redis

    try:
        yield
    except redis.exceptions.RedisError as error:
        raise ClusterUnavailableError(f"Redis at {_redacted(url)} did not answer: {error}") \
            from error


def _reads_redis(method: Method) -> Method:
    """Turn a Redis failure inside ``method`` into :class:`ClusterUnavailableError`."""
    @wraps(method)
    def wrapper(self: ClusterSource, *args: Any, **kwargs: Any) -> Any:
        with _redis_errors(self.redis_url):
            return method(self, *args, **kwargs)
    return wrapper  # type: ignore[return-value]


class ClusterSource:
    """Read-only view of one Redis (store and broker) and the Celery workers on it.

    Args:
        redis_url: ``redis://`` URL of the run store, also the broker.
    """

    def __init__(self, redis_url: str) -> None:
        from srh_workers.store.client import redis_client

        self.redis_url = redis_url
        self.client = redis_client(redis_url)
        self._app: Any = None

    # ----------------------------------------------------------------- runs
    @_reads_redis
    def run_ids(self) -> list[str]:
        from srh_workers.submit import list_runs

        return list_runs(self.client, RECENT_RUNS)

    @_reads_redis
    def has_run(self, run_id: str) -> bool:
        from srh_workers.store import RedisRunStore

        return RedisRunStore(self.client, run_id, register=False).spec_json() is not None

    def listing(self, run_id: str) -> dict[str, Any]:
        from srh_workers.submit import run_status

        try:
            status = run_status(self.client, run_id)
            control = self.control(run_id)
        except Exception as error:  # an expired or half-written run is listed, not fatal
            return {"run_id": run_id, "source": "redis", "status": "unknown",
                    "error": str(error), "nodes": 0}
        return {"run_id": run_id, "source": "redis", "status": status["status"],
                "nodes": status["nodes"], "max_nodes": status["max_nodes"],
                "best_formula": status["best_formula"],
                "elapsed_seconds": status["elapsed_seconds"], "updated_at": None,
                "cost": None, "interactive": control is not None, "path": None,
                "interaction_state": None if control is None
                else control.get("interaction_state")}

    @_reads_redis
    def summary(self, run_id: str) -> dict[str, Any]:
        from srh_workers.spec import load_spec
        from srh_workers.store import RedisRunStore
        from srh_workers.submit import run_status

        status = run_status(self.client, run_id)
        store = RedisRunStore.open(self.client, run_id)
        spec = load_spec(store)
        settings = views.settings_view(spec.settings)
        records = store.records(include_detail=True)
        front = views.front_view(store.candidates(), settings["ranking_metric"],
                                 settings["larger_is_better"], settings["selection"])
        return {"run_id": run_id, "source": "redis", "path": None, "status": status["status"],
                "stop_reason": status["stop_reason"], "settings": settings,
                "nodes": status["nodes"], "elapsed_seconds": status["elapsed_seconds"],
                "updated_at": None, **views.usage_totals(records), "best": front["best"],
                "front": front, "branches": status["branches"], "restart": None,
                "problem": {"description": spec.description, "target": spec.target,
                            "features": spec.features},
                "control": self.control(run_id), "model_requests": status["model_requests"]}

    @_reads_redis
    def nodes(self, run_id: str, after: int = 0) -> dict[str, Any]:
        from srh_workers.store import RedisRunStore

        records = RedisRunStore.open(self.client, run_id).records(include_detail=True)
        return {"total": len(records), "nodes": [views.node_summary(r) for r in records[after:]]}

    @_reads_redis
    def node(self, run_id: str, node_id: str) -> dict[str, Any] | None:
        from srh_workers.store import RedisRunStore

        store = RedisRunStore.open(self.client, run_id)
        record = store.node_record(node_id)

        def prompt_of(other: str) -> list[Any] | None:
            found = store.node_record(other)
            return None if found is None else (found.get("detail") or {}).get("prompt")

        return None if record is None else views.node_detail(record, prompt_of)

    # ------------------------------------------------------------- controls
    def channel(self, run_id: str) -> Any:
        """The control channel of an interactive run (None for a run that takes no commands).

        Commands sent through it are applied in Redis at once; a release
        re-sends the run's parked steps through this Redis as the broker.
        """
        from srh_workers.control.channel import RedisControlChannel
        from srh_workers.flow.tasks import send_action

        with _redis_errors(self.redis_url):
            channel = RedisControlChannel(self.client, run_id,
                                          lambda action: send_action(self._celery(), action))
            return channel if channel.load_state() is not None else None

    @_reads_redis
    def control(self, run_id: str) -> dict[str, Any] | None:
        """The control status of an interactive run (None for a run that takes no commands)."""
        from srh_workers.control.channel import RedisControlChannel

        return RedisControlChannel(self.client, run_id).read_status()

    # --------------------------------------------------------------- sweeps
    @_reads_redis
    def sweep_names(self) -> list[str]:
        from srh_workers.sweeps.store import list_sweeps

        return list_sweeps(self.client)

    @_reads_redis
    def has_sweep(self, name: str) -> bool:
        from srh_workers.sweeps.store import SweepRecord

        return SweepRecord(self.client, name).exists()

    def send(self, action: Any) -> None:
        """Enqueue one action through this Redis as the broker."""
        from srh_workers.flow.tasks import send_action

        send_action(self._celery(), action)

    # -------------------------------------------------------------- cluster
    @_reads_redis
    def overview(self) -> dict[str, Any]:
        """Workers that answer a ping (with their tasks in flight), queue depths, live runs."""
        from srh_workers.config import QUEUES
        from srh_workers.observability.metrics import queue_depths

        self.client.ping()  # a Redis that does not answer fails fast, before Celery retries
        report: dict[str, Any] = {"redis_url": _redacted(self.redis_url), "errors": []}
        try:
            depths, unacked = queue_depths(self.redis_url, QUEUES)
            report["queues"] = [{"name": name, "depth": depth} for name, depth in depths.items()]
            report["unacked"] = unacked
        except Exception as error:  # show what can be shown
            report["queues"], report["unacked"] = [], None
            report["errors"].append(f"queues: {error}")
        report["workers"] = self._workers(report["errors"])
        runs = [self.listing(run_id) for run_id in self.run_ids()]
        report["runs_in_flight"] = [run for run in runs if run["status"] == "running"]
        report["recent_runs"] = len(runs)
        return report

    def _workers(self, errors: list[str]) -> list[dict[str, Any]]:
        try:
            inspect = self._celery().control.inspect(timeout=INSPECT_TIMEOUT_SECONDS)
            replies = inspect.ping() or {}
            active = inspect.active() or {} if replies else {}
        except Exception as error:
            errors.append(f"workers: {error}")
            return []
        return [{"name": name, "active": [_task_view(task) for task in active.get(name) or []]}
                for name in sorted(replies)]

    def _celery(self) -> Any:
        if self._app is None:
            from srh_workers.app import make_app
            from srh_workers.config import WorkerSettings

            self._app = make_app(WorkerSettings(broker_url=self.redis_url))
        return self._app


def _task_view(task: dict[str, Any]) -> dict[str, Any]:
    args = task.get("args") or []
    return {"name": task.get("name"), "id": task.get("id"),
            "run_id": args[0] if args and isinstance(args[0], str) else None}


def _redacted(url: str) -> str:
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))

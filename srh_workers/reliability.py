"""Delivery cap and transient-error retries: the task base class of the SRHarness app.

Why a cap: tasks are acknowledged late (``task_acks_late``) and re-queued
when their worker dies (``task_reject_on_worker_lost``), so nothing is lost
when a worker crashes. A task that *itself* kills its worker (a segfaulting
extension, the OOM killer, ``os._exit``) would then loop forever. Celery has
no per-message delivery count on Redis, so :class:`SRHTask` keeps one:

- before the body runs, it increments ``srh:{<run_id>}:delivery:<task_id>:<retries>``
  (``INCR`` with a TTL, :data:`DELIVERY_TTL_SECONDS`); a delivery counts even
  when the worker dies a microsecond later;
- on delivery ``max_deliveries + 1`` the body does **not** run: the task
  writes a :class:`PoisonRecord` to the run's ``srh:{<run_id>}:poison`` hash
  (task id -> JSON; the key is registered in the run's ``keys`` set so it
  expires with the run), logs it, calls :meth:`SRHTask.on_poison` and raises
  :class:`PoisonTaskError`. The task ends FAILURE in the result backend and
  its message is acknowledged (``task_acks_on_failure``), so it
  stops looping.

Retries (``self.retry`` or a transient error) are new messages with the same
task id and ``retries + 1``; they count separately, so a task that was retried
four times after Redis blips is not mistaken for poison.

How a task uses it: the app's ``task_cls`` is :class:`SRHTask`, so every
``@app.task`` gets the guard, the log context and the retries with no extra
line. A task's run id is its ``run_id`` parameter; its coordinate its ``R``,
``C``, ``L``, ``K`` parameters (tasks without a run id count under
:data:`WORKERS_SCOPE`)::

    @app.task(name="srh.tool.calls")           # SRHTask is the default base
    def tool_calls(run_id: str, R: int, C: int, L: int, K: int) -> dict: ...

Transient errors (:func:`is_transient`: Redis connection/timeouts, a Redis
refusing writes (``maxmemory``, a read-only replica), a broker
``OperationalError``, a model request that failed for a retryable reason,
:class:`TransientTaskError`) are retried with full-jitter exponential backoff
capped at ``SRH_RETRY_BACKOFF_MAX`` and at most ``SRH_TASK_MAX_RETRIES``
times; every other error fails the task at once. A retry that cannot be
published (the broker refuses writes: the outage the retry was for) puts the
message back instead: Celery would reject it without requeue and the call
would be lost.

Failure handling never keeps a message (:class:`ReleasingRequest`): Celery's
worker writes a failure to the result backend before it rejects or acknowledges
the message; when that write raised (Redis at ``maxmemory``), the message kept
its prefetch slot and a worker with prefetch 1 never fetched again.
"""

from __future__ import annotations

import json
import logging
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import redis
from celery import Task
from celery.exceptions import Reject, Retry
from celery.worker.request import Request
from kombu.exceptions import OperationalError

from srh_core.errors import ModelRequestError
from srh_workers.config import TASK_KINDS, TaskKind, WorkerSettings
from srh_workers.errors import PoisonTaskError, TransientTaskError
from srh_workers.observability.logs import TaskContext, bound_context, task_context
from srh_workers.store import RedisRunStore
from srh_workers.store.client import redis_client

if TYPE_CHECKING:
    from celery import Celery

DELIVERY_TTL_SECONDS = 24 * 3600
WORKERS_SCOPE = "_workers"
POISON_KEY_NAME = "poison"
RETRY_BASE_DELAY_SECONDS = 1.0
MAX_ARGS_SUMMARY_CHARS = 1_000
logger = logging.getLogger("srh.workers.reliability")

_TRANSIENT_TYPES: tuple[type[BaseException], ...] = (
    redis.exceptions.ConnectionError, redis.exceptions.TimeoutError,
    redis.exceptions.BusyLoadingError, redis.exceptions.ReadOnlyError,
    redis.exceptions.OutOfMemoryError, OperationalError)


def is_transient(error: BaseException) -> bool:
    """Whether ``error`` is worth a retry: an outage or a rate limit, never a wrong input."""
    if isinstance(error, ModelRequestError):
        return error.retryable
    return isinstance(error, _TRANSIENT_TYPES + (TransientTaskError,))


def retry_countdown(retries: int, backoff_max: float, rng: random.Random | None = None) -> float:
    """Seconds to wait before retry number ``retries + 1``: full jitter, capped at backoff_max."""
    ceiling = min(backoff_max, RETRY_BASE_DELAY_SECONDS * 2 ** min(retries, 30))
    return (rng or random).uniform(0.0, ceiling)


@dataclass(frozen=True, slots=True)
class PoisonRecord:
    """What the run's ``poison`` hash says about a task that was failed for looping.

    Attributes:
        run_id: The task's run (:data:`WORKERS_SCOPE` when it has none).
        task_id: Celery task id.
        task_name: Registered task name.
        deliveries: Deliveries counted, including the one that refused to run.
        max_deliveries: The cap in force.
        retries: The task's retry number (deliveries count per retry).
        coordinate: R, C, L, K of the task, when it has them.
        args: JSON summary of the arguments, truncated.
        hostname: Worker node that declared it poison.
        at: Unix time of the declaration.
    """

    run_id: str
    task_id: str
    task_name: str
    deliveries: int
    max_deliveries: int
    retries: int = 0
    coordinate: dict[str, int] = field(default_factory=dict)
    args: str = ""
    hostname: str = ""
    at: float = 0.0

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str | bytes) -> PoisonRecord:
        return cls(**json.loads(text))


def _args_summary(args: Sequence[Any], kwargs: Mapping[str, Any]) -> str:
    text = json.dumps({"args": list(args), "kwargs": dict(kwargs)}, default=repr,
                      sort_keys=True)
    return text if len(text) <= MAX_ARGS_SUMMARY_CHARS else text[:MAX_ARGS_SUMMARY_CHARS] + "..."


@dataclass(frozen=True, slots=True)
class DeliveryCounter:
    """Counts deliveries per (task id, retry) in Redis and records poison tasks.

    Args:
        client: Redis of the candidate store (``SRH_REDIS_URL``).
        max_deliveries: Deliveries allowed before a task is poison.
        ttl_seconds: Lifetime of a counter (it only has to outlive the redeliveries).
    """

    client: redis.Redis
    max_deliveries: int
    ttl_seconds: int = DELIVERY_TTL_SECONDS

    def record(self, scope: str, task_id: str, retries: int = 0) -> int:
        """Count one delivery and return the count so far (1 on the first delivery)."""
        store = RedisRunStore(self.client, scope, register=False)
        return store.delivery.count_delivery(task_id, retries, self.ttl_seconds)

    def is_poison(self, deliveries: int) -> bool:
        return deliveries > self.max_deliveries

    def report(self, record: PoisonRecord) -> None:
        """Write ``record`` to the run's poison hash (idempotent by task id)."""
        RedisRunStore(self.client, record.run_id, register=False).delivery.report_poison(
            record.task_id, record.to_json())


def poison_records(client: redis.Redis, run_id: str) -> list[PoisonRecord]:
    """The poison tasks of a run, oldest first (for ``srh status``)."""
    values = RedisRunStore(client, run_id, register=False).delivery.poison_reports()
    return sorted((PoisonRecord.from_json(value) for value in values), key=lambda r: r.at)


def task_kind(name: str | None) -> TaskKind | None:
    """"tool" or "branch" from a task name's prefix; None for any other task."""
    for kind, (prefix, _queue) in TASK_KINDS.items():
        if name and name.startswith(prefix):
            return kind
    return None


def app_settings(app: Celery) -> WorkerSettings:
    """The settings an app was made with (``make_app``), else the environment's."""
    settings = getattr(app, "srh_settings", None)
    return settings if isinstance(settings, WorkerSettings) else WorkerSettings.from_env()


class ReleasingRequest(Request):
    """Celery's worker-side request whose failure handling always lets go of the message.

    The worker's parent process runs :meth:`on_failure` and :meth:`on_timeout`
    as pool callbacks, and both store the failure in the result backend
    *before* they reject or acknowledge the message. When that write raises
    (Redis at ``maxmemory`` refuses it), billiard logs "Pool callback raised
    exception" and the message is neither acknowledged nor rejected: it keeps
    its prefetch slot, and a worker with ``--prefetch-multiplier 1`` never
    fetches again (alive, idle, its queue growing). Here a handler that raised
    before letting go re-queues the message (every task is idempotent and the
    delivery cap bounds a loop); the error is still raised for billiard to log.
    """

    def on_failure(self, exc_info: Any, send_failed_event: bool = True,
                   return_ok: bool = False) -> Any:
        try:
            return super().on_failure(exc_info, send_failed_event=send_failed_event,
                                      return_ok=return_ok)
        except BaseException as error:
            self._let_go(error)
            raise

    def on_timeout(self, soft: bool, timeout: float) -> Any:
        try:
            return super().on_timeout(soft, timeout)
        except BaseException as error:
            self._let_go(error)
            raise

    def _let_go(self, error: BaseException) -> None:
        if self.acknowledged:
            return
        logger.warning("the failure handler of %s[%s] raised %r: its message is re-queued",
                       self.task_name, self.task_id, error,
                       extra={"event": "message_released"})
        try:
            self.reject(requeue=True)
        except Exception:  # a broken channel is the consumer's to reconnect
            logger.exception("could not re-queue %s[%s]", self.task_name, self.task_id)


class SRHTask(Task):
    """Base of every SRHarness task: delivery cap, log context, transient retries, limits.

    Subclass it (``base=``) to override :meth:`on_poison`, e.g. to mark a
    branch failed so its run can finish.
    """

    Request = f"{__name__}:ReleasingRequest"

    @classmethod
    def bind(cls, app: Celery) -> Celery:
        # Runs before Celery copies task_time_limit into unset limits, so a
        # limit given to the decorator wins and an unset one gets its kind's.
        settings = getattr(app, "srh_settings", None)
        kind = task_kind(getattr(cls, "name", None))
        if isinstance(settings, WorkerSettings) and kind is not None:
            limits = settings.limits(kind)
            if cls.time_limit is None:
                cls.time_limit = limits.hard
            if cls.soft_time_limit is None:
                cls.soft_time_limit = limits.soft
        return super().bind(app)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        request = self.request
        if request.called_directly:  # a plain function call: no message, nothing to guard
            return super().__call__(*args, **kwargs)
        request.srh_started = time.monotonic()
        context = task_context(self, args, kwargs)
        with bound_context(context):
            try:
                if not request.is_eager:
                    self._guard_delivery(context, args, kwargs)
                return self.run(*args, **kwargs)
            except (Retry, PoisonTaskError):
                raise
            except Exception as error:
                if request.is_eager or not is_transient(error):
                    raise
                settings = app_settings(self.app)
                countdown = retry_countdown(request.retries or 0, settings.retry_backoff_max)
                logger.warning("transient error, retrying in %.1f s: %r", countdown, error,
                               extra={"event": "retry", "retries": request.retries})
                try:
                    raise self.retry(exc=error, countdown=countdown,
                                     max_retries=settings.max_retries) from error
                except Reject as refused:
                    # Celery rejects without requeue when it cannot publish the retry
                    if refused.requeue:
                        raise
                    logger.warning("the retry could not be published (%r): the message is "
                                   "put back instead", refused.reason,
                                   extra={"event": "retry_requeued"})
                    raise Reject(refused.reason, requeue=True) from error

    def _guard_delivery(self, context: TaskContext, args: Sequence[Any],
                        kwargs: Mapping[str, Any]) -> None:
        settings = app_settings(self.app)
        counter = DeliveryCounter(redis_client(str(settings.redis_url)), settings.max_deliveries)
        scope = context.run_id or WORKERS_SCOPE
        request = self.request
        deliveries = counter.record(scope, str(request.id), int(request.retries or 0))
        if not counter.is_poison(deliveries):
            return
        record = PoisonRecord(
            run_id=scope, task_id=str(request.id), task_name=str(self.name),
            deliveries=deliveries, max_deliveries=settings.max_deliveries,
            retries=int(request.retries or 0), coordinate=context.coordinate(),
            args=_args_summary(args, kwargs), hostname=str(request.hostname or ""),
            at=time.time())
        counter.report(record)
        logger.error("poison task %s[%s]: delivered %d times (cap %d); failed without running",
                     record.task_name, record.task_id, deliveries, settings.max_deliveries,
                     extra={"event": "poison", "deliveries": deliveries})
        try:
            self.on_poison(record)
        except Exception:  # the hook must not turn a poison task into a loop again
            logger.exception("on_poison hook of %s failed", self.name)
        raise PoisonTaskError(
            f"Task {record.task_name}[{record.task_id}] was delivered {deliveries} times, more "
            f"than SRH_MAX_DELIVERIES={settings.max_deliveries}: its worker died each time, "
            f"so it is failed without running (see the run's poison records).",
            task_id=record.task_id, task_name=record.task_name, deliveries=deliveries)

    def on_poison(self, record: PoisonRecord) -> None:
        """Called once the task is declared poison, before it fails (default: nothing).

        Override it to tell the run, e.g. mark the branch failed so the
        restart barrier does not wait for it forever.
        """

    def time_budget(self) -> float | None:
        """Seconds left before this execution's soft time limit (None without a limit).

        The threads pool does not enforce time limits, so branch tasks pass
        this to blocking calls (e.g. as the model request timeout).
        """
        request = self.request
        soft = (request.timelimit or (None, None))[1] or self.soft_time_limit
        started = getattr(request, "srh_started", None)
        if soft is None or started is None:
            return None
        return max(0.0, float(soft) - (time.monotonic() - started))


__all__ = [
    "DELIVERY_TTL_SECONDS", "WORKERS_SCOPE", "DeliveryCounter", "PoisonRecord", "PoisonTaskError",
    "ReleasingRequest",
    "SRHTask", "TransientTaskError", "app_settings", "is_transient", "poison_records",
    "retry_countdown", "task_kind",
]

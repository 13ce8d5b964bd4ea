"""Prometheus metrics of the workers and the broker's queues.

Metrics (prometheus-client, the optional ``metrics`` extra), all prefixed ``srh_``:

- ``srh_tasks_total{task, state}``: executions by final state (success,
  failure, retry, poison, ...), counted in the process that ran the task;
- ``srh_task_seconds{task}``: execution time histogram (tool latency);
- ``srh_queue_depth{queue}``: messages waiting in each queue, read from the
  broker at scrape time (Redis: ``LLEN`` of the queue's list and of its
  priority lists; RabbitMQ: a passive ``queue_declare``);
- ``srh_unacked_messages`` (Redis): messages delivered and not yet acked;
- ``srh_broker_up``: whether the last scrape reached the broker.

Prefork children count tasks, the parent serves the endpoint, so a worker
with ``SRH_METRICS_PORT`` uses prometheus-client's multiprocess mode: the
parent points ``PROMETHEUS_MULTIPROC_DIR`` at an empty directory (its own, or
a fresh temporary one) before any metric exists, children write memory-mapped
files there, and the endpoint sums them (counts of recycled children are
kept). ``srh metrics`` (:func:`run_exporter`) serves the queue gauges alone,
without a worker: scrape one exporter for queue depth, every worker for tasks.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from srh_workers.config import broker_kind

if TYPE_CHECKING:
    from celery import Task
    from prometheus_client import CollectorRegistry
    from prometheus_client.registry import Collector

    from srh_core.api.gate import RequestOutcome

LATENCY_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 45.0, 60.0,
                   90.0, 120.0)
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
BROKER_TIMEOUT_SECONDS = 5.0
# The logger's name predates this module; log configuration may already select it.
logger = logging.getLogger("srh.workers.observability")


# --------------------------------------------------------------------- metrics
class TaskMetrics:
    """Task counters and latency histogram.

    Args:
        registry: Where to register them; None in multiprocess mode (the
            endpoint reads the children's files instead).
    """

    def __init__(self, registry: CollectorRegistry | None) -> None:
        from prometheus_client import Counter, Histogram

        self.tasks = Counter("srh_tasks", "Task executions by final state.", ["task", "state"],
                             registry=registry)
        self.seconds = Histogram("srh_task_seconds", "Task execution time in seconds.",
                                 ["task"], buckets=LATENCY_BUCKETS, registry=registry)

    def observe(self, task: str, state: str, seconds: float | None) -> None:
        self.tasks.labels(task=task, state=state).inc()
        if seconds is not None:
            self.seconds.labels(task=task).observe(seconds)


def redis_queue_keys(queue: str) -> list[str]:
    """The Redis lists holding ``queue``'s messages: the queue and its priority lists."""
    from kombu.transport.redis import PRIORITY_STEPS, Channel

    return [queue, *(f"{queue}{Channel.sep}{step}" for step in PRIORITY_STEPS if step)]


def _redis_depths(url: str, queues: Sequence[str]) -> tuple[dict[str, int], int]:
    import redis

    client = redis.Redis.from_url(url, socket_connect_timeout=BROKER_TIMEOUT_SECONDS,
                                  socket_timeout=BROKER_TIMEOUT_SECONDS)
    try:
        pipe = client.pipeline(transaction=False)
        for queue in queues:
            for key in redis_queue_keys(queue):
                pipe.llen(key)
        pipe.hlen("unacked")  # kombu's default unacked_key
        sizes = pipe.execute()
    finally:
        client.close()
    per_queue = len(redis_queue_keys("q"))
    depths = {queue: sum(sizes[i * per_queue:(i + 1) * per_queue])
              for i, queue in enumerate(queues)}
    return depths, int(sizes[-1])


def _amqp_depths(url: str, queues: Sequence[str]) -> dict[str, int]:
    from kombu import Connection

    depths = {}
    with Connection(url, connect_timeout=BROKER_TIMEOUT_SECONDS) as connection:
        for queue in queues:
            channel = connection.channel()
            try:
                depths[queue] = int(channel.queue_declare(queue=queue, passive=True)
                                    .message_count)
            except connection.channel_errors:  # not declared yet: nothing can wait in it
                depths[queue] = 0
            finally:
                with contextlib.suppress(Exception):
                    channel.close()
    return depths


def queue_depths(broker_url: str, queues: Sequence[str]) -> tuple[dict[str, int], int | None]:
    """Messages waiting per queue, and unacked messages (Redis only, else None)."""
    kind = broker_kind(broker_url)
    if kind == "redis":
        return _redis_depths(broker_url, queues)
    if kind == "amqp":
        return _amqp_depths(broker_url, queues), None
    return dict.fromkeys(queues, 0), None


class QueueDepthCollector:
    """A Prometheus collector reading the queue depths from the broker at every scrape."""

    def __init__(self, broker_url: str, queues: Sequence[str]) -> None:
        self.broker_url, self.queues = broker_url, tuple(queues)

    def collect(self) -> Iterable[Any]:
        from prometheus_client.core import GaugeMetricFamily

        depth = GaugeMetricFamily("srh_queue_depth", "Messages waiting in a queue.",
                                  labels=["queue"])
        up = GaugeMetricFamily("srh_broker_up", "1 when the last scrape reached the broker.")
        try:
            depths, unacked = queue_depths(self.broker_url, self.queues)
        except Exception as error:  # a scrape reports the outage, it does not fail
            logger.warning("queue depth scrape failed: %r", error)
            up.add_metric([], 0)
            return [up]
        for queue, size in depths.items():
            depth.add_metric([queue], size)
        up.add_metric([], 1)
        families = [depth, up]
        if unacked is not None:
            families.append(GaugeMetricFamily(
                "srh_unacked_messages", "Messages delivered to workers and not yet acked.",
                value=unacked))
        return families


def start_metrics_server(port: int, registry: Collector | CollectorRegistry, *,
                         addr: str = "127.0.0.1") -> tuple[Any, threading.Thread]:
    """Serve ``registry`` in Prometheus text format on ``addr:port`` from a daemon thread.

    Returns:
        The HTTP server (``server.server_port`` is the bound port; call
        ``server.shutdown()`` to stop it) and its thread.
    """
    from prometheus_client import start_http_server

    server, thread = start_http_server(port, addr=addr, registry=registry)
    return server, thread


def exporter_registry(broker_url: str, queues: Sequence[str]) -> CollectorRegistry:
    """A registry with the queue gauges only (the ``srh metrics`` exporter)."""
    from prometheus_client import CollectorRegistry

    registry = CollectorRegistry()
    registry.register(QueueDepthCollector(broker_url, queues))  # type: ignore[arg-type]
    return registry


def run_exporter(broker_url: str, queues: Sequence[str], port: int, *,
                 addr: str = "127.0.0.1", stop: threading.Event | None = None) -> None:
    """Serve the queue gauges until ``stop`` is set (forever without one)."""
    server, _thread = start_metrics_server(port, exporter_registry(broker_url, queues),
                                           addr=addr)
    logger.info("srh metrics exporter on %s:%d for %s", addr, server.server_port,
                ",".join(queues))
    try:
        (stop or threading.Event()).wait()
    finally:
        server.shutdown()


# ------------------------------------------------------------ worker metrics
_worker_metrics: TaskMetrics | None = None
_started: dict[str, float] = {}


def prepare_multiprocess_dir(environ: dict[str, str] | os._Environ[str] = os.environ) -> Path:
    """Point ``PROMETHEUS_MULTIPROC_DIR`` at an empty directory and switch the value class.

    An existing setting is kept (and its stale ``*.db`` files removed, as
    prometheus-client requires between runs); otherwise a new temporary
    directory is made. Must run before the first metric is created.
    """
    directory = Path(environ.get(MULTIPROC_ENV) or tempfile.mkdtemp(prefix="srh-metrics-"))
    directory.mkdir(parents=True, exist_ok=True)
    for stale in directory.glob("*.db"):
        stale.unlink(missing_ok=True)
    environ[MULTIPROC_ENV] = str(directory)
    from prometheus_client import values

    # The value class is chosen when prometheus_client is first imported; if
    # that happened before the variable was set, choose again now.
    if values.ValueClass is values.MutexValue:
        values.ValueClass = values.get_value_class()
    return directory


def start_worker_metrics(port: int, broker_url: str, queues: Sequence[str], *,
                         addr: str = "127.0.0.1", collectors: Sequence[Any] = ()
                         ) -> tuple[Any, threading.Thread]:
    """Enable task metrics in this worker and its future children; serve them with the queues."""
    from prometheus_client import CollectorRegistry
    from prometheus_client.multiprocess import MultiProcessCollector

    global _worker_metrics
    directory = prepare_multiprocess_dir()
    _worker_metrics = TaskMetrics(registry=None)
    enable_model_metrics(registry=None)  # the model requests of this worker's threads
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=str(directory))
    registry.register(QueueDepthCollector(broker_url, queues))  # type: ignore[arg-type]
    for collector in collectors:  # e.g. the sweeps' gauges (observability.sweep_metrics)
        registry.register(collector)
    return start_metrics_server(port, registry, addr=addr)


class ModelMetrics:
    """The model request metrics (prometheus-client; in multiprocess mode on a worker)."""

    def __init__(self, registry: Any = None) -> None:
        from prometheus_client import Counter, Histogram

        self.requests = Counter("srh_model_requests", "Model HTTP requests by outcome.",
                                ["endpoint", "status"], registry=registry)
        self.seconds = Histogram("srh_model_request_seconds", "Model request latency.",
                                 ["endpoint"], buckets=LATENCY_BUCKETS, registry=registry)
        self.tokens = Counter("srh_model_tokens", "Model tokens by direction.",
                              ["endpoint", "direction"], registry=registry)
        self.cost = Counter("srh_model_cost_usd", "Model spend in US dollars (priced models).",
                            ["endpoint"], registry=registry)
        self.waits = Histogram("srh_quota_wait_seconds",
                               "Time model requests waited for the cluster quota, by reason.",
                               ["endpoint", "reason"], buckets=LATENCY_BUCKETS,
                               registry=registry)

    def request(self, endpoint: str, outcome: RequestOutcome) -> None:
        self.requests.labels(endpoint=endpoint, status=outcome.status).inc()
        self.seconds.labels(endpoint=endpoint).observe(outcome.seconds)
        usage = outcome.usage
        if usage is not None:
            self.tokens.labels(endpoint=endpoint, direction="prompt").inc(usage.prompt_tokens)
            self.tokens.labels(endpoint=endpoint, direction="completion").inc(
                usage.completion_tokens)
            if usage.price:
                self.cost.labels(endpoint=endpoint).inc(usage.price)

    def waited(self, endpoint: str, reason: str, seconds: float) -> None:
        self.waits.labels(endpoint=endpoint, reason=reason).observe(seconds)


_metrics: ModelMetrics | None = None
_metrics_lock = threading.Lock()


def enable_model_metrics(registry: Any = None) -> ModelMetrics:
    """Count model requests in this process from now on (the worker's metrics call it)."""
    global _metrics
    with _metrics_lock:
        if _metrics is None:
            _metrics = ModelMetrics(registry)
        return _metrics


def model_metrics() -> ModelMetrics | None:
    """The process's model metrics, None when metrics are off."""
    return _metrics



def on_task_prerun(task_id: str | None = None, **_: Any) -> None:
    if _worker_metrics is not None and task_id:
        _started[task_id] = time.monotonic()


def on_task_postrun(task_id: str | None = None, task: Task | None = None,
                    state: str | None = None, retval: Any = None, **_: Any) -> None:
    if _worker_metrics is None or task is None:
        return
    started = _started.pop(task_id, None) if task_id else None
    label = (state or "unknown").lower()
    if label == "failure" and getattr(type(retval), "__name__", "") == "PoisonTaskError":
        label = "poison"
    seconds = None if started is None else time.monotonic() - started
    _worker_metrics.observe(str(task.name), label, seconds)


__all__ = [
    "LATENCY_BUCKETS", "MULTIPROC_ENV", "ModelMetrics", "QueueDepthCollector", "TaskMetrics",
    "enable_model_metrics", "model_metrics",
    "exporter_registry", "on_task_postrun", "on_task_prerun", "prepare_multiprocess_dir",
    "queue_depths", "redis_queue_keys", "run_exporter", "start_metrics_server",
    "start_worker_metrics",
]

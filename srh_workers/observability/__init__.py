"""Observability of the workers: structured logs and Prometheus metrics, in one namespace.

The two concepts live in their own modules; this package re-exports both:

- :mod:`srh_workers.observability.logs`: the task context (run_id, R, C, L, K, task_id,
  task_name) bound around every task body and copied onto each log record,
  and the JSON / key=value formatters;
- :mod:`srh_workers.observability.metrics`: task counters and latency, queue depth read
  from the broker at scrape time, the worker endpoint (prometheus-client's
  multiprocess mode) and the ``srh metrics`` exporter.
"""

from __future__ import annotations

from srh_workers.observability.logs import (
    COORDINATE_FIELDS,
    EMPTY_CONTEXT,
    TASK_FIELDS,
    ContextFilter,
    JsonFormatter,
    KeyValueFormatter,
    TaskContext,
    bound_context,
    current_context,
    install_log_format,
    log_context,
    make_formatter,
    task_context,
)
from srh_workers.observability.metrics import (
    LATENCY_BUCKETS,
    MULTIPROC_ENV,
    QueueDepthCollector,
    TaskMetrics,
    exporter_registry,
    on_task_postrun,
    on_task_prerun,
    prepare_multiprocess_dir,
    queue_depths,
    redis_queue_keys,
    run_exporter,
    start_metrics_server,
    start_worker_metrics,
)

__all__ = [
    "COORDINATE_FIELDS", "EMPTY_CONTEXT", "LATENCY_BUCKETS", "MULTIPROC_ENV", "TASK_FIELDS",
    "ContextFilter", "JsonFormatter", "KeyValueFormatter", "QueueDepthCollector", "TaskContext",
    "TaskMetrics", "bound_context", "current_context", "exporter_registry", "install_log_format",
    "log_context", "make_formatter", "on_task_postrun", "on_task_prerun",
    "prepare_multiprocess_dir", "queue_depths", "redis_queue_keys", "run_exporter",
    "start_metrics_server", "start_worker_metrics", "task_context",
]

"""The one Celery app of SRHarness: queues, routes and the reliability settings.

``celery -A srh_workers.app worker`` finds :data:`app`, which is made on first
access from the ``SRH_*`` environment (:class:`WorkerSettings`), so importing
this module reads nothing and connects to nothing. Tests and tools build
their own with :func:`make_app`.

Queues: ``branches`` (I/O bound: one short task per refinement step, model
requests; the default queue, so run-level coordination tasks land there
too) and ``tools`` (CPU bound tool calls). Tasks are routed by name:
``srh.tool.*`` -> tools, ``srh.branch.*`` -> branches. No other queue is
created on the fly (``task_create_missing_queues=False``): a task sent to an
unknown queue fails at once instead of waiting forever for a consumer.

Reliability (see ``deploy/README.md`` for the reasons and figures): late
acks, re-queue on worker loss with a delivery cap (:mod:`srh_workers.reliability`),
prefetch 1, soft and hard time limits per task kind, the visibility timeout
in all three places Celery reads it (``broker_transport_options``,
``result_backend_transport_options``, ``visibility_timeout``) and checked
against every task's hard limit when the worker starts, JSON only, events on.
A stopping worker waits ``SRH_SHUTDOWN_GRACE`` seconds for its running tasks,
then hands them back and exits (:mod:`srh_workers.shutdown`).
"""

from __future__ import annotations

import importlib
import logging
import os
import time
from typing import Any

from celery import Celery, signals
from kombu import Exchange, Queue

from srh_core.api.endpoints import EndpointRegistry
from srh_core.errors import ConfigurationError
from srh_workers.config import QUEUES, TASK_KINDS, TOOLS_QUEUE, WorkerSettings
from srh_workers.observability import logs, metrics
from srh_workers.reliability import SRHTask
from srh_workers.shutdown import ShutdownBound

APP_NAME = "srh"
PING_TASKS = ("srh.branch.ping", "srh.tool.ping")
JSON_ONLY = ("json",)
RESULT_BACKEND_MAX_RETRIES = 10
BLAS_THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
EX_CONFIG = 78  # sysexits.h: configuration error (systemd does not restart-loop on it)
#: Imported once when a worker starts, before its pool forks: the first task of a
#: process must not pay seconds of imports inside its time limit.
#: Modules, not packages: the packages load their names on first use.
WARM_MODULES = ("srh_core.agent.sragent", "srh_core.api.openai_api", "srh_core.api.presets",
                "srh_core.api.manual", "srh_core.api.offline", "srh_core.api.router",
                "srh_core.context", "srh_core.tools.catalogue", "srh_engine.search.core",
                "srh_engine.parser", "srh_engine.canonical", "srh_engine.constants",
                "scipy.optimize", "scipy.interpolate", "scipy.special")
OPTIONAL_WARM_MODULES = ("matplotlib.pyplot",)  # the run directory's plot (``plot`` extra)
logger = logging.getLogger("srh.workers.app")


def broker_transport_options(settings: WorkerSettings) -> dict[str, Any]:
    """Transport options: the Redis visibility timeout and a fast unacked-restore sweep."""
    if settings.broker_kind == "redis":
        # kombu sweeps for expired unacked messages every interval x throttle
        # seconds (10 x 10 by default); throttle 1 makes the interval the period.
        return {"visibility_timeout": settings.visibility_timeout,
                "unacked_restore_interval": settings.restore_interval,
                "unacked_restore_throttle": 1}
    if settings.broker_kind == "amqp":
        return {"confirm_publish": True}  # a publish returns once RabbitMQ has the message
    return {}


def _broker_transport(settings: WorkerSettings) -> dict[str, Any]:
    """A redis:// broker uses :mod:`srh_workers.transport` (a full Redis is an outage)."""
    from urllib.parse import urlsplit

    from srh_workers.transport import TRANSPORT_PATH

    if urlsplit(settings.broker_url).scheme == "redis":  # rediss: kombu sets TLS by scheme
        return {"broker_transport": TRANSPORT_PATH}
    return {}


def celery_config(settings: WorkerSettings) -> dict[str, Any]:
    """The Celery configuration of ``settings`` (pure: no I/O)."""
    tool, branch = settings.limits("tool"), settings.limits("branch")
    visibility = settings.visibility_timeout
    return {
        "broker_url": settings.broker_url,
        **_broker_transport(settings),
        "result_backend": settings.result_backend,
        # the visibility timeout, in the three places Celery reads it
        "broker_transport_options": broker_transport_options(settings),
        "result_backend_transport_options": {"visibility_timeout": visibility},
        "visibility_timeout": visibility,
        "broker_connection_retry_on_startup": True,
        "broker_connection_retry": True,
        # JSON only: nothing a worker receives can execute code when decoded
        "task_serializer": "json", "result_serializer": "json", "event_serializer": "json",
        "accept_content": list(JSON_ONLY), "result_accept_content": list(JSON_ONLY),
        "task_queues": tuple(Queue(name, Exchange(name, type="direct"), routing_key=name)
                             for name in QUEUES),
        "task_default_queue": "branches",
        "task_routes": {f"{prefix}*": {"queue": queue} for prefix, queue in TASK_KINDS.values()},
        "task_create_missing_queues": False,
        # reliability: ack after the task ran, re-queue when its worker dies
        # (capped by SRHTask's delivery counter), fail and ack on error/timeout
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        "task_acks_on_failure": True,
        "task_acks_on_timeout": True,
        "worker_prefetch_multiplier": 1,
        "worker_cancel_long_running_tasks_on_connection_loss": True,
        # fallback limits for tasks that are neither tool nor branch tasks
        "task_time_limit": max(tool.hard, branch.hard),
        "task_soft_time_limit": max(tool.soft, branch.soft),
        "worker_max_tasks_per_child": settings.tool_max_tasks_per_child or None,
        "worker_max_memory_per_child": settings.tool_max_memory_per_child_kb or None,
        # monitoring (Flower): task events from workers and producers
        "worker_send_task_events": True,
        "task_send_sent_event": True,
        "task_track_started": True,
        "result_extended": True,
        "result_expires": settings.result_expires,
        "result_backend_always_retry": True,
        "result_backend_max_retries": RESULT_BACKEND_MAX_RETRIES,
        "enable_utc": True,
        "timezone": "UTC",
    }


def make_app(settings: WorkerSettings | None = None) -> Celery:
    """A configured Celery app (settings from the environment when None).

    Raises:
        ConfigurationError: When the settings are inconsistent (``settings.check()``).
    """
    settings = (settings or WorkerSettings.from_env()).check()
    celery_app = Celery(APP_NAME, task_cls=SRHTask, include=list(settings.task_modules),
                        set_as_current=False)
    celery_app.srh_settings = settings  # type: ignore[attr-defined]  # read by SRHTask.bind
    celery_app.conf.update(celery_config(settings))
    _register_ping(celery_app)
    _connect_signals(celery_app)
    return celery_app


def _ping(self: SRHTask, payload: Any = None) -> dict[str, Any]:
    """Health check and round-trip probe: answers from the worker that ran it."""
    delivery = self.request.delivery_info or {}
    return {"pong": True, "task": self.name, "hostname": self.request.hostname,
            "pid": os.getpid(), "queue": delivery.get("routing_key"), "payload": payload}


def _register_ping(celery_app: Celery) -> None:
    for name in PING_TASKS:
        celery_app.task(name=name, bind=True)(_ping)


# ------------------------------------------------------------- start-up checks
def check_app(celery_app: Celery) -> None:
    """Check the effective configuration a worker is about to run with.

    The visibility timeout must be the same in all three places, and every
    registered task's hard limit (its own, else ``task_time_limit``) plus the
    retry backoff must fit under it.

    Raises:
        ConfigurationError: With the task or setting at fault.
    """
    settings: WorkerSettings = celery_app.srh_settings  # type: ignore[attr-defined]
    settings.check()
    conf = celery_app.conf
    places = {"result_backend_transport_options": conf.result_backend_transport_options,
              "conf": {"visibility_timeout": conf.get("visibility_timeout")}}
    if settings.broker_kind == "redis":
        places["broker_transport_options"] = conf.broker_transport_options
    wrong = {place: options.get("visibility_timeout") for place, options in places.items()
             if options.get("visibility_timeout") != settings.visibility_timeout}
    if wrong:
        raise ConfigurationError(
            f"visibility_timeout must be {settings.visibility_timeout} (SRH_VISIBILITY_TIMEOUT) "
            f"in every place Celery reads it; these differ: {wrong}.",
            setting="SRH_VISIBILITY_TIMEOUT")
    for name, task in sorted(celery_app.tasks.items()):
        hard = task.time_limit or conf.task_time_limit
        if not hard:
            raise ConfigurationError(f"Task {name!r} has no hard time limit; every task needs "
                                     f"one below the visibility timeout.", setting=name)
        settings.check_hold(f"The hard time limit of task {name!r}", float(hard))


def _import_task_modules(celery_app: Celery) -> None:
    for module in celery_app.srh_settings.task_modules:  # type: ignore[attr-defined]
        try:
            importlib.import_module(module)
        except Exception as error:
            raise ConfigurationError(
                f"The task module {module!r} (SRH_TASK_MODULES) failed to import, so this "
                f"worker would not know the harness's tasks: {error!r}. Fix the module, or set "
                f"SRH_TASK_MODULES=none for a worker that only answers srh.*.ping.",
                setting="SRH_TASK_MODULES") from error


def _warm_up() -> None:
    started = time.monotonic()
    os.environ.setdefault("MPLBACKEND", "Agg")  # workers draw plots into files only
    for module in WARM_MODULES:
        importlib.import_module(module)
    for module in OPTIONAL_WARM_MODULES:
        try:
            importlib.import_module(module)
        except ImportError:
            continue
    logger.info("imported the search and tool modules in %.1f s", time.monotonic() - started)


def _publish_endpoints(settings: WorkerSettings, registry: EndpointRegistry) -> None:
    """Tell submitters which model endpoints this cluster's operator named (no keys)."""
    from redis.exceptions import RedisError

    from srh_workers.endpoints import publish_endpoints
    from srh_workers.store.client import redis_client

    try:
        publish_endpoints(redis_client(str(settings.redis_url)), registry)
    except RedisError as error:  # submitters then check runs against SRH_ENDPOINTS only
        logger.warning("could not publish the model endpoints: %s", error)
    logger.info("model endpoints: %s", ", ".join(registry.names()) or "none")


def _consumes_tools(worker: Any) -> bool:
    with_queues = getattr(worker.app.amqp.queues, "consume_from", None) or {}
    return TOOLS_QUEUE in with_queues


def _on_worker_init(celery_app: Celery, worker: Any) -> None:
    settings: WorkerSettings = celery_app.srh_settings  # type: ignore[attr-defined]
    try:
        check_app(celery_app)
        registry = EndpointRegistry.from_env()
    except ConfigurationError as error:
        logger.critical("refusing to start: %s", error)
        raise SystemExit(EX_CONFIG) from error
    _publish_endpoints(settings, registry)
    _warm_up()
    if _consumes_tools(worker):
        loose = [name for name in BLAS_THREAD_VARIABLES if os.environ.get(name) != "1"]
        if loose:
            logger.warning("tools worker without %s=1: numeric libraries may start one thread "
                           "per core in every child (start it with `srh worker`)", loose)
    if settings.metrics_port is not None:
        try:
            from srh_workers.observability.sweep_metrics import SweepCollector

            server, _ = metrics.start_worker_metrics(
                settings.metrics_port, settings.broker_url, QUEUES, addr=settings.metrics_addr,
                collectors=[SweepCollector(str(settings.redis_url))])
        except ImportError:
            logger.error("SRH_METRICS_PORT is set but prometheus-client is not installed "
                         "(pip install 'srh[metrics]'); running without metrics")
            return
        logger.info("metrics on %s:%d", settings.metrics_addr, server.server_port)


def start_watchdog(celery_app: Celery, owner: str) -> Any:
    """Start this worker's watchdog thread (None when ``SRH_STALL_SECONDS`` is 0)."""
    from srh_workers.flow.tasks import sender
    from srh_workers.store.client import redis_client
    from srh_workers.watchdog import Watchdog

    settings: WorkerSettings = celery_app.srh_settings  # type: ignore[attr-defined]
    if not settings.stall_seconds:
        return None
    watchdog = Watchdog(redis_client(str(settings.redis_url)), sender(celery_app),
                        settings.stall_seconds, settings.watchdog_interval, owner).start()
    logger.info("watchdog on: runs without progress for %g s are kicked (checked every "
                "%g s)", settings.stall_seconds, settings.watchdog_interval)
    return watchdog


def start_sweep_coordinator(celery_app: Celery, owner: str) -> Any:
    """Start this worker's sweep coordinator thread (None when ``SRH_SWEEP_INTERVAL`` is 0)."""
    from srh_workers.flow.tasks import sender
    from srh_workers.store.client import redis_client
    from srh_workers.sweeps.coordinator import SweepCoordinator

    settings: WorkerSettings = celery_app.srh_settings  # type: ignore[attr-defined]
    if not settings.sweep_interval:
        return None
    client = redis_client(str(settings.redis_url))
    on_finished = None
    if settings.artifacts is not None:
        from srh_workers.artifacts import judge_into_artifacts

        on_finished = judge_into_artifacts(settings.artifacts, client)
    return SweepCoordinator(client, sender(celery_app), owner,
                            interval=settings.sweep_interval,
                            lease_seconds=settings.sweep_lease, on_finished=on_finished).start()


def _connect_signals(celery_app: Celery) -> None:
    uid = f"srh-{id(celery_app)}"
    settings: WorkerSettings = celery_app.srh_settings  # type: ignore[attr-defined]
    watchdogs: list[Any] = []
    bound = ShutdownBound(settings.shutdown_grace)

    def on_worker_ready(sender: Any = None, **_: Any) -> None:
        # after the pool started: the prefork children are forked without the thread
        if getattr(sender, "app", None) is celery_app:
            owner = f"{getattr(sender, 'hostname', '') or 'worker'}:{os.getpid()}"
            watchdogs.append(start_watchdog(celery_app, owner))
            watchdogs.append(start_sweep_coordinator(celery_app, owner))

    def on_worker_shutdown(**_: Any) -> None:
        for watchdog in watchdogs:
            if watchdog is not None:
                watchdog.stop()

    def on_import_modules(sender: Any = None, **_: Any) -> None:
        if sender is celery_app:
            _import_task_modules(celery_app)

    def on_worker_init(sender: Any = None, **_: Any) -> None:
        if getattr(sender, "app", None) is celery_app:
            bound.attach(sender)
            _on_worker_init(celery_app, sender)

    def on_setup_logger(logger: logging.Logger | None = None, **_: Any) -> None:
        if logger is not None:
            logs.install_log_format(logger, settings.log_format)

    signals.import_modules.connect(on_import_modules, weak=False, dispatch_uid=f"{uid}-import")
    signals.worker_init.connect(on_worker_init, weak=False, dispatch_uid=f"{uid}-init")
    signals.worker_ready.connect(on_worker_ready, weak=False, dispatch_uid=f"{uid}-ready")
    signals.worker_shutdown.connect(on_worker_shutdown, weak=False,
                                    dispatch_uid=f"{uid}-shutdown")
    signals.worker_shutting_down.connect(bound.begin, weak=False,
                                         dispatch_uid=f"{uid}-shutdown-bound")
    signals.after_setup_logger.connect(on_setup_logger, weak=False, dispatch_uid=f"{uid}-log")
    signals.after_setup_task_logger.connect(on_setup_logger, weak=False,
                                            dispatch_uid=f"{uid}-tasklog")
    signals.task_prerun.connect(metrics.on_task_prerun, weak=False,
                                dispatch_uid="srh-metrics-prerun")
    signals.task_postrun.connect(metrics.on_task_postrun, weak=False,
                                 dispatch_uid="srh-metrics-postrun")


_app: Celery | None = None


def get_app() -> Celery:
    """The process's app, made from the environment on first use."""
    global _app
    if _app is None:
        _app = make_app()
    return _app


def __getattr__(name: str) -> Any:
    # PEP 562: `app` is made on first access, so importing this module does nothing.
    if name == "app":
        return get_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["APP_NAME", "PING_TASKS", "celery_config", "check_app", "get_app", "make_app"]

"""Worker settings: one frozen, validated object read from ``SRH_*`` environment variables.

Every reliability figure of the distributed runtime lives here, next to the
rule that ties them together: a task must be acknowledged before the Redis
broker's visibility timeout runs out, or the broker hands the still-running
task to a second worker. A task holds its message from delivery to ack for at
most its hard time limit plus the countdown of a retry (a retried task waits
for its countdown while the worker holds the message), so :meth:`check`
requires, for every task kind::

    hard limit + retry_backoff_max + margin <= visibility_timeout

with ``margin = max(1 s, 10 % of visibility_timeout)``. :func:`srh_workers.app.make_app`
and the worker's start-up call :meth:`WorkerSettings.check`; a bad combination
stops the worker with a message that names the variables to change.

The table of variables is :data:`SETTINGS_ENV` (field -> variable); defaults
are the dataclass defaults, documented in ``deploy/README.md``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Literal, get_args
from urllib.parse import urlsplit

from srh_core.errors import ConfigurationError, did_you_mean

TaskKind = Literal["tool", "branch"]
BrokerKind = Literal["redis", "amqp", "memory"]
LogFormat = Literal["json", "text"]

TOOLS_QUEUE = "tools"
BRANCHES_QUEUE = "branches"
QUEUES: tuple[str, ...] = (BRANCHES_QUEUE, TOOLS_QUEUE)
#: Task name prefix -> (kind, queue). Tasks named ``srh.tool.*`` run on ``tools`` etc.
TASK_KINDS: Mapping[TaskKind, tuple[str, str]] = {
    "tool": ("srh.tool.", TOOLS_QUEUE),
    "branch": ("srh.branch.", BRANCHES_QUEUE),
}
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
DEFAULT_TASK_MODULES = ("srh_workers.flow.tasks",)
MIN_VISIBILITY_MARGIN_SECONDS = 1.0
VISIBILITY_MARGIN_FRACTION = 0.1
MAX_PORT = 65535
STALL_MARGIN_SECONDS = 5.0
DEFAULT_WATCHDOG_INTERVAL = 10.0
DEFAULT_METRICS_ADDR = "127.0.0.1"

_BROKER_SCHEMES: Mapping[str, BrokerKind] = {
    "redis": "redis", "rediss": "redis", "redis+socket": "redis", "sentinel": "redis",
    "amqp": "amqp", "amqps": "amqp", "pyamqp": "amqp", "memory": "memory",
}
_BACKEND_SCHEMES = ("redis", "rediss", "redis+socket", "sentinel", "cache+memory")

#: Dataclass field -> environment variable.
SETTINGS_ENV: Mapping[str, str] = {
    "broker_url": "SRH_BROKER_URL",
    "result_backend": "SRH_RESULT_BACKEND",
    "redis_url": "SRH_REDIS_URL",
    "visibility_timeout": "SRH_VISIBILITY_TIMEOUT",
    "tool_soft_limit": "SRH_TOOL_SOFT_LIMIT",
    "tool_hard_limit": "SRH_TOOL_HARD_LIMIT",
    "branch_soft_limit": "SRH_BRANCH_SOFT_LIMIT",
    "branch_hard_limit": "SRH_BRANCH_HARD_LIMIT",
    "max_deliveries": "SRH_MAX_DELIVERIES",
    "max_retries": "SRH_TASK_MAX_RETRIES",
    "retry_backoff_max": "SRH_RETRY_BACKOFF_MAX",
    "restore_interval": "SRH_RESTORE_INTERVAL",
    "tool_max_tasks_per_child": "SRH_TOOL_MAX_TASKS_PER_CHILD",
    "tool_max_memory_per_child_kb": "SRH_TOOL_MAX_MEMORY_PER_CHILD_KB",
    "result_expires": "SRH_RESULT_EXPIRES",
    "metrics_port": "SRH_METRICS_PORT",
    "metrics_addr": "SRH_METRICS_ADDR",
    "log_format": "SRH_LOG_FORMAT",
    "runs_dir": "SRH_RUNS_DIR",
    "task_modules": "SRH_TASK_MODULES",
    "stall_seconds": "SRH_STALL_SECONDS",
    "watchdog_interval": "SRH_WATCHDOG_INTERVAL",
    "shutdown_grace": "SRH_SHUTDOWN_GRACE",
    "sweep_interval": "SRH_SWEEP_INTERVAL",
    "sweep_lease": "SRH_SWEEP_LEASE",
    "artifacts": "SRH_ARTIFACTS",
}


@dataclass(frozen=True, slots=True)
class TimeLimits:
    """Soft and hard time limits of one task kind, in seconds."""

    soft: float
    hard: float


def broker_kind(url: str) -> BrokerKind:
    """The broker family of ``url``: "redis" (visibility timeout applies), "amqp" or "memory".

    Raises:
        ConfigurationError: When the scheme is not a supported broker.
    """
    scheme = urlsplit(url).scheme.lower()
    if scheme not in _BROKER_SCHEMES:
        raise ConfigurationError(
            f"The 'SRH_BROKER_URL' setting must be a redis://, rediss://, sentinel:// or "
            f"amqp:// URL. Got {url!r} instead.{did_you_mean(scheme, _BROKER_SCHEMES)}",
            setting="SRH_BROKER_URL")
    return _BROKER_SCHEMES[scheme]


def _without_password(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return parts._replace(netloc=netloc).geturl()


def _problem(name: str, expected: str, value: object) -> ConfigurationError:
    env = SETTINGS_ENV.get(name, name)
    return ConfigurationError(f"The '{env}' setting must be {expected}. Got {value!r} instead.",
                              setting=env)


def _positive_number(name: str, value: object, *, allow_zero: bool = False) -> None:
    ok = (not isinstance(value, bool) and isinstance(value, int | float)
          and math.isfinite(value) and (value >= 0 if allow_zero else value > 0))
    if not ok:
        raise _problem(name, "a finite number of seconds " + (">= 0" if allow_zero else "> 0"),
                       value)


def _int_at_least(name: str, value: object, low: int, high: int | None = None) -> None:
    ok = (not isinstance(value, bool) and isinstance(value, int) and value >= low
          and (high is None or value <= high))
    if not ok:
        span = f"in [{low}, {high}]" if high is not None else f">= {low}"
        raise _problem(name, f"an int {span}", value)


@dataclass(frozen=True, slots=True)
class WorkerSettings:
    """Settings of the Celery app and its workers (read them with :meth:`from_env`).

    Attributes:
        broker_url: Celery broker: Redis (default) or RabbitMQ (``amqp://``).
        result_backend: Celery result backend; None means ``redis_url``.
        redis_url: Redis of the candidate store and the delivery counters; None
            means the broker when it is Redis (required with any other broker).
        visibility_timeout: Seconds before the Redis broker re-delivers an
            unacknowledged task. Short (tasks are short by design): it is also
            how long a task of a dead worker waits before another worker runs it.
        tool_soft_limit: Seconds before ``SoftTimeLimitExceeded`` is raised in a tool task.
        tool_hard_limit: Seconds before a tool task's process is killed (the task fails).
        branch_soft_limit: Soft limit of branch tasks (model requests; see deploy/README.md:
            the model client's timeout times its attempts must fit under it).
        branch_hard_limit: Hard limit of branch tasks.
        max_deliveries: Deliveries of one task (per retry) before it is declared poison
            and failed without running.
        max_retries: Retries of a task after a transient error (Redis down, rate limit).
        retry_backoff_max: Largest retry countdown, seconds (backoff is exponential, jittered).
        restore_interval: Seconds between a worker's sweeps for expired unacked messages.
        tool_max_tasks_per_child: Tasks before a prefork child is replaced (0: never).
        tool_max_memory_per_child_kb: Resident KiB after which a child is replaced
            once its task ends (0: no cap).
        result_expires: Seconds task results are kept in the result backend.
        metrics_port: Port of the worker's Prometheus endpoint (None: no endpoint).
        metrics_addr: Address that endpoint binds (loopback unless told otherwise).
        log_format: ``json`` (one object per line) or ``text`` (key=value).
        runs_dir: Directory of finished runs' results.
        task_modules: Modules the worker imports to register its tasks.
        stall_seconds: A run that did not progress for this long is stalled: the
            workers' watchdog re-sends its next tasks (as ``srh kick``).
            At least the longest hold of a task (hard limit + retry backoff), so a
            task still running is never doubled; None (unset) means that hold plus
            :data:`STALL_MARGIN_SECONDS` (100 s with the defaults); 0 turns the watchdog off.
        watchdog_interval: Seconds between two checks for stalled runs (one worker
            of the cluster checks per interval, under a Redis lock); None means
            :data:`DEFAULT_WATCHDOG_INTERVAL`, or half the stall threshold if that is shorter.
        shutdown_grace: Seconds a stopping worker (SIGTERM, Ctrl-C) waits for its running
            tasks before it hands them back to the broker and exits
            (:mod:`srh_workers.shutdown`); 0 hands them back at once.
        sweep_interval: Seconds between two looks of a worker's sweep coordinator at
            the sweeps it holds (:mod:`srh_workers.sweeps.coordinator`); 0 turns this
            worker's coordinator off.
        sweep_lease: Seconds a sweep's coordinator lease lives without renewal: when
            its holder dies, another worker takes the sweep over after at most this.
        artifacts: The operator's artifact root (a volume every worker mounts): when
            set, the worker that finishes a run writes its run directory to
            ``artifacts/runs/<run_id>`` (instead of ``runs_dir``) and then compacts the
            run's Redis keys (:meth:`RedisRunStore.compact`); None: no artifacts.
    """

    broker_url: str = DEFAULT_REDIS_URL
    result_backend: str | None = None
    redis_url: str | None = None
    visibility_timeout: int = 110
    tool_soft_limit: float = 40.0
    tool_hard_limit: float = 50.0
    branch_soft_limit: float = 70.0
    branch_hard_limit: float = 85.0
    max_deliveries: int = 3
    max_retries: int = 5
    retry_backoff_max: float = 10.0
    restore_interval: int = 5
    tool_max_tasks_per_child: int = 200
    tool_max_memory_per_child_kb: int = 1_000_000
    result_expires: int = 86_400
    metrics_port: int | None = None
    metrics_addr: str = DEFAULT_METRICS_ADDR
    log_format: LogFormat = "json"
    runs_dir: Path = field(default_factory=lambda: Path("runs"))
    task_modules: tuple[str, ...] = DEFAULT_TASK_MODULES
    stall_seconds: float | None = None
    watchdog_interval: float | None = None
    shutdown_grace: float = 5.0
    sweep_interval: float = 1.0
    sweep_lease: float = 15.0
    artifacts: Path | None = None

    def __post_init__(self) -> None:
        kind = broker_kind(self.broker_url)
        if self.redis_url is None:
            if kind != "redis":  # never guess where the store is
                raise ConfigurationError(
                    f"The 'SRH_REDIS_URL' setting is required with a {kind} broker "
                    f"(SRH_BROKER_URL={_without_password(self.broker_url)}): the candidate "
                    "store and the delivery counters live in Redis. Set it to a redis:// URL.",
                    setting="SRH_REDIS_URL")
            object.__setattr__(self, "redis_url", self.broker_url)
        if self.result_backend is None:
            object.__setattr__(self, "result_backend", self.redis_url)
        self._validate_urls(str(self.redis_url), str(self.result_backend))
        self._validate_numbers()
        if self.stall_seconds is None:
            hold = max(self.longest_hold(self.limits(kind).hard) for kind in TASK_KINDS)
            object.__setattr__(self, "stall_seconds", hold + STALL_MARGIN_SECONDS)
        if self.watchdog_interval is None:
            interval = DEFAULT_WATCHDOG_INTERVAL
            if self.stall_seconds:
                interval = min(interval, float(self.stall_seconds) / 2)
            object.__setattr__(self, "watchdog_interval", interval)
        if self.log_format not in get_args(LogFormat):
            raise _problem("log_format", f"one of {get_args(LogFormat)}", self.log_format)
        object.__setattr__(self, "runs_dir", Path(self.runs_dir))
        if self.artifacts is not None:
            object.__setattr__(self, "artifacts", Path(self.artifacts))
        object.__setattr__(self, "task_modules", tuple(self.task_modules))

    @staticmethod
    def _validate_urls(redis_url: str, result_backend: str) -> None:
        if urlsplit(redis_url).scheme not in ("redis", "rediss", "redis+socket"):
            raise _problem("redis_url", "a redis:// or rediss:// URL", redis_url)
        if not result_backend.startswith(_BACKEND_SCHEMES):
            raise _problem("result_backend", "a redis://, rediss:// or sentinel:// URL",
                           result_backend)

    def _validate_numbers(self) -> None:
        for name in ("tool_soft_limit", "tool_hard_limit", "branch_soft_limit",
                     "branch_hard_limit"):
            _positive_number(name, getattr(self, name))
        _positive_number("retry_backoff_max", self.retry_backoff_max, allow_zero=True)
        _positive_number("shutdown_grace", self.shutdown_grace, allow_zero=True)
        _positive_number("sweep_interval", self.sweep_interval, allow_zero=True)
        _positive_number("sweep_lease", self.sweep_lease)
        if self.sweep_interval and self.sweep_lease < 3 * self.sweep_interval:
            raise _problem("sweep_lease", "at least 3 x SRH_SWEEP_INTERVAL (a live "
                           "coordinator must renew its lease in time)", self.sweep_lease)
        if self.stall_seconds is not None:
            _positive_number("stall_seconds", self.stall_seconds, allow_zero=True)
        if self.watchdog_interval is not None:
            _positive_number("watchdog_interval", self.watchdog_interval)
        _int_at_least("visibility_timeout", self.visibility_timeout, 1)
        _int_at_least("restore_interval", self.restore_interval, 1)
        _int_at_least("max_deliveries", self.max_deliveries, 1)
        _int_at_least("max_retries", self.max_retries, 0)
        _int_at_least("tool_max_tasks_per_child", self.tool_max_tasks_per_child, 0)
        _int_at_least("tool_max_memory_per_child_kb", self.tool_max_memory_per_child_kb, 0)
        _int_at_least("result_expires", self.result_expires, 1)
        if self.metrics_port is not None:
            _int_at_least("metrics_port", self.metrics_port, 0, MAX_PORT)

    # ------------------------------------------------------------------ derived
    @property
    def broker_kind(self) -> BrokerKind:
        """"redis", "amqp" or "memory" (the visibility timeout only exists on "redis")."""
        return broker_kind(self.broker_url)

    @property
    def visibility_margin(self) -> float:
        """Slack kept between a task's longest hold of its message and the visibility timeout."""
        return max(MIN_VISIBILITY_MARGIN_SECONDS,
                   VISIBILITY_MARGIN_FRACTION * self.visibility_timeout)

    def limits(self, kind: TaskKind) -> TimeLimits:
        """The soft and hard time limits of task kind ``kind`` ("tool" or "branch")."""
        if kind not in TASK_KINDS:
            raise ConfigurationError(
                f"Task kind must be one of {tuple(TASK_KINDS)}. Got {kind!r} instead."
                f"{did_you_mean(str(kind), TASK_KINDS)}", setting="kind")
        return TimeLimits(getattr(self, f"{kind}_soft_limit"), getattr(self, f"{kind}_hard_limit"))

    def longest_hold(self, hard_limit: float) -> float:
        """Longest time a task with ``hard_limit`` can hold its message unacknowledged."""
        return hard_limit + self.retry_backoff_max

    # ------------------------------------------------------------------- checks
    def check(self) -> WorkerSettings:
        """Check the relations between settings; return self.

        Raises:
            ConfigurationError: When a soft limit is not below its hard limit, a
                hard limit (plus the retry backoff and the margin) reaches the
                visibility timeout, or the restore sweep is slower than the timeout.
        """
        for kind in TASK_KINDS:
            self._check_kind(kind)
        if self.restore_interval >= self.visibility_timeout:
            raise ConfigurationError(
                f"SRH_RESTORE_INTERVAL ({self.restore_interval} s) must be shorter than "
                f"SRH_VISIBILITY_TIMEOUT ({self.visibility_timeout} s): a dead worker's tasks "
                f"are restored by that sweep.", setting="SRH_RESTORE_INTERVAL")
        self._check_watchdog()
        return self

    def _check_watchdog(self) -> None:
        if not self.stall_seconds:
            return
        hold = max(self.longest_hold(self.limits(kind).hard) for kind in TASK_KINDS)
        if self.stall_seconds < hold:
            raise ConfigurationError(
                f"SRH_STALL_SECONDS ({self.stall_seconds:g} s) must be at least the longest "
                f"hold of a task (hard limit + SRH_RETRY_BACKOFF_MAX = {hold:g} s), or the "
                f"watchdog re-sends the tasks of a run whose task is still running. Raise it "
                f"to {math.ceil(hold)} or more, or set 0 to turn the watchdog off.",
                setting="SRH_STALL_SECONDS")
        if self.watchdog_interval >= self.stall_seconds:
            raise ConfigurationError(
                f"SRH_WATCHDOG_INTERVAL ({self.watchdog_interval:g} s) must be shorter than "
                f"SRH_STALL_SECONDS ({self.stall_seconds:g} s).",
                setting="SRH_WATCHDOG_INTERVAL")

    def _check_kind(self, kind: TaskKind) -> None:
        limits, upper = self.limits(kind), kind.upper()
        if limits.soft >= limits.hard:
            raise ConfigurationError(
                f"SRH_{upper}_SOFT_LIMIT ({limits.soft:g} s) must be below "
                f"SRH_{upper}_HARD_LIMIT ({limits.hard:g} s), so the task can clean up "
                f"before it is killed.", setting=f"SRH_{upper}_SOFT_LIMIT")
        self.check_hold(f"SRH_{upper}_HARD_LIMIT", limits.hard)

    def check_hold(self, name: str, hard_limit: float) -> None:
        """Raise unless a task with ``hard_limit`` is always acked within the visibility timeout.

        Args:
            name: What the limit is (a variable or a task name), for the message.
            hard_limit: The task's hard time limit in seconds.
        """
        hold = self.longest_hold(hard_limit)
        if hold + self.visibility_margin > self.visibility_timeout:
            # the margin grows with the timeout, so the smallest timeout that works is
            need = max(hold + MIN_VISIBILITY_MARGIN_SECONDS,
                       hold / (1 - VISIBILITY_MARGIN_FRACTION))
            raise ConfigurationError(
                f"{name} ({hard_limit:g} s) plus SRH_RETRY_BACKOFF_MAX "
                f"({self.retry_backoff_max:g} s) plus a margin of {self.visibility_margin:g} s "
                f"must not exceed SRH_VISIBILITY_TIMEOUT ({self.visibility_timeout} s), or the "
                f"broker re-delivers a task that is still running. Raise SRH_VISIBILITY_TIMEOUT "
                f"to at least {math.ceil(need - 1e-9)} or lower the limit.",
                setting="SRH_VISIBILITY_TIMEOUT")

    # ----------------------------------------------------------------- from env
    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> WorkerSettings:
        """Read the settings from ``environ`` (default ``os.environ``); unset means default.

        Raises:
            ConfigurationError: A variable does not parse or is out of range
                (the message names the variable).
        """
        environ = os.environ if environ is None else environ
        values: dict[str, object] = {}
        for spec in fields(cls):
            raw = environ.get(SETTINGS_ENV[spec.name], "").strip()
            if raw:
                values[spec.name] = _parse(spec.name, raw)
        return cls(**values)  # type: ignore[arg-type]

    @property
    def run_directories(self) -> Path:
        """Where this worker writes finished runs: the artifact root's ``runs``, else runs_dir."""
        return self.artifacts / "runs" if self.artifacts is not None else self.runs_dir

    def to_env(self) -> dict[str, str]:
        """The settings as ``SRH_*`` variables (what a child process needs to rebuild them)."""
        env = {}
        for spec in fields(self):
            value = getattr(self, spec.name)
            if value is None:
                continue
            text = (",".join(value) or "none") if isinstance(value, tuple) else str(value)
            env[SETTINGS_ENV[spec.name]] = text
        return env


_INTS = frozenset({"visibility_timeout", "max_deliveries", "max_retries", "restore_interval",
                   "tool_max_tasks_per_child", "tool_max_memory_per_child_kb", "result_expires",
                   "metrics_port"})
_FLOATS = frozenset({"tool_soft_limit", "tool_hard_limit", "branch_soft_limit",
                     "branch_hard_limit", "retry_backoff_max", "stall_seconds",
                     "watchdog_interval", "shutdown_grace", "sweep_interval",
                     "sweep_lease"})


def _parse(name: str, raw: str) -> object:
    if name in _INTS:
        try:
            return int(raw)
        except ValueError:
            raise _problem(name, "an int", raw) from None
    if name in _FLOATS:
        try:
            return float(raw)
        except ValueError:
            raise _problem(name, "a number of seconds", raw) from None
    if name == "task_modules":  # "none": no task modules (a ping-only worker)
        if raw.lower() == "none":
            return ()
        return tuple(part.strip() for part in raw.split(",") if part.strip())
    if name in ("runs_dir", "artifacts"):
        return Path(raw)
    return raw


__all__ = [
    "BRANCHES_QUEUE", "DEFAULT_REDIS_URL", "QUEUES", "SETTINGS_ENV", "TASK_KINDS", "TOOLS_QUEUE",
    "TimeLimits", "WorkerSettings", "broker_kind",
]

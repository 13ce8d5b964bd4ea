"""``srh worker`` and ``srh metrics``: start Celery workers with the right pool per queue.

- ``tools`` (CPU bound): the prefork pool, one child per core by default,
  ``OMP_NUM_THREADS=1`` (and the OpenBLAS/MKL equivalents) so N children do
  not each start N BLAS threads, children recycled after
  ``SRH_TOOL_MAX_TASKS_PER_CHILD`` tasks or ``SRH_TOOL_MAX_MEMORY_PER_CHILD_KB``.
- ``branches`` (I/O bound: model requests): the threads pool,
  :data:`DEFAULT_BRANCH_THREADS` threads by default (one per concurrent model
  request). The threads pool does not enforce time limits; branch tasks
  bound their model requests with ``SRHTask.time_budget()``.

One kind: the process *becomes* the Celery worker (``exec``), so systemd,
Docker and Kubernetes signal it directly. Both kinds (the default): two worker
processes are started in their own session and supervised; the first
SIGTERM/SIGINT is forwarded to each, a second one as SIGQUIT (Celery's cold
shutdown), and when one exits the other is stopped and the first one's exit
code returned, so the service manager restarts the pair. Either way a
stopping worker waits ``SRH_SHUTDOWN_GRACE`` seconds (5) for its running
tasks, then hands them back to the broker and exits
(:mod:`srh_workers.shutdown`): ``srh worker`` ends within about 10 s of
SIGTERM or Ctrl-C, at once after a second Ctrl-C, and nothing it started
outlives it.

Every worker gets ``--prefetch-multiplier 1``, task events (``-E``, for
Flower) and a node name per kind (``tools@host``, ``branches@host``);
mingle and gossip are off (start-up is faster and nothing here needs them).
``--dry-run`` prints the commands. The core CLI loads these through its
``srh.commands`` plugin: call :func:`add_worker_command` and
:func:`add_metrics_command` from the plugin's ``register``. Without the
plugin, ``python -m srh_workers.cli worker ...`` does the same.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import importlib.util
import os
import shlex
import signal
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import FrameType

from srh_core.errors import ConfigurationError, did_you_mean
from srh_workers.config import (
    BRANCHES_QUEUE,
    DEFAULT_METRICS_ADDR,
    QUEUES,
    TOOLS_QUEUE,
    WorkerSettings,
)
from srh_workers.shutdown import HARD_EXIT_SECONDS

APP_PATH = "srh_workers.app"
DEFAULT_BRANCH_THREADS = 8
DEFAULT_METRICS_PORT = 9808
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
SINGLE_THREADED_BLAS = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
                        "MKL_NUM_THREADS": "1"}
#: How long the supervisor waits for a stopping worker: its shutdown grace, its hard exit
#: (:data:`srh_workers.shutdown.HARD_EXIT_SECONDS`) and a margin; then it kills it.
STOP_MARGIN_SECONDS = 2.0
STOP_GRACE_SECONDS = WorkerSettings().shutdown_grace + HARD_EXIT_SECONDS + STOP_MARGIN_SECONDS
FORWARDED_SIGNALS = (signal.SIGTERM, signal.SIGINT)


@dataclass(frozen=True, slots=True)
class WorkerKind:
    """How the workers of one queue run."""

    queue: str
    pool: str
    default_concurrency: Callable[[], int]
    env: Mapping[str, str] = field(default_factory=dict)


WORKER_KINDS: Mapping[str, WorkerKind] = {
    TOOLS_QUEUE: WorkerKind(TOOLS_QUEUE, "prefork", lambda: os.cpu_count() or 1,
                            SINGLE_THREADED_BLAS),
    BRANCHES_QUEUE: WorkerKind(BRANCHES_QUEUE, "threads", lambda: DEFAULT_BRANCH_THREADS),
}


@dataclass(frozen=True, slots=True)
class WorkerCommand:
    """One worker process to start: its argv and the variables added to the environment."""

    kind: str
    argv: tuple[str, ...]
    env: Mapping[str, str]

    def render(self) -> str:
        """The command as a shell line (``VAR=value ... python -m celery ...``)."""
        assignments = [f"{name}={shlex.quote(value)}" for name, value in sorted(self.env.items())]
        return " ".join([*assignments, *(shlex.quote(part) for part in self.argv)])


def parse_queues(text: str) -> tuple[str, ...]:
    """``"tools,branches"`` -> ("tools", "branches"); unknown names are an argparse error."""
    names = tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
    for name in names:
        if name not in WORKER_KINDS:
            raise argparse.ArgumentTypeError(
                f"unknown queue {name!r}; the queues are {', '.join(QUEUES)}."
                f"{did_you_mean(name, WORKER_KINDS)}")
    if not names:
        raise argparse.ArgumentTypeError(f"give at least one queue of {', '.join(QUEUES)}")
    return names


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an int >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an int >= 1, got {value}")
    return value


#: Seconds a drain waits for the worker's replies.
DRAIN_TIMEOUT = 2.0


def _node_name(kind: str, hostname: str | None, several: bool) -> str:
    """The worker's node name: unique per host by default (two ``srh worker`` processes on
    one host never clash: the name carries this process's id, which ``exec`` keeps)."""
    if hostname is None:
        return f"{kind}-{os.getpid()}@%h"
    if not several:
        return hostname
    name, at, host = hostname.partition("@")
    return f"{kind}-{name}{at}{host}"


def worker_commands(queues: Sequence[str], settings: WorkerSettings, *,
                    concurrency: int | None = None, loglevel: str = "INFO",
                    hostname: str | None = None, metrics_port: int | None = None,
                    metrics_addr: str | None = None,
                    python: str = sys.executable,
                    environ: Mapping[str, str] = os.environ) -> list[WorkerCommand]:
    """The worker processes for ``queues``: one per queue kind, each with its pool.

    Args:
        queues: Queue names (``tools``, ``branches``).
        settings: Worker settings (the tools worker's child recycling comes from them).
        concurrency: Pool size of every worker (default: per kind).
        loglevel: Celery log level.
        hostname: Node name (made unique per kind when several are started).
        metrics_port: First metrics port; the next kind gets the next port.
        metrics_addr: Address the metrics bind (None: the workers' SRH_METRICS_ADDR).
        python: Interpreter that runs ``-m celery``.
        environ: Environment the workers inherit (read for PROMETHEUS_MULTIPROC_DIR).
    """
    commands = []
    for index, queue in enumerate(queues):
        kind = WORKER_KINDS[queue]
        size = concurrency or kind.default_concurrency()
        argv = [python, "-m", "celery", "-A", APP_PATH, "worker", "-Q", kind.queue,
                "-P", kind.pool, "-c", str(size), "--prefetch-multiplier", "1", "-E",
                "-n", _node_name(queue, hostname, len(queues) > 1), "-l", loglevel,
                "--without-mingle", "--without-gossip"]
        if kind.pool == "prefork":
            argv += ["-O", "fair"]
            if settings.tool_max_tasks_per_child:
                argv += ["--max-tasks-per-child", str(settings.tool_max_tasks_per_child)]
            if settings.tool_max_memory_per_child_kb:
                argv += ["--max-memory-per-child", str(settings.tool_max_memory_per_child_kb)]
        env = dict(kind.env)
        if metrics_port is not None:
            env["SRH_METRICS_PORT"] = str(metrics_port + index)
            if metrics_addr is not None:
                env["SRH_METRICS_ADDR"] = metrics_addr
            shared = environ.get("PROMETHEUS_MULTIPROC_DIR")
            if shared and len(queues) > 1:  # two workers must never share one directory
                env["PROMETHEUS_MULTIPROC_DIR"] = os.path.join(shared, queue)
        commands.append(WorkerCommand(queue, tuple(argv), env))
    return commands


# ------------------------------------------------------------------- running
def _die_with_parent() -> None:
    # Linux: a worker gets SIGTERM if the supervisor dies without stopping it.
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def exit_code(returncode: int) -> int:
    """A child's return code as a shell exit code (killed by signal N -> 128 + N)."""
    return 128 - returncode if returncode < 0 else returncode


def supervise(commands: Sequence[WorkerCommand], *,
              grace_seconds: float = STOP_GRACE_SECONDS) -> int:
    """Run the workers until one exits; stop the others; return the first one's exit code.

    The first SIGTERM/SIGINT is forwarded to each worker as it came (each then
    bounds its own shutdown, :mod:`srh_workers.shutdown`); a second one is
    forwarded as SIGQUIT, Celery's cold shutdown: the workers hand their
    tasks back and exit at once. A worker still alive ``grace_seconds`` after
    the others were stopped is killed with its process group.
    """
    children = [subprocess.Popen(
        command.argv, env={**os.environ, **command.env}, start_new_session=True,
        preexec_fn=_die_with_parent if sys.platform == "linux" else None)
        for command in commands]
    received: list[int] = []

    def forward(signum: int, _frame: FrameType | None) -> None:
        received.append(signum)
        sent = signum if len(received) == 1 else signal.SIGQUIT
        for child in children:
            if child.poll() is None:
                child.send_signal(sent)

    previous = {signum: signal.signal(signum, forward) for signum in FORWARDED_SIGNALS}
    try:
        first = _wait_for_first(children)
        for child in children:
            if child.poll() is None and not received:
                child.terminate()
        for child in children:
            try:
                child.wait(timeout=grace_seconds)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(child.pid, signal.SIGKILL)
                child.wait()
        return exit_code(first)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _wait_for_first(children: Sequence[subprocess.Popen[bytes]]) -> int:
    by_pid = {child.pid: child for child in children}
    while True:
        pid, status = os.wait()  # interrupted by a forwarded signal, then resumed (PEP 475)
        child = by_pid.get(pid)
        if child is not None:
            child.returncode = os.waitstatus_to_exitcode(status)
            return child.returncode


def run_worker(args: argparse.Namespace) -> int:
    """Handler of ``srh worker``: exec one worker, or supervise one per queue kind."""
    if args.action == "drain":
        return run_drain(args)
    if args.node is not None:
        raise ConfigurationError(f"srh worker takes no node name ({args.node!r}) unless it "
                                 "drains one: srh worker drain NODE.", setting="node")
    settings = WorkerSettings.from_env().check()
    commands = worker_commands(args.queues, settings, concurrency=args.concurrency,
                               loglevel=args.loglevel, hostname=args.hostname,
                               metrics_port=args.metrics_port,
                               metrics_addr=args.metrics_addr)
    if args.dry_run:
        for command in commands:
            print(command.render())
        return 0
    if len(commands) == 1:
        command = commands[0]
        os.execvpe(command.argv[0], list(command.argv), {**os.environ, **command.env})
    return supervise(commands, grace_seconds=settings.shutdown_grace + HARD_EXIT_SECONDS
                     + STOP_MARGIN_SECONDS)


def run_drain(args: argparse.Namespace) -> int:
    """``srh worker drain NODE [--undo]``: stop (or restart) a worker's consuming."""
    from srh_workers.app import get_app
    from srh_workers.store.client import redis_client
    from srh_workers.store.cluster import ClusterIndex

    if not args.node:
        raise ConfigurationError("srh worker drain needs the node name of a worker (srh status "
                                 "lists them).", setting="node")
    settings = WorkerSettings.from_env()
    app = get_app()
    index = ClusterIndex(redis_client(str(settings.redis_url)))
    node = args.node
    # limit=1: the one node's reply ends the wait (only an unknown node waits the timeout)
    answered = app.control.inspect(destination=[node], timeout=DRAIN_TIMEOUT,
                                   limit=1).active_queues()
    if not answered or node not in answered:
        raise ConfigurationError(f"No worker {node!r} answers; srh status lists the workers "
                                 "that do.", setting="node")
    if args.undo:
        drained = index.drained_worker(node)
        queues = list(drained["queues"]) if drained else list(QUEUES)
        for queue in queues:
            app.control.add_consumer(queue, destination=[node], reply=True,
                                     timeout=DRAIN_TIMEOUT, limit=1)
        index.undrain_worker(node)
        print(f"{node} consumes {', '.join(queues)} again.")
        return 0
    queues = sorted({queue["name"] for queue in answered[node]} & set(QUEUES)) or (
        (index.drained_worker(node) or {}).get("queues") or [])
    for queue in queues:
        app.control.cancel_consumer(queue, destination=[node], reply=True,
                                    timeout=DRAIN_TIMEOUT, limit=1)
    index.drain_worker(node, queues)
    print(f"{node} drained: it takes no new task from {', '.join(queues) or 'its queues'}; "
          "its running tasks finish. Stop it once srh status shows it idle "
          f"(srh worker drain {node} --undo to take it back).")
    return 0


def add_worker_command(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register ``srh worker`` on the ``srh`` CLI's subparsers."""
    parser = subparsers.add_parser(
        "worker", help="start Celery workers (tools: prefork, branches: threads)",
        description="Start Celery workers with the right pool per queue: tools on prefork "
                    "with OMP_NUM_THREADS=1, branches on threads.")
    parser.add_argument("action", nargs="?", choices=("drain",), default=None,
                        help="drain NODE: the worker takes no new task, its running tasks "
                             "finish (then stop it); with --undo it takes tasks again")
    parser.add_argument("node", nargs="?", default=None, metavar="NODE",
                        help="the worker's node name, as srh status lists it")
    parser.add_argument("--undo", action="store_true",
                        help="with drain: the drained worker consumes its queues again")
    parser.add_argument("--queues", type=parse_queues, default=(TOOLS_QUEUE, BRANCHES_QUEUE),
                        help="comma-separated queues: tools, branches (default: both, as two "
                             "supervised worker processes)")
    parser.add_argument("--concurrency", type=_positive_int, default=None,
                        help=f"pool size of each worker (default: CPU count for tools, "
                             f"{DEFAULT_BRANCH_THREADS} threads for branches)")
    parser.add_argument("--loglevel", default="INFO", type=str.upper, choices=LOG_LEVELS,
                        help="Celery log level (default: INFO)")
    parser.add_argument("--hostname", default=None,
                        help="Celery node name (default: <queue>-<pid>@%%h, unique per host)")
    parser.add_argument("--metrics-port", type=int, default=None,
                        help="serve Prometheus metrics on this port (the second worker "
                             "uses the next one)")
    parser.add_argument("--metrics-addr", default=None,
                        help=f"address the metrics bind (default: SRH_METRICS_ADDR, else "
                             f"{DEFAULT_METRICS_ADDR}; 0.0.0.0 to be scraped from other hosts)")
    parser.add_argument("--dry-run", action="store_true",
                        help="print the worker commands instead of running them")
    parser.set_defaults(handler=run_worker)
    return parser


def run_metrics(args: argparse.Namespace) -> int:
    """Handler of ``srh metrics``: serve the queue gauges until interrupted."""
    from srh_workers.observability.metrics import run_exporter

    settings = WorkerSettings.from_env()
    if importlib.util.find_spec("prometheus_client") is None:
        raise ConfigurationError("srh metrics needs prometheus-client: pip install 'srh[metrics]'",
                                 setting="metrics")
    run_exporter(settings.broker_url, args.queues, args.port, addr=args.addr)
    return 0


def add_metrics_command(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register ``srh metrics`` (a Prometheus exporter of queue depths, no worker needed)."""
    parser = subparsers.add_parser(
        "metrics", help="serve Prometheus queue-depth metrics read from the broker")
    parser.add_argument("--port", type=int, default=DEFAULT_METRICS_PORT,
                        help=f"HTTP port (default: {DEFAULT_METRICS_PORT})")
    parser.add_argument("--addr", default=DEFAULT_METRICS_ADDR,
                        help=f"bind address (default: {DEFAULT_METRICS_ADDR}; 0.0.0.0 to be "
                             "scraped from other hosts)")
    parser.add_argument("--queues", type=parse_queues, default=QUEUES,
                        help="comma-separated queues to report (default: all)")
    parser.set_defaults(handler=run_metrics)
    return parser


def build_parser() -> argparse.ArgumentParser:
    """A parser with ``worker`` and ``metrics`` alone (``python -m srh_workers.cli``)."""
    parser = argparse.ArgumentParser(prog="srh")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    add_worker_command(subparsers)
    add_metrics_command(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m srh_workers.cli``."""
    from srh_core.errors import SRHarnessError

    args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args))
    except SRHarnessError as error:
        print(f"srh: error: {error}", file=sys.stderr)
        return 2



"""Shared helpers of the worker tests: real worker subprocesses and condition waits."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.waits import START_SECONDS

ROOT = Path(__file__).resolve().parents[2]
#: A worker's start (interpreter, Celery, its pool): a wait only against a hang.
WORKER_START_DEADLINE = START_SECONDS
STOP_DEADLINE = 15.0
POLL_SECONDS = 0.05


def wait_until(predicate: Callable[[], object], deadline: float, what: str) -> object:
    """Poll ``predicate`` until it returns a truthy value; fail with ``what`` after the deadline."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(POLL_SECONDS)
    pytest.fail(f"timed out after {deadline:.0f} s waiting for {what}")


def session_processes(session: int) -> dict[int, str]:
    """Live processes of a session (pid -> command line), wherever they were re-parented.

    A worker started by :meth:`WorkerProcess.start` leads its own session, so
    whatever it starts (pool children, search islands, their helpers) is in it.
    """
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = (Path("/proc") / entry / "stat").read_bytes().rsplit(b")", 1)[1].split()
            command = (Path("/proc") / entry / "cmdline").read_bytes()
        except (OSError, IndexError):
            continue
        if int(fields[3]) == session and fields[0] not in (b"Z", b"X"):
            found[int(entry)] = command.replace(b"\0", b" ").decode(errors="replace")
    return found


def worker_env(redis_url: str, **extra: str) -> dict[str, str]:
    """The environment of a worker subprocess: no inherited SRH_* variable, a private Redis."""
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("SRH_", "PROMETHEUS_"))}
    env.update({"SRH_BROKER_URL": redis_url, "SRH_TASK_MODULES": "none",
                "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])),
                "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
                # the offline proposer's search step, as in the test process (tests/conftest.py):
                # both runtimes must read the same setting to make the same calls
                "SRH_OFFLINE_SEARCH_SECONDS": os.environ.get("SRH_OFFLINE_SEARCH_SECONDS", "0")})
    env.update(extra)
    return env


@dataclass
class WorkerProcess:
    """A worker (or ``srh worker`` supervisor) subprocess with its log file."""

    process: subprocess.Popen[bytes]
    log: Path

    @classmethod
    def start(cls, argv: Sequence[str], env: Mapping[str, str], log: Path) -> WorkerProcess:
        stream = log.open("ab")
        try:
            process = subprocess.Popen(list(argv), env=dict(env), cwd=ROOT, stdout=stream,
                                       stderr=subprocess.STDOUT, start_new_session=True)
        finally:
            stream.close()
        return cls(process, log)

    @classmethod
    def celery(cls, env: Mapping[str, str], log: Path, *, queue: str = "tools",
               pool: str = "prefork", concurrency: int = 1) -> WorkerProcess:
        argv = [sys.executable, "-m", "celery", "-A", "srh_workers.app", "worker", "-Q", queue,
                "-P", pool, "-c", str(concurrency), "--prefetch-multiplier", "1", "-E",
                "-n", f"{queue}-{log.stem}@%h", "-l", "INFO", "--without-mingle",
                "--without-gossip"]
        return cls.start(argv, env, log)

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self, sig: int = signal.SIGTERM) -> int:
        """Stop the whole process group; return the exit code."""
        if self.alive:
            os.killpg(self.process.pid, sig)
            try:
                self.process.wait(timeout=STOP_DEADLINE)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=STOP_DEADLINE)
        # children of a killed supervisor must not outlive the test
        for _ in range(2):
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                break
        return int(self.process.returncode)


def deliver(task: Any, task_id: str, *args: Any, retries: int = 0) -> Any:
    """Run the Celery ``task`` as a worker would run one delivery of message ``task_id``."""
    task.push_request(id=task_id, retries=retries, called_directly=False, is_eager=False,
                      args=list(args), kwargs={}, hostname="test@host",
                      delivery_info={"routing_key": "tools"})
    try:
        return task(*args)
    finally:
        task.pop_request()

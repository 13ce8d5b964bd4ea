"""A private Redis and real worker processes for the cluster tests (the ``cluster`` fixture).

Workers run with short limits (visibility timeout 12 s, restore sweep every
second) because every task is short by design; a message held by a worker
that vanished therefore comes back within visibility + restore interval.
The tests that kill a worker to watch that happen pass :data:`QUICK_RECOVERY_ENV`
(visibility 9 s). Start a test's workers with :meth:`Cluster.start_together`, so
their start-ups overlap.
"""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import redis

from srh_core.agent import SearchSettings, SRAgent
from srh_workers.app import make_app
from srh_workers.config import WorkerSettings
from srh_workers.flow.tasks import sender
from srh_workers.submit import submit_run, wait_for_result
from tests.workers.support import WORKER_START_DEADLINE, WorkerProcess, wait_until, worker_env

VISIBILITY = 12
RECOVERY_TARGET_SECONDS = 120
CLUSTER_ENV = {
    "SRH_VISIBILITY_TIMEOUT": str(VISIBILITY), "SRH_RESTORE_INTERVAL": "1",
    "SRH_TOOL_SOFT_LIMIT": "6", "SRH_TOOL_HARD_LIMIT": "8",
    "SRH_BRANCH_SOFT_LIMIT": "6", "SRH_BRANCH_HARD_LIMIT": "8", "SRH_RETRY_BACKOFF_MAX": "2",
    "SRH_TASK_MODULES": "srh_workers.flow.tasks,tests.workers.cluster_plugins",
    "SRH_LOG_FORMAT": "text",
}
# For the tests that SIGKILL a worker and wait for its held message to come back: the
# documented limits set lower still (the tasks of those tests sleep at most 1.5 s, so a
# soft limit of 5 s keeps over 3x headroom), so the wait after the kill is 9 s, not 12 s.
QUICK_VISIBILITY = 9
QUICK_RECOVERY_ENV = {
    "SRH_VISIBILITY_TIMEOUT": str(QUICK_VISIBILITY), "SRH_RETRY_BACKOFF_MAX": "1",
    "SRH_TOOL_SOFT_LIMIT": "5", "SRH_TOOL_HARD_LIMIT": "6",
    "SRH_BRANCH_SOFT_LIMIT": "5", "SRH_BRANCH_HARD_LIMIT": "6",
}


class Cluster:
    """A private Redis plus worker processes, and a producer app to submit with."""

    def __init__(self, url: str, directory: Path, **extra_env: str) -> None:
        self.url = url
        self.directory = directory
        self.env = worker_env(url, SRH_RUNS_DIR=str(directory / "runs"),
                              **{**CLUSTER_ENV, **extra_env})
        self.workers: list[WorkerProcess] = []
        producer_env = {key: value for key, value in self.env.items() if key.startswith("SRH_")}
        self.app = make_app(WorkerSettings.from_env({**producer_env,
                                                     "SRH_TASK_MODULES": "none"}))
        self.client = redis.Redis.from_url(url)

    def start(self, queue: str, *, pool: str | None = None, concurrency: int = 1,
              wait: bool = True, **extra_env: str) -> WorkerProcess:
        """Start a worker of ``queue``; with ``wait``, until it is ready (see :meth:`ready`)."""
        pool = pool or ("prefork" if queue == "tools" else "threads")
        log = self.directory / f"{queue}-{len(self.workers)}.log"
        worker = WorkerProcess.celery({**self.env, **extra_env}, log, queue=queue, pool=pool,
                                      concurrency=concurrency)
        self.workers.append(worker)
        if wait:
            self.ready(worker, queue)
        return worker

    @staticmethod
    def ready(worker: WorkerProcess, queue: str = "a") -> WorkerProcess:
        """Wait until a started worker says it is ready (workers may start side by side)."""
        wait_until(lambda: "ready." in worker.log_text() or not worker.alive,
                   WORKER_START_DEADLINE, f"{queue} worker to start")
        assert worker.alive, worker.log_text()[-2000:]
        return worker

    def start_together(self, *workers: tuple[str, dict[str, Any]]) -> list[WorkerProcess]:
        """Start workers side by side, each ``(queue, keyword arguments of start)``, then wait
        until every one is ready (one start-up's wait instead of one per worker)."""
        started = [self.start(queue, wait=False, **options) for queue, options in workers]
        for worker, (queue, _) in zip(started, workers, strict=True):
            self.ready(worker, queue)
        return started

    def start_pair(self, **extra_env: str) -> list[WorkerProcess]:
        """A branches worker and a tools worker (one process each), started side by side."""
        return self.start_together(*((queue, {"concurrency": 1, **extra_env})
                                     for queue in ("branches", "tools")))

    def submit(self, settings: SearchSettings, X: dict[str, Any], y: dict[str, Any],
               agent_class: type[SRAgent] = SRAgent) -> str:
        return submit_run(self.client, sender(self.app), settings, X, y, "find y",
                          agent_class=agent_class).run_id

    def result(self, run_id: str, timeout: float = 150) -> Any:
        return wait_for_result(self.client, run_id, timeout=timeout, poll=0.2)

    def close(self) -> None:
        for worker in self.workers:
            worker.stop(signal.SIGKILL)


def lab_endpoint(directory: Path, base_url: str) -> dict[str, str]:
    """An endpoints file naming ``base_url`` (a scripted model server) endpoint "lab";
    the environment that gives workers (and a submitter) that endpoint and its key."""
    path = directory / "endpoints.toml"
    path.write_text(f'[endpoints.lab]\nprovider = "openai"\nbase_url = "{base_url}"\n'
                    'api_key_env = "LAB_KEY"\nmodel = "m"\n', encoding="utf-8")
    return {"SRH_ENDPOINTS": str(path), "LAB_KEY": "sk-operator"}

"""A stopping worker ends within seconds and loses no task: what runs past a grace is handed back.

Celery's SIGTERM (and a first Ctrl-C) is a warm shutdown: the worker stops
taking tasks and waits for the running ones however long they take (a tool
task up to its hard time limit; a task of the threads pool, which enforces no
limit, for ever), until a service manager's stop timeout SIGKILLs it. Here the
wait is bounded by :class:`ShutdownBound`, started by Celery's
``worker_shutting_down`` signal in the worker's main process:

- the running tasks get ``SRH_SHUTDOWN_GRACE`` seconds to finish (a task that
  finishes is acknowledged as usual);
- still running then, a prefork worker starts Celery's own cold shutdown
  (SIGQUIT to itself, what a second Ctrl-C does): the children running tasks
  are terminated and their messages, unacknowledged (``task_acks_late``), are
  restored to their queue when the worker closes its broker channel, so
  another worker runs them at once (every task is idempotent). Celery's
  threads and solo pools cannot cancel a task (they have no ``terminate_job``),
  so on those the bound hands the messages back itself and exits;
- :data:`HARD_EXIT_SECONDS` later, a worker still alive (any pool) hands back
  what it holds, kills its child processes (pool children, search islands)
  and exits with :data:`HARD_EXIT_STATUS`.

On a Redis broker, a message handed back goes to the head of its queue; on
RabbitMQ the broker requeues what a closed connection held unacknowledged.
A worker that is SIGKILLed hands nothing back: its messages come back after
the visibility timeout, and its children die with it (prefork children by
Celery's ``PR_SET_PDEATHSIG``, search islands by
:func:`srh_engine.processes.end_with_parent`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
from typing import Any

logger = logging.getLogger("srh.workers.shutdown")

#: Seconds after the grace before a worker that is still alive exits by force.
HARD_EXIT_SECONDS = 3.0
#: Exit status of a worker ended by force (Celery's cold shutdown exits 1 too).
HARD_EXIT_STATUS = 1


class ShutdownBound:
    """Bounds one worker process's shutdown (see the module docstring).

    Args:
        grace: Seconds the running tasks get once the shutdown begins.
        hard_exit_seconds: Seconds after the grace before the process exits by force.
    """

    def __init__(self, grace: float, hard_exit_seconds: float = HARD_EXIT_SECONDS) -> None:
        self.grace = grace
        self.hard_exit_seconds = hard_exit_seconds
        self.worker: Any = None
        self._thread: threading.Thread | None = None
        self.cold = False  # Celery's cold shutdown began (it cancels the tasks itself)

    def attach(self, worker: Any) -> None:
        """The worker (Celery's ``WorkController``) whose shutdown this bounds."""
        self.worker = worker

    def begin(self, sig: str | None = None, how: str | None = None, **_: Any) -> None:
        """Celery's ``worker_shutting_down`` receiver (in the main process's signal handler).

        The first stop signal starts the clock; a second Ctrl-C ends the worker
        at once (Celery's cold shutdown on prefork, a hand-back and exit otherwise).
        """
        if self.worker is None:
            return
        self.cold = self.cold or how == "Cold"
        if self._thread is None:
            self._thread = threading.Thread(target=self._watch, name="srh-shutdown-bound",
                                            daemon=True)
            self._thread.start()
            if not _is_prefork(self.worker):
                # Celery's cold shutdown cannot cancel a task of these pools (it raises
                # NotImplementedError from the signal handler and waits on)
                for name in ("SIGINT", "SIGQUIT"):
                    signal.signal(getattr(signal, name), self._second_signal)
        elif how == "Warm" and sig == "SIGINT":  # Ctrl-C after SIGTERM: Celery only warns
            self.stop_at_once()

    def _second_signal(self, _signum: int, _frame: Any) -> None:
        self.exit_now("stopped by a second signal")

    def stop_at_once(self) -> None:
        """Cancel the running tasks and hand them back now."""
        if _is_prefork(self.worker):
            os.kill(os.getpid(), signal.SIGQUIT)  # Celery's cold shutdown
        else:
            self.exit_now("stopped by a second signal")

    def _watch(self) -> None:
        if not self.cold:  # a cold shutdown (second Ctrl-C, SIGQUIT) cancels the tasks itself
            time.sleep(self.grace)  # the thread ends with the process: a clean exit ends it
            self._grace_over()
        time.sleep(self.hard_exit_seconds)
        self.exit_now(f"still alive {self.hard_exit_seconds:g} s after the cold shutdown began")

    def _grace_over(self) -> None:
        if self.cold:  # a second Ctrl-C began it meanwhile
            return
        if not _is_prefork(self.worker):
            self.exit_now("still running after the shutdown grace")
        logger.warning("tasks still running %g s into the shutdown: cancelling them and "
                       "handing their messages back (cold shutdown)", self.grace)
        os.kill(os.getpid(), signal.SIGQUIT)

    def exit_now(self, why: str) -> None:
        """Hand back the messages held, kill the child processes and exit at once."""
        handed = hand_back(self.worker)
        killed = kill_children(os.getpid())
        logger.warning("worker %s: handed %d message(s) back to the broker, killed %d child "
                       "process(es), exiting", why, handed, killed)
        for handler in logging.getLogger().handlers:
            with contextlib.suppress(Exception):
                handler.flush()
        os._exit(HARD_EXIT_STATUS)


def _is_prefork(worker: Any) -> bool:
    from celery.concurrency.prefork import TaskPool

    return isinstance(getattr(worker, "pool", None), TaskPool)


def hand_back(worker: Any) -> int:
    """Restore the messages ``worker`` holds unacknowledged to their queues; how many.

    Only a virtual transport (Redis) keeps them in the worker; with RabbitMQ the
    broker requeues them when the connection closes, and this does nothing.
    """
    consumer = getattr(getattr(worker, "consumer", None), "task_consumer", None)
    qos = getattr(getattr(consumer, "channel", None), "qos", None)
    delivered = getattr(qos, "_delivered", None)
    if qos is None or not hasattr(qos, "restore_unacked_once"):
        return 0
    count = len(delivered or ())
    try:
        qos.restore_unacked_once()
    except Exception as error:  # the broker is gone: the visibility timeout brings them back
        logger.warning("could not hand the messages back (%r): they are re-delivered after "
                       "the visibility timeout", error)
        return 0
    return count


def child_pids(parent: int) -> list[int]:
    """The processes whose parent is ``parent`` (Linux ``/proc``; none elsewhere)."""
    children = []
    with contextlib.suppress(OSError):
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat", "rb") as stat:
                    fields = stat.read().rsplit(b")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[1]) == parent and fields[0] not in (b"Z", b"X"):
                children.append(int(entry))
    return children


def kill_children(parent: int) -> int:
    """SIGKILL every child of ``parent``; how many were sent the signal."""
    killed = 0
    for pid in child_pids(parent):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
            killed += 1
    return killed


__all__ = ["HARD_EXIT_SECONDS", "HARD_EXIT_STATUS", "ShutdownBound", "child_pids",
           "hand_back", "kill_children"]

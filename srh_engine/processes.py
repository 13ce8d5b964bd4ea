"""Processes that end with their owner.

Every process the project starts has an owner, and ends when the owner does:

- a child calls :func:`end_with_parent` first thing (a pool's initializer):
  a daemon thread checks that the parent process is still alive and ends the
  child within :data:`PARENT_CHECK_SECONDS` of its death, however it died
  (SIGKILL included), and on SIGTERM exits as a multiprocessing child does
  (its finalizers run: its own pools stop, their semaphores are released)
  wherever it was, even inside a task (a pool worker would catch ``SystemExit``
  there and wait for the next task).
  Linux's ``PR_SET_PDEATHSIG`` alone is not enough for
  pool workers: it fires when the *thread* that started the child ends, and
  a pool starts its workers from whichever thread submits first (a branch
  thread that ends with its restart, say). The child also ignores SIGINT:
  a terminal sends Ctrl-C to the whole process group, and it is the owner
  that decides what an interrupt means (the child would print a traceback);
- where the starting thread waits for its child (a sandboxed program,
  srh_core/sandbox/bootstrap.py), ``PR_SET_PDEATHSIG`` with SIGKILL is exact
  and needs no thread in the child, so it holds even while the child is stuck
  in C code that never releases the GIL;
- the owner stops a pool with :func:`stop_pool`: a bounded shutdown (the
  pool's own, then terminate, then kill), never a join that can wait forever.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing.util
import os
import signal
import threading
import time
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from typing import Any

__all__ = ["PARENT_CHECK_SECONDS", "STOP_SECONDS", "end_with_parent", "interrupt_on",
           "pid_running", "pool_processes", "stop_pool", "stop_processes",
           "stop_signals_received"]

#: How often a child checks that its parent is alive.
PARENT_CHECK_SECONDS = 0.25
#: Default bound of a pool's shutdown, before its processes are terminated.
STOP_SECONDS = 5.0
#: After SIGTERM, how long a process gets before SIGKILL.
KILL_SECONDS = 2.0
#: Exit status of a child that ended because its parent had died.
ORPHAN_EXIT = 70

logger = logging.getLogger("srh.processes")


def end_with_parent(parent_pid: int | None = None) -> None:
    """Make this process end soon after its parent process ends; ignore SIGINT.

    SIGTERM ends it cleanly, at once (its multiprocessing finalizers run).

    Args:
        parent_pid: The owner's pid (default: the current parent). A child
            started by a parent that is already gone ends at once.
    """
    parent = os.getppid() if parent_pid is None else parent_pid
    with contextlib.suppress(ValueError):  # not the main thread: keep the handlers
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, _exit_on_sigterm)
    if os.getppid() != parent:
        os._exit(ORPHAN_EXIT)
    threading.Thread(target=_watch_parent, args=(parent,), name="srh-parent-watch",
                     daemon=True).start()


def _exit_on_sigterm(signum: int, _frame: object) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends it at once
    try:
        multiprocessing.util._exit_function()  # what a child runs when its target returns
    finally:
        os._exit(128 + signum)


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(PARENT_CHECK_SECONDS)
    os._exit(ORPHAN_EXIT)  # the owner is gone: nobody reads what this process would do


_stop_signals: list[int] = []


def interrupt_on(signals: tuple[int, ...] = (signal.SIGINT, signal.SIGTERM)) -> None:
    """The first of ``signals`` raises ``KeyboardInterrupt`` in the main thread; the
    second ends the process at once (exit status 128 + signal).

    What Ctrl-C does for a run (record, write the result, stop the pools) for
    every stop signal: a batch scheduler sends SIGTERM, and it must leave a
    resumable run too. Call from the main thread.
    """
    _stop_signals.clear()
    for signum in signals:
        signal.signal(signum, _interrupt)


def stop_signals_received() -> tuple[int, ...]:
    """The stop signals :func:`interrupt_on` has seen, first first."""
    return tuple(_stop_signals)


def _interrupt(signum: int, _frame: object) -> None:
    _stop_signals.append(signum)
    if len(_stop_signals) > 1:
        os.write(2, b"stopped at once (second signal)\n")
        os._exit(128 + signum)
    raise KeyboardInterrupt


def available_cores() -> int:
    """The cores this process may use (its CPU affinity), at least one."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def pool_processes(pool: ProcessPoolExecutor) -> list[Any]:
    """The worker processes of ``pool`` now (empty once it has shut down)."""
    processes = getattr(pool, "_processes", None) or {}
    return list(processes.values())


def stop_pool(pool: ProcessPoolExecutor | None, timeout: float = STOP_SECONDS) -> None:
    """Shut ``pool`` down within about ``timeout`` + :data:`KILL_SECONDS` seconds (3 x
    :data:`KILL_SECONDS` at worst: terminate, kill, then its manager thread).

    Pending calls are cancelled; a worker still busy when the time is up is
    terminated, then killed. Never raises.
    """
    if pool is None:
        return
    processes = pool_processes(pool)
    # shutdown() forgets the manager thread: once the workers are gone it closes the
    # pool's queues, and their semaphores go with them; a process that exits before that
    # with os._exit (the CLI's bounded exit) left them to the resource tracker's warning
    manager = getattr(pool, "_executor_manager_thread", None)
    try:
        pool.shutdown(wait=False, cancel_futures=True)
    except Exception:  # noqa: BLE001 - a broken pool is stopped by its processes below
        logger.debug("Pool shutdown raised", exc_info=True)
    stop_processes(processes, timeout)
    if manager is not None and manager is not threading.current_thread():
        manager.join(KILL_SECONDS)


def stop_processes(processes: Iterable[Any], timeout: float = STOP_SECONDS) -> None:
    """Wait up to ``timeout`` for ``processes`` to end, then terminate, then kill them.

    Args:
        processes: ``multiprocessing.Process``-like objects (join, is_alive,
            terminate, kill).
        timeout: Seconds they get to end on their own (0: terminate at once).
    """
    processes = list(processes)
    deadline = time.monotonic() + max(0.0, timeout)
    for process in processes:
        if _alive(process):
            process.join(max(0.0, deadline - time.monotonic()))
    for ending, grace in ((_terminate, KILL_SECONDS), (_kill, KILL_SECONDS)):
        alive = [process for process in processes if _alive(process)]
        if not alive:
            return
        logger.debug("%s %s", ending.__name__.strip("_"), [p.pid for p in alive])
        for process in alive:
            ending(process)
        until = time.monotonic() + grace
        for process in alive:
            if _alive(process):
                process.join(max(0.0, until - time.monotonic()))
    for process in processes:
        if _alive(process):
            logger.warning("Process %s did not end after SIGKILL", process.pid)


def _alive(process: Any) -> bool:
    """Whether ``process`` still runs (a zombie, or one reaped by another thread, does not)."""
    try:
        if not process.is_alive():
            return False
    except (OSError, ValueError, AssertionError):
        return False
    return pid_running(process.pid)


def pid_running(pid: int | None) -> bool:
    """Whether ``pid`` names a process that has not exited (zombies have)."""
    if pid is None:
        return False
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
    except FileNotFoundError:
        return False
    except (OSError, IndexError):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


def _terminate(process: Any) -> None:
    with contextlib.suppress(OSError, ValueError):
        process.terminate()


def _kill(process: Any) -> None:
    with contextlib.suppress(OSError, ValueError):
        process.kill()

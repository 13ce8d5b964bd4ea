"""Waiting for a sandboxed child: deadlines, interruption, floods, disk budget, reaping.

The parent side of one run after the child started: poll until it exits or
must be killed, kill its whole process group, reap it with ``wait4`` (for its
own rusage) and read the small reports it left on its pipes.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from srh_core.sandbox import limits as lim
from srh_core.sandbox.disk import DiskBudget
from srh_core.sandbox.streams import BoundedReader

MAX_STATUS_BYTES = 64 * 1024


@dataclass(frozen=True)
class ChildExit:
    """How the child ended: wait status, rusage, wall time, why it was killed, peak RSS."""

    status: int
    rusage: object
    duration: float
    reason: str | None
    peak_rss: int = 0


def resident_peak(pid: int) -> int:
    """The child's resident high-water mark (VmHWM) in bytes; 0 once it has exited.

    Sampled while the child runs because ``wait4``'s ``ru_maxrss`` is no
    use here: Linux carries the parent's high-water mark across fork and
    exec, so a large parent (a long test session, a worker) would be
    reported as the child's peak.
    """
    try:
        with open(f"/proc/{pid}/status", "rb") as handle:
            for line in handle:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return 0
    return 0


def _exit_waiter(pid: int) -> tuple[Callable[[float], object], int | None]:
    """Return a function waiting up to ``seconds`` for the child's exit, and its pidfd."""
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        return lambda seconds: time.sleep(seconds), None

    def wait(seconds: float) -> None:
        select.select([pidfd], [], [], seconds)

    return wait, pidfd


def _has_exited(pid: int) -> bool:
    # WNOWAIT leaves the child a zombie, so its pid (= process group id)
    # cannot be reused before the group is killed below.
    return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None


def kill_group(pid: int) -> None:
    """SIGKILL the child's process group (the child leads it)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _kill_reason(deadline: float, event: threading.Event | None,
                 readers: tuple[BoundedReader, BoundedReader], disk: DiskBudget) -> str | None:
    if time.monotonic() >= deadline:
        return "timeout"
    if event is not None and event.is_set():
        return "interrupted"
    if any(reader.flooded.is_set() for reader in readers):
        return "output_limit"
    if disk.exceeded():
        return "disk_limit"
    return None


def wait_for_child(
    process: subprocess.Popen,
    limits: lim.SandboxLimits,
    event: threading.Event | None,
    readers: tuple[BoundedReader, BoundedReader],
    disk: DiskBudget,
) -> ChildExit:
    """Poll the child until it exits or a limit kills it; reap it."""
    start = time.monotonic()
    deadline = start + limits.timeout_seconds
    wait, pidfd = _exit_waiter(process.pid)
    reason, peak = None, 0
    try:
        while not _has_exited(process.pid):
            peak = max(peak, resident_peak(process.pid))
            reason = _kill_reason(deadline, event, readers, disk)
            if reason is not None:
                break
            wait(min(lim.POLL_INTERVAL_SECONDS, max(deadline - time.monotonic(), 0.001)))
        kill_group(process.pid)  # also ends anything the program left behind
        _, status, rusage = os.wait4(process.pid, 0)
    finally:
        if pidfd is not None:
            os.close(pidfd)
    process.returncode = os.waitstatus_to_exitcode(status)
    return ChildExit(status, rusage, time.monotonic() - start, reason, peak)


def read_report(fd: int, *, waiting: bool = True) -> dict:
    """Read and close a report pipe: a JSON object, or {} for anything else.

    ``waiting=False`` reads only what is already in the pipe: a process the
    program left behind may still hold the write end open.
    """
    os.set_blocking(fd, waiting)
    with os.fdopen(fd, "rb") as handle:
        try:
            data = handle.read(MAX_STATUS_BYTES)
        except BlockingIOError:
            data = b""
    try:
        report = json.loads(data.decode("utf-8")) if data else {}
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        return {}
    return report if isinstance(report, dict) else {}


def killed_reason(reason: str | None, exit_code: int, cpu: float, cpu_limit: int) -> str | None:
    """Why the child was killed, in the words of ``SandboxResult.killed_reason``."""
    if reason is not None or exit_code >= 0:
        return reason
    number = -exit_code
    if number == signal.SIGXCPU or (number == signal.SIGKILL and cpu >= cpu_limit - 0.05):
        return "cpu_limit"
    try:
        return f"signal {signal.Signals(number).name}"
    except ValueError:
        return f"signal {number}"

"""Finding the processes a test left behind.

A process is the test's when it was started during the test and is either a
descendant of the test process through processes that are also new (a
server or worker started by a module- or session-scoped fixture before the
test, and its own children, are not the test's), or carries the test's token
in its environment (so a process that escaped into its own session and was
re-parented to init is still found). Zombies have ended and do not count.

A longer-lived fixture that starts a process during a test (a module's
cluster reviving a worker the test killed) owns it: it calls :func:`adopt`,
and that process and its children are not the test's.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterable
from dataclasses import dataclass

#: The environment variable holding the running test's token.
TOKEN_VARIABLE = "SRH_TEST_PROCESS_TOKEN"
#: Processes the interpreter owns for its whole life (not any test's).
INTERPRETER_HELPERS = ("multiprocessing.resource_tracker", "multiprocessing.forkserver")


_adopted: set[int] = set()


def adopt(pid: int) -> None:
    """``pid`` (and its children) belongs to a fixture that outlives the test."""
    _adopted.add(pid)


@dataclass(frozen=True, slots=True)
class ProcessInfo:
    pid: int
    ppid: int
    state: str
    command: str


def pids() -> set[int]:
    """Every pid now."""
    return {int(name) for name in os.listdir("/proc") if name.isdigit()}


def info(pid: int) -> ProcessInfo | None:
    """The process's parent, state and command line, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stream:
            stat = stream.read()
        with open(f"/proc/{pid}/cmdline", "rb") as stream:
            command = stream.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return None
    fields = stat.rsplit(b")", 1)[1].split()
    return ProcessInfo(pid, int(fields[1]), fields[0].decode(), command)


def has_token(pid: int, token: str) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as stream:
            return f"{TOKEN_VARIABLE}={token}".encode() in stream.read().split(b"\0")
    except OSError:
        return False


def leftovers(root: int, before: set[int], token: str) -> list[ProcessInfo]:
    """Live processes started since ``before`` that belong to the test (see module doc)."""
    new = {pid: found for pid in pids() - before if (found := info(pid)) is not None}
    ours: list[ProcessInfo] = []
    for process in new.values():
        if process.state in ("Z", "X") or _interpreter_helper(process) or _is_adopted(process):
            continue
        if _new_descendant(process, new, root) or has_token(process.pid, token):
            ours.append(process)
    return ours


def _is_adopted(process: ProcessInfo) -> bool:
    current: ProcessInfo | None = process
    for _ in range(64):
        if current is None or current.pid <= 1:
            return False
        if current.pid in _adopted:
            return True
        current = info(current.ppid)
    return False


def _interpreter_helper(process: ProcessInfo) -> bool:
    return any(helper in process.command for helper in INTERPRETER_HELPERS)


def _new_descendant(process: ProcessInfo, new: dict[int, ProcessInfo], root: int) -> bool:
    """Whether the chain of parents reaches ``root`` through new processes only."""
    current = process
    for _ in range(64):
        if current.ppid == root:
            return True
        parent = new.get(current.ppid)
        if parent is None:
            return False
        current = parent
    return False


def wait_gone(root: int, before: set[int], token: str, seconds: float) -> list[ProcessInfo]:
    """The test's leftovers still alive after waiting up to ``seconds`` for them to end."""
    deadline = time.monotonic() + seconds
    while True:
        found = leftovers(root, before, token)
        if not found or time.monotonic() >= deadline:
            return found
        time.sleep(0.05)


def kill(processes: Iterable[ProcessInfo]) -> None:
    for process in processes:
        try:
            os.kill(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

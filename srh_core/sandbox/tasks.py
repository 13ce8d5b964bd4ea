"""The cap on a sandboxed child's tasks (processes and threads), parent side.

Two kernel mechanisms, the first that works here is used:

1. **pids cgroup**: a per-run cgroup with ``pids.max = PROCESS_LIMIT`` that the
   child joins before user code (threads count: each is a task). Found on the
   cgroup v1 ``pids`` hierarchy when it is writable (root), or under a
   delegated cgroup v2 directory named by ``SRH_SANDBOX_CGROUP`` (the operator
   gives the worker one, e.g. systemd ``Delegate=yes``; the directory's
   ``cgroup.subtree_control`` must hold ``pids``). Also a complete kill set:
   every member is killed when the run ends, whichever session it moved to.
2. **dedicated uid** (root without a usable cgroup): the child switches to a
   uid of its own, ``SANDBOX_UID_BASE + pid`` (unique among live processes),
   keeps only the file-access capabilities and sets ``RLIMIT_NPROC``, which
   the kernel enforces for every uid but 0 and for processes without
   ``CAP_SYS_RESOURCE``/``CAP_SYS_ADMIN``. Every task of that uid is killed at
   the end, and files it left in the workspace are given back to the parent's
   uid.

A non-root child without a cgroup keeps the earlier rule: ``RLIMIT_NPROC`` =
tasks its uid already runs + ``PROCESS_LIMIT`` (set by the bootstrap).
"""

from __future__ import annotations

import itertools
import os
import signal
import time
import uuid
from functools import lru_cache
from pathlib import Path

PIDS_CGROUP_ENV = "SRH_SANDBOX_CGROUP"
CGROUP_GROUP_NAME = "srh-sandbox"
#: Base of the dedicated uids: far above ordinary users, below 2**31.
SANDBOX_UID_BASE = 0x7A000000
CGROUP_REMOVE_ATTEMPTS = 50
CGROUP_REMOVE_PAUSE_SECONDS = 0.01
_sequence = itertools.count()


def _v1_pids_mount() -> str | None:
    try:
        with open("/proc/self/mountinfo", encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return None
    for line in lines:
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) >= 5 and len(tail) >= 3 and tail[0] == "cgroup":
            if "pids" in tail[2].split(","):
                return fields[4]
    return None


def _usable(base: str) -> bool:
    """Whether a per-run cgroup with a pids limit can be made under ``base``."""
    probe = Path(base) / f"probe-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    try:
        probe.mkdir()
    except OSError:
        return False
    try:
        return (probe / "pids.max").is_file() and os.access(probe / "cgroup.procs", os.W_OK)
    finally:
        _remove_dir(probe)


@lru_cache(maxsize=1)
def pids_cgroup_base() -> str | None:
    """The directory per-run pids cgroups are made in, or None (cached per process)."""
    candidates = []
    if delegated := os.environ.get(PIDS_CGROUP_ENV):
        candidates.append(delegated)
    if mount := _v1_pids_mount():
        candidates.append(os.path.join(mount, CGROUP_GROUP_NAME))
    for candidate in candidates:
        try:
            os.makedirs(candidate, exist_ok=True)
        except OSError:
            continue
        if _usable(candidate):
            _remove_stale(candidate)
            return candidate
    return None


def create_cgroup(limit: int) -> str | None:
    """Make a per-run cgroup allowing ``limit`` tasks; its path, or None."""
    base = pids_cgroup_base()
    if base is None:
        return None
    path = Path(base) / f"run-{os.getpid()}-{next(_sequence)}-{uuid.uuid4().hex[:8]}"
    try:
        path.mkdir()
        (path / "pids.max").write_text(str(limit), encoding="ascii")
    except OSError:
        _remove_dir(path)
        return None
    return str(path)


def kill_cgroup(path: str) -> list[int]:
    """SIGKILL every task in the cgroup; the pids signalled."""
    members = _members(Path(path) / "cgroup.procs")
    for pid in members:
        _kill(pid)
    return members


def release_cgroup(path: str) -> None:
    """Kill every task left in the cgroup and remove it (bounded retries)."""
    for _ in range(CGROUP_REMOVE_ATTEMPTS):
        if not kill_cgroup(path) and _remove_dir(Path(path)):
            return
        time.sleep(CGROUP_REMOVE_PAUSE_SECONDS)


def _members(procs: Path) -> list[int]:
    try:
        return [int(line) for line in procs.read_text(encoding="ascii").split()]
    except (OSError, ValueError):
        return []


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _remove_dir(path: Path) -> bool:
    try:
        path.rmdir()
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return True


def _remove_stale(base: str) -> None:
    """Remove empty per-run cgroups whose creating process is gone."""
    for entry in Path(base).glob("run-*"):
        creator = entry.name.split("-")[1]
        if creator.isdigit() and not Path(f"/proc/{creator}").exists():
            _remove_dir(entry)


def dedicated_uid(pid: int) -> int:
    """The uid a root child without a cgroup switches to."""
    return SANDBOX_UID_BASE + pid


def kill_uid(uid: int) -> None:
    """SIGKILL every process whose real uid is ``uid`` (the dedicated uid of a run)."""
    for entry in os.listdir("/proc"):
        if entry.isdigit() and _real_uid(entry) == uid:
            _kill(int(entry))


def _real_uid(pid: str) -> int | None:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as handle:
            for line in handle:
                if line.startswith("Uid:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def reclaim_files(root: str, uid: int) -> None:
    """Give files under ``root`` owned by ``uid`` to this process's uid and gid."""
    owner, group = os.geteuid(), os.getegid()
    for directory, names, files in os.walk(root):
        for name in (*names, *files):
            path = os.path.join(directory, name)
            try:
                if os.lstat(path).st_uid == uid:
                    os.lchown(path, owner, group)
            except OSError:
                continue

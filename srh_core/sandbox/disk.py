"""The disk budget of a sandboxed run, enforced by the supervisor.

The child may write its run directory and the workspace. Where the launcher
gives it a private mount namespace, the run directory is a size-limited tmpfs
(``srh_core.sandbox.containment.mount_scratch``) and the kernel refuses writes
past the budget. The workspace is a real directory on a shared file system,
so the supervisor enforces the same budget there (and on the run directory
when no tmpfs could be mounted): every ``DISK_POLL_INTERVAL_SECONDS`` it reads
the used space of the file systems involved (one ``statvfs`` each, which on
ext4 and tmpfs includes dirty, not yet written blocks); when it grew by more
than the budget since the start, it walks the writable roots and adds up the
blocks of the files changed since the start. Above the budget the child is
killed (``killed_reason="disk_limit"``); below it (another process wrote the
file system), the growth it cannot attribute is forgiven.

What it gives: total new data of one run is bounded by the budget plus what
the child writes in one poll interval (at page-cache speed, tens of MB);
single files are bounded anyway by ``RLIMIT_FSIZE``.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Sequence

DISK_POLL_INTERVAL_SECONDS = 0.02
CLOCK_MARGIN_SECONDS = 0.05
#: Entries visited per confirmation walk, at most (a bound on the supervisor's work).
MAX_WALK_ENTRIES = 200_000


def _used_bytes(path: str) -> int:
    try:
        info = os.statvfs(path)
    except OSError:
        return 0
    return (info.f_blocks - info.f_bfree) * info.f_frsize


class DiskBudget:
    """Watch the writable roots of one run against a byte budget.

    Args:
        roots: Directories the child may write.
        budget_bytes: New bytes the run may add to them.
    """

    def __init__(self, roots: Sequence[str], budget_bytes: int) -> None:
        self.roots = tuple(roots)
        self.budget_bytes = budget_bytes
        self.started = time.time()
        self._file_systems = self._distinct_file_systems()
        self._baseline = self._used()
        self._next_poll = time.monotonic() + DISK_POLL_INTERVAL_SECONDS

    def _distinct_file_systems(self) -> tuple[str, ...]:
        seen: dict[int, str] = {}
        for root in self.roots:
            try:
                seen.setdefault(os.stat(root).st_dev, root)
            except OSError:
                continue
        return tuple(seen.values())

    def _used(self) -> int:
        return sum(_used_bytes(path) for path in self._file_systems)

    def exceeded(self) -> bool:
        """Check (at most once per poll interval) whether the run wrote past its budget."""
        now = time.monotonic()
        if now < self._next_poll:
            return False
        self._next_poll = now + DISK_POLL_INTERVAL_SECONDS
        growth = self._used() - self._baseline
        if growth <= self.budget_bytes:
            return False
        written = self.written_bytes()
        if written > self.budget_bytes:
            return True
        self._baseline += growth - written  # someone else wrote: do not count it again
        return False

    def written_bytes(self) -> int:
        """Allocated bytes of the files under the roots changed since the start."""
        total, visited = 0, 0
        pending = list(self.roots)
        while pending and visited < MAX_WALK_ENTRIES:
            try:
                entries = list(os.scandir(pending.pop()))
            except OSError:
                continue
            for entry in entries:
                visited += 1
                total += self._entry_bytes(entry, pending)
        return total

    def _entry_bytes(self, entry: os.DirEntry, pending: list[str]) -> int:
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            return 0
        if stat.S_ISDIR(info.st_mode):
            pending.append(entry.path)
            return 0
        # ctime, which a program cannot set back, with a margin for the kernel's coarse clock
        recent = info.st_ctime >= self.started - CLOCK_MARGIN_SECONDS
        return info.st_blocks * 512 if recent and stat.S_ISREG(info.st_mode) else 0

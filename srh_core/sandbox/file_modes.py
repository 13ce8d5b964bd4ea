"""Setuid and setgid bits a sandboxed run left in its workspace, cleared after it.

The child may run as root; a root-owned setuid file it left in the workspace
would run as root for whoever starts it later. The audit hook and the
seccomp filter refuse such modes (see :mod:`srh_core.sandbox.confine`); this
is the defence behind them, run once every task of the run has been killed:
it walks the workspace without following symlinks and clears ``S_ISUID`` and
``S_ISGID`` on every regular file. A file with other hard links (whose other
names may be outside the workspace, e.g. a system binary) is not changed but
unlinked from the workspace. Directories keep their bits: a directory's
setgid bit only sets the group of new entries (and is inherited from the
workspace's own parent).
"""

from __future__ import annotations

import logging
import os
import stat

logger = logging.getLogger("srh.sandbox")

PRIVILEGE_MODE_BITS = stat.S_ISUID | stat.S_ISGID


def clear_privilege_bits(root: str) -> list[str]:
    """Clear setuid/setgid on the regular files under ``root``; the paths changed.

    Symlinks are neither followed nor changed; a file that cannot be changed
    is unlinked. Errors on single entries are logged, never raised.
    """
    changed: list[str] = []
    pending = [root]
    while pending:
        try:
            entries = list(os.scandir(pending.pop()))
        except OSError:
            continue
        for entry in entries:
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(info.st_mode):
                pending.append(entry.path)
            elif stat.S_ISREG(info.st_mode) and info.st_mode & PRIVILEGE_MODE_BITS:
                _clear(entry.path, info)
                changed.append(entry.path)
    if changed:
        logger.warning("cleared the setuid/setgid bits of %d file(s) a sandboxed program left "
                       "in %s: %s", len(changed), root, ", ".join(changed[:10]))
    return changed


def _clear(path: str, info: os.stat_result) -> None:
    mode = stat.S_IMODE(info.st_mode) & ~PRIVILEGE_MODE_BITS
    try:
        if info.st_nlink > 1:
            os.unlink(path)  # changing the mode would change its other names too
            return
        try:
            os.chmod(path, mode, follow_symlinks=False)
        except NotImplementedError:  # C libraries without a no-follow fchmodat
            _clear_through_descriptor(path, mode)
    except OSError as error:
        _remove(path, error)


def _clear_through_descriptor(path: str, mode: int) -> None:
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    fd = os.open(path, flags)
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            os.fchmod(fd, mode)
    finally:
        os.close(fd)


def _remove(path: str, error: OSError) -> None:
    try:
        os.unlink(path)
    except OSError as second:
        logger.error("could not clear the setuid/setgid bits of %s (%s) nor remove it (%s)",
                     path, error, second)

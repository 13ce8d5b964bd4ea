"""Task and disk containment applied by the bootstrap inside the child.

Runs in the sandboxed child before user code (standard library only, like
``confine.py``). Each function applies one mechanism, returns whether it took
effect and never raises:

- :func:`join_cgroup`: move this process into its per-run pids cgroup (made
  by the parent, see ``srh_core.sandbox.tasks``); every thread or process
  created afterwards counts against ``pids.max``.
- :func:`use_dedicated_uid`: for root without a cgroup, switch the real,
  effective and saved uid to a uid of this run only and keep just the
  file-access capabilities, so ``RLIMIT_NPROC`` applies (the kernel exempts
  uid 0 and holders of ``CAP_SYS_RESOURCE``/``CAP_SYS_ADMIN``).
- :func:`mount_scratch`: in the child's private mount namespace, mount a
  size-limited tmpfs over the run directory, so HOME, TMPDIR and the default
  working directory hold at most the disk budget (writes past it fail with
  ``ENOSPC``). The namespace, and the tmpfs with it, vanish when the child exits.
"""

from __future__ import annotations

import ctypes
import os

PR_SET_KEEPCAPS = 8
LINUX_CAPABILITY_VERSION_3 = 0x20080522
CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER = 1, 2, 3
#: What the child keeps after the uid switch: reading and writing the files
#: root could (Landlock and the audit hook still decide which), nothing else.
KEPT_CAPABILITIES = (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER)
MS_NOSUID, MS_NODEV, MS_NOEXEC = 2, 4, 8


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def join_cgroup(directory: str) -> bool:
    """Write this process's pid into ``directory/cgroup.procs``."""
    try:
        with open(os.path.join(directory, "cgroup.procs"), "w", encoding="ascii") as handle:
            handle.write(str(os.getpid()))
    except OSError:
        return False
    return True


def _set_capabilities(libc: ctypes.CDLL, kept: tuple[int, ...]) -> bool:
    mask = 0
    for capability in kept:
        mask |= 1 << capability
    header = _CapHeader(LINUX_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)(_CapData(mask, mask, 0), _CapData(0, 0, 0))
    return libc.capset(ctypes.byref(header), data) == 0


def use_dedicated_uid(uid: int, process_limit: int) -> bool:
    """Become ``uid`` (real, effective, saved) with the file capabilities only.

    Args:
        uid: The run's own uid (no other process uses it).
        process_limit: RLIMIT_NPROC for that uid: tasks this child may have.

    Returns:
        True when the uid, the capabilities and the limit are all in force.
    """
    import resource

    try:
        libc = _libc()
        if libc.prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) != 0:
            return False
        resource.setrlimit(resource.RLIMIT_NPROC, (process_limit, process_limit))
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
        libc.prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0)
        return _set_capabilities(libc, KEPT_CAPABILITIES) and os.getuid() == uid
    except (OSError, ValueError, AttributeError):
        return False


def mount_scratch(path: str, size_bytes: int, max_files: int) -> bool:
    """Mount a tmpfs of ``size_bytes`` (and ``max_files`` inodes) over ``path``."""
    options = f"size={size_bytes},nr_inodes={max_files},mode=0700".encode()
    try:
        libc = _libc()
        done = libc.mount(b"tmpfs", os.fsencode(path), b"tmpfs",
                          ctypes.c_ulong(MS_NOSUID | MS_NODEV | MS_NOEXEC), options)
    except (OSError, AttributeError, ValueError):
        return False
    return done == 0

"""Run untrusted Python (model-written programs) in a confined child process.

Public API: :class:`SandboxRunner` (``run``), :class:`SandboxResult`
(``memory_error`` is set for ``MemoryError`` and its subclasses, numpy's
allocation failure included; ``result_error`` says why a result was refused),
:func:`run_python_with_json` (the JSON-on-stdin protocol, see
:mod:`srh_core.sandbox.jsonio`), :func:`get_sandbox_runner`, and the limits
in :mod:`srh_core.sandbox.limits`. Linux only.

Isolation, layer by layer (``SandboxResult.isolation`` lists what applied):

============  ==========================================  =====================
mechanism     what it does                                where it applies
============  ==========================================  =====================
process       ``sys.executable -I -S -B`` (no user site,  everywhere
              no ``PYTHON*`` variables, no ``site``),
              empty environment except PATH, HOME (run
              dir), TMPDIR, LANG/LC_ALL, ``*_NUM_THREADS=1``;
              new session, whole process group killed on
              timeout/interruption/output flood; fresh
              temporary run directory, removed afterwards
pids_cgroup   a per-run pids cgroup, ``pids.max`` =         cgroup v1 ``pids``
              ``PROCESS_LIMIT`` tasks (threads count), the  writable (root), or
              child joins it first; every member is killed  a delegated v2 dir
              when the run ends, wherever it went           (SRH_SANDBOX_CGROUP)
dedicated_uid root without that cgroup: the child becomes   root, no cgroup
              uid ``SANDBOX_UID_BASE + pid`` with only the
              file-access capabilities, so RLIMIT_NPROC =
              ``PROCESS_LIMIT`` binds; every task of that
              uid is killed at the end, its workspace files
              are given back to the parent's uid
rlimits       RLIMIT_AS (memory), RLIMIT_CPU, RLIMIT_FSIZE,  everywhere; NPROC
              RLIMIT_NOFILE, RLIMIT_CORE=0, RLIMIT_NPROC    for non-root (tasks
              (set by the bootstrap, before user code)      of the uid + limit)
mntns/tmpfs   private mount namespace; the run directory    root (``unshare
              (HOME, TMPDIR, default cwd) is a tmpfs of     --mount``)
              the disk budget: writes past it get ENOSPC
disk_budget   the supervisor kills the run (``killed_       everywhere
              reason="disk_limit"``) once the files it
              changed under its writable roots (workspace,
              run directory) exceed the disk budget
netns/ipcns   fresh network namespace (no interface but a   root; non-root with
              down loopback) and System V IPC namespace,    unprivileged user
              via util-linux ``unshare`` as the launcher     namespaces
landlock      kernel file-system allow-list: read-only       Linux >= 5.13 with
              interpreter, site-packages, mounts, system     Landlock enabled,
              libraries; read-write run dir and workspace;   root included
              ABI >= 4 also refuses TCP bind/connect, ABI
              >= 6 refuses signals and abstract unix
              sockets outside the sandbox
seccomp       EPERM for fork/vfork/execve/clone (threads     x86_64 only
              allowed), socket, ptrace, kill of others,
              mount, unshare/setns, bpf, io_uring, module
              loading, chown, mknod, open_by_handle_at...
audit_hook    PEP 578 hook: refuses process creation,        everywhere
              sockets, ctypes, code-object construction,
              gc introspection, files outside the allowed
              roots, writes to read-only mounts and locked
              workspace paths, symlink/hard-link creation,
              relative paths with ``..``; gives readable
              ``PermissionError`` messages
============  ==========================================  =====================

As measured on the development machine (root, kernel 6.18, x86_64, Landlock
ABI 7, cgroup v1 ``pids`` writable) every run reports ``("pids_cgroup",
"mntns", "netns", "ipcns", "tmpfs", "rlimits", "landlock", "seccomp",
"audit_hook", "disk_budget")``; with ``use_cgroup=False`` ``"dedicated_uid"``
replaces ``"pids_cgroup"``, and either stops a program that starts 10,000
threads at 63 (the main thread is the 64th task). Namespaces come from the
``unshare`` binary, not ``preexec_fn``, because ``preexec_fn`` is unsafe in a
threaded parent; for the same reason the rlimits are set by the bootstrap
rather than in the parent.

What a determined attacker could still do:

- with only the audit hook (no Landlock/seccomp: non-Linux-x86_64, old
  kernels): call ``_posixsubprocess.fork_exec`` (not audited in 3.11) to
  start processes as the parent's user (and root ignores RLIMIT_NPROC); use
  C-level file access of extension modules; use a CPython memory-safety bug;
  read the hook's frame through a traceback (``tb_frame``) or
  ``sys._getframe`` and tamper with it;
- everywhere: read everything under the interpreter prefixes and
  site-packages (and, via C code, system libraries); ``stat`` any path
  (Landlock does not cover metadata), chmod/utime files it can write
  (never to a setuid or setgid mode: the audit hook and seccomp refuse it,
  and :mod:`~srh_core.sandbox.file_modes` clears such bits in the workspace
  once the run has ended);
  write up to the disk budget plus what it writes in one 20 ms poll of the
  supervisor into the workspace (the tmpfs run directory is exact); use up
  to the CPU and memory limits (the tmpfs is memory too); race the audit
  hook's checks (TOCTOU) to modify a locked workspace file, since locks
  are enforced by the audit hook only; write anything into the workspace
  it was given (that is the point);
- as root without Landlock and seccomp, the child is root (unless it runs
  under the dedicated uid): file permissions do not apply, and C code could
  leave the pids cgroup by writing ``cgroup.procs``; run workers as an
  unprivileged user where possible;
- without a pids cgroup, as a non-root user: RLIMIT_NPROC is per uid, so the
  cap is "what the uid already runs + PROCESS_LIMIT", shared with whatever
  else that uid starts meanwhile.
"""

from srh_core.sandbox.jsonio import get_sandbox_runner, run_python_with_json
from srh_core.sandbox.limits import (
    DEFAULT_DISK_LIMIT_BYTES,
    DEFAULT_MEMORY_LIMIT_MB,
    DEFAULT_OUTPUT_LIMIT_BYTES,
    DEFAULT_TIMEOUT_SECONDS,
    MAX_MEMORY_LIMIT_MB,
    MAX_OUTPUT_LIMIT_BYTES,
    MAX_RESULT_DEPTH,
    MAX_TIMEOUT_SECONDS,
    MIN_MEMORY_LIMIT_MB,
    MIN_OUTPUT_LIMIT_BYTES,
    PROCESS_LIMIT,
    SandboxLimits,
    resolve_limits,
)
from srh_core.sandbox.runner import SandboxResult, SandboxRunner

__all__ = [
    "DEFAULT_DISK_LIMIT_BYTES",
    "DEFAULT_MEMORY_LIMIT_MB",
    "DEFAULT_OUTPUT_LIMIT_BYTES",
    "DEFAULT_TIMEOUT_SECONDS",
    "MAX_MEMORY_LIMIT_MB",
    "MAX_OUTPUT_LIMIT_BYTES",
    "MAX_RESULT_DEPTH",
    "MAX_TIMEOUT_SECONDS",
    "MIN_MEMORY_LIMIT_MB",
    "MIN_OUTPUT_LIMIT_BYTES",
    "PROCESS_LIMIT",
    "SandboxLimits",
    "SandboxResult",
    "SandboxRunner",
    "get_sandbox_runner",
    "resolve_limits",
    "run_python_with_json",
]

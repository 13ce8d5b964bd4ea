"""The command line that starts a sandboxed child, with namespaces if possible.

Python 3.11 has no ``os.unshare``, and calling ``unshare(2)`` from a
``preexec_fn`` is unsafe in a multi-threaded parent (tools run in threads),
so new namespaces come from util-linux ``unshare`` as the launcher: it
creates the namespaces and then ``exec``s the interpreter in the same
process, so the child's pid, process group and rusage are unchanged.

- as root: ``unshare --mount --net --ipc`` (a private mount namespace, where
  the bootstrap mounts the size-limited tmpfs of the run directory; a network
  namespace with only a down loopback device; a private System V IPC
  namespace), else ``unshare --net --ipc``;
- otherwise: ``unshare --user --net --ipc`` where unprivileged user
  namespaces are enabled (no uid mapping: the child keeps its real
  credentials and loses all capabilities at ``exec``).

Whichever works is found once per process by a probe run; when none works
the interpreter is started directly and the result's ``isolation`` says so.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from functools import lru_cache

UNSHARE_CANDIDATES = ("/usr/bin/unshare", "/bin/unshare")
PROBE_TIMEOUT_SECONDS = 10.0
#: Flag sets tried in order, with what each gives. ``--mount`` makes mounts
#: private (util-linux's default propagation), so nothing reaches the host.
ROOT_UNSHARE_OPTIONS = ((("--mount", "--net", "--ipc"), ("mntns", "netns", "ipcns")),
                        (("--net", "--ipc"), ("netns", "ipcns")))
USER_UNSHARE_OPTIONS = ((("--user", "--net", "--ipc"), ("netns", "ipcns")),)


@dataclass(frozen=True)
class Launcher:
    """A command prefix and the isolation mechanisms it provides."""

    prefix: tuple[str, ...]
    isolation: tuple[str, ...]


def _unshare_binary() -> str | None:
    for candidate in UNSHARE_CANDIDATES:
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def _probe(prefix: tuple[str, ...]) -> bool:
    try:
        completed = subprocess.run(
            [*prefix, sys.executable, "-I", "-S", "-c", ""],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env={"PATH": "/usr/bin:/bin"}, timeout=PROBE_TIMEOUT_SECONDS, check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return completed.returncode == 0


@lru_cache(maxsize=1)
def detect_launcher() -> Launcher:
    """Find the strongest launcher that works here (cached per process)."""
    binary = _unshare_binary()
    if binary is None or not sys.platform.startswith("linux"):
        return Launcher((), ())
    options = ROOT_UNSHARE_OPTIONS if os.geteuid() == 0 else USER_UNSHARE_OPTIONS
    for flags, isolation in options:
        prefix = (binary, *flags, "--")
        if _probe(prefix):
            return Launcher(prefix, isolation)
    return Launcher((), ())

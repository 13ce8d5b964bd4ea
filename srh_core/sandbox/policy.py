"""What a sandboxed child may touch, computed in the parent.

The parent knows where its interpreter lives (``sys.prefix``,
``sys.base_prefix``, ``sysconfig``); the child, started with ``-I -S``, only
receives the result: read-only roots (interpreter, site-packages, read-only
mounts), writable roots (its run directory and the workspace), lock rules and
the environment. Nothing here starts a process.
"""

from __future__ import annotations

import os
import sys
import sysconfig
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from srh_core.errors import ConfigurationError, WorkspaceError
from srh_core.sandbox.confine import SYSTEM_LIBRARY_PATHS
from srh_core.workspace.workspace import Workspace

#: Device files the child may open (read and write).
DEVICE_FILES = ("/dev/null", "/dev/zero", "/dev/urandom", "/dev/random")
SANDBOX_PATH_ENV = "/usr/local/bin:/usr/bin:/bin"
#: Numeric libraries start one thread per core unless told otherwise.
SINGLE_THREAD_ENV = {
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "NUMEXPR_NUM_THREADS": "1",
    "VECLIB_MAXIMUM_THREADS": "1",
}


@dataclass(frozen=True)
class SandboxPaths:
    """The file-system view of one run.

    Attributes:
        run_dir: Private temporary directory (HOME, TMPDIR, program, result).
        cwd: Working directory of the child: the workspace or ``run_dir/work``.
        read_roots: Hierarchies the child may read.
        write_roots: Hierarchies the child may write (run dir, workspace).
        readonly_roots: Sources of read-only mounts, never writable.
        workspace: Real path of the workspace root, or ``None``.
        lock_patterns: Workspace-relative lock patterns.
        locked_paths: Existing locked paths (absolute, resolved) at start.
    """

    run_dir: Path
    cwd: Path
    read_roots: tuple[str, ...]
    write_roots: tuple[str, ...]
    readonly_roots: tuple[str, ...] = ()
    workspace: str | None = None
    lock_patterns: tuple[str, ...] = ()
    locked_paths: tuple[str, ...] = ()

    @property
    def program(self) -> Path:
        """Where the user program is written."""
        return self.run_dir / "program.py"

    @property
    def result(self) -> Path:
        """Where ``emit_result`` writes its JSON."""
        return self.run_dir / "result.json"


@lru_cache(maxsize=1)
def interpreter_roots() -> tuple[str, ...]:
    """Resolved directories of the running interpreter, its stdlib and site-packages."""
    paths = sysconfig.get_paths()
    candidates = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix]
    candidates += [paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")]
    roots: list[str] = []
    for candidate in candidates:
        real = os.path.realpath(candidate)
        # A prefix of "/" would open the whole file system; its stdlib and
        # site-packages entries are still listed separately.
        if real != "/" and os.path.isdir(real) and real not in roots:
            roots.append(real)
    return tuple(roots)


def site_paths() -> list[str]:
    """``sys.path`` entries the child adds (no ``.pth`` files are processed)."""
    paths = sysconfig.get_paths()
    return list(dict.fromkeys(paths[key] for key in ("purelib", "platlib")))


def sandbox_paths(run_dir: Path, workspace: Workspace | str | Path | None) -> SandboxPaths:
    """Build the view for a run with an optional workspace.

    Args:
        run_dir: The run's private directory (already created).
        workspace: A managed :class:`Workspace`, a plain directory, or ``None``.

    Returns:
        The paths to pass to the bootstrap.

    Raises:
        WorkspaceError: A plain workspace directory does not exist.
        ConfigurationError: ``workspace`` has an unsupported type.
    """
    run_real = os.path.realpath(run_dir)
    if workspace is None:
        return SandboxPaths(run_dir, run_dir / "work", interpreter_roots(), (run_real,))
    if isinstance(workspace, str | Path):
        root = Path(workspace)
        if not root.is_dir():
            raise WorkspaceError(
                f"The sandbox workspace must be an existing directory; {str(root)!r} is not.",
                path=str(root),
            )
        real = os.path.realpath(root)
        return SandboxPaths(run_dir, Path(real), interpreter_roots(), (run_real, real),
                            workspace=real)
    if not isinstance(workspace, Workspace):
        raise ConfigurationError(
            "The sandbox workspace must be a Workspace, a directory path or None. "
            f"Got {type(workspace).__name__} instead.", setting="workspace")
    real = os.path.realpath(workspace.root)
    mounts = tuple(os.path.realpath(source) for source in workspace.mounts.values())
    return SandboxPaths(
        run_dir, Path(real), (*interpreter_roots(), *mounts), (run_real, real),
        readonly_roots=mounts, workspace=real, lock_patterns=workspace.lock_patterns,
        locked_paths=tuple(os.path.realpath(path) for path in workspace.locked_paths()),
    )


def child_environment(run_dir: Path) -> dict[str, str]:
    """The complete environment of the child: nothing is inherited."""
    return {
        "PATH": SANDBOX_PATH_ENV,
        "HOME": str(run_dir),
        "TMPDIR": str(run_dir / "tmp"),
        "MPLCONFIGDIR": str(run_dir / "tmp"),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        **SINGLE_THREAD_ENV,
    }


def system_library_paths() -> list[str]:
    """Paths the dynamic loader may read (granted to Landlock only)."""
    return [path for path in SYSTEM_LIBRARY_PATHS if os.path.exists(path)]

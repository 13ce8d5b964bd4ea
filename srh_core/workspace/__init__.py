"""The agent's workspace: safe path resolution and a restricted shell over it.

- :class:`Workspace`: a root directory with read-only mounts and lock rules;
  every logical path goes through :meth:`Workspace.resolve`, which raises
  :class:`~srh_core.errors.WorkspaceError` on absolute paths, ``..``, symlink
  escapes, NUL bytes, over-long paths, writes to mounts and locked paths.
- :class:`WorkspaceShell` / :func:`run_workspace_shell`: ``ls cat head tail wc
  grep sort cut cp mv rm mkdir gunzip gzip unzip tar`` with pipelines,
  implemented in pure Python over a :class:`Workspace` (no shell, no process).
"""

from srh_core.workspace.paths import split_relative
from srh_core.workspace.shell import (
    ALLOWED_COMMANDS,
    ShellResult,
    WorkspaceShell,
    run_workspace_shell,
)
from srh_core.workspace.shell_parse import ShellSyntaxError
from srh_core.workspace.workspace import Workspace

__all__ = [
    "ALLOWED_COMMANDS",
    "ShellResult",
    "ShellSyntaxError",
    "Workspace",
    "WorkspaceShell",
    "run_workspace_shell",
    "split_relative",
]

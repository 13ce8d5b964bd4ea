"""``workspace_shell``: the restricted command line over the run's workspace.

Runs :class:`~srh_core.workspace.WorkspaceShell`: pure Python, no shell (a
grep pattern that may backtrack is matched by a child interpreter cut after
a few seconds); every path goes through the workspace's resolution rules (no
absolute paths, no ``..``, no symlink escapes, read-only mounts and locked
paths stay unchanged). A command that fails is still an ``ok=True`` result
whose ``exit_code`` and ``stderr`` say why. Unavailable when the context has
no workspace.

Structured ``result``: ``{"command", "exit_code", "success", "stdout",
"stderr", "stdout_truncated"}``.
"""

from __future__ import annotations

from typing import Any

from srh_core.errors import ToolArgumentError
from srh_core.tools.base import BaseTool
from srh_core.workspace import ALLOWED_COMMANDS, Workspace, WorkspaceShell

TOOL_NAME = "workspace_shell"
OUTPUT_LIMIT_BYTES = 64 * 1024
MAX_COMMAND_CHARS = 4_000
STDOUT_SHOWN_CHARS = 4_500
STDERR_SHOWN_CHARS = 1_000


def context_workspace(context: Any, tool: str) -> Workspace:
    """The context's workspace as a :class:`Workspace` (its mounts and locks kept).

    Raises:
        ToolArgumentError: The context has no workspace.
    """
    workspace = getattr(context, "workspace", None)
    if workspace is None:
        raise ToolArgumentError(f"{tool} needs a workspace, but this run has none.")
    if isinstance(workspace, Workspace):
        return workspace
    return Workspace(getattr(workspace, "path", workspace), create=False)


def no_workspace_reason(context: Any) -> str | None:
    """"the context has no workspace" when ``context`` is given and has none."""
    if context is not None and getattr(context, "workspace", None) is None:
        return "the context has no workspace"
    return None


@BaseTool.register(TOOL_NAME)
class WorkspaceShellTool(BaseTool):
    """List, read, search, copy, move and unpack files of the workspace."""

    @classmethod
    def availability(cls, context: Any = None) -> str | None:
        """Unavailable when the context has no workspace."""
        return no_workspace_reason(context)

    def execute(self, command: str) -> dict[str, Any]:
        """Run a restricted shell command line in the workspace (no real shell).

        Use it to look at and organise workspace files. Commands: ls, cat, head,
        tail, wc, grep, sort, cut, cp, mv, rm, mkdir, gzip, gunzip, unzip, tar,
        joined with pipes, e.g. "head -5 data.csv | cut -d, -f1,3". Paths are
        relative to the workspace root; absolute paths, '..', redirections,
        ';', '&&', variables and command substitution are refused.

        Args:
            command: The command line, e.g. "ls -l", "grep -c nan data.csv".
        """
        if not isinstance(command, str) or not command.strip():
            raise ToolArgumentError("The 'command' parameter must be a non-empty command line, "
                                    f"e.g. 'ls'. Commands: {', '.join(ALLOWED_COMMANDS)}.",
                                    parameter="command")
        if len(command) > MAX_COMMAND_CHARS:
            raise ToolArgumentError(f"The 'command' parameter has {len(command)} characters; at "
                                    f"most {MAX_COMMAND_CHARS} are allowed.", parameter="command")
        workspace = context_workspace(self.context, TOOL_NAME)
        outcome = WorkspaceShell(workspace, OUTPUT_LIMIT_BYTES).run(command)
        return {"command": command, "exit_code": outcome.exit_code, "success": outcome.ok,
                "stdout": outcome.stdout, "stderr": outcome.stderr,
                "stdout_truncated": outcome.stdout_truncated}

    @classmethod
    def format_result_dict(cls, result: dict[str, Any]) -> str:
        """Exit code first, then stdout and stderr, bounded."""
        stdout, stderr = result["stdout"], result["stderr"].strip()
        if len(stdout) > STDOUT_SHOWN_CHARS:
            stdout = stdout[:STDOUT_SHOWN_CHARS] + f"\n... [{len(stdout) - STDOUT_SHOWN_CHARS} " \
                "chars cut; narrow the command, e.g. with head or grep]"
        lines = [f"$ {result['command']}  (exit code {result['exit_code']})", stdout.rstrip("\n")
                 or "(no output)"]
        if stderr:
            lines.append("stderr: " + stderr[-STDERR_SHOWN_CHARS:])
        return "\n".join(lines)

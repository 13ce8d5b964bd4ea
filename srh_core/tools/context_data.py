"""``validate_context_data``: check a ``context.data`` directory without touching the run.

The data-preparation side writes a manifest-backed directory (``manifest.json``
plus one flat ``.npy`` file per variable, :mod:`srh_core.context.manifest`) in
the run's workspace. This tool reads it with the same reader the commit uses
(:func:`~srh_core.context.manifest.inspect_context_data`, then
:func:`~srh_core.context.manifest.load_context_data`), so ``ok`` means a commit
of that directory loads; it reports every problem at once, each with where it
is and how to repair it, and never changes the live context or the files.
"""

from __future__ import annotations

from typing import Any

from srh_core.context.manifest import inspect_context_data, load_context_data
from srh_core.errors import ContextManifestError, ToolArgumentError, WorkspaceError
from srh_core.tools.base import BaseTool
from srh_core.tools.workspace_shell import context_workspace, no_workspace_reason

TOOL_NAME = "validate_context_data"
#: Problems listed in the model's text; the result dict keeps all of them.
SHOWN_ERRORS = 40


@BaseTool.register(TOOL_NAME)
class ValidateContextDataTool(BaseTool):
    """Validate a context.data directory of the workspace and explain every repair."""

    @classmethod
    def availability(cls, context: Any = None) -> str | None:
        """Unavailable when the context has no workspace."""
        return no_workspace_reason(context)

    def execute(self, path: str = "context.data") -> dict[str, Any]:
        """Validate a manifest-backed context-data directory and explain every repair.

        Reads the directory with the loader a commit uses, so ``ok`` means the same
        directory can be committed and loaded. On failure every detectable problem
        is returned together, each with a repair hint. Nothing is changed.

        Args:
            path: Workspace-relative directory holding manifest.json and flat .npy files.
        """
        if not isinstance(path, str) or not path.strip():
            raise ToolArgumentError("path must be a workspace-relative directory, e.g. "
                                    "'context.data'.", parameter="path")
        workspace = context_workspace(self.context, TOOL_NAME)
        try:
            directory = workspace.resolve(path.strip())
        except WorkspaceError as error:
            raise ToolArgumentError(str(error), parameter="path") from None
        if not directory.is_dir():
            raise ToolArgumentError(f"{path!r} is not a directory of the workspace; write "
                                    "manifest.json and the .npy files there first.",
                                    parameter="path")
        report = inspect_context_data(directory)
        if report["ok"]:
            try:
                load_context_data(directory)
            except ContextManifestError as error:  # the loader found what inspection did not
                report["ok"] = False
                report["errors"] = [{"location": path, "message": line, "hint": ""}
                                    for line in error.errors]
        report["path"] = path.strip()
        report["repairs"] = [f"{issue['location']}: {issue['hint']}"
                             for issue in report["errors"] if issue.get("hint")]
        return report

    @classmethod
    def format_result_dict(cls, result: dict[str, Any]) -> str:
        """The verdict, every problem with its repair, then what was loaded."""
        errors = result.get("errors") or []
        lines = [f"{result['path']}: " + ("valid; it can be committed" if result["ok"] else
                                          f"{len(errors)} problem(s); nothing was changed")]
        for issue in errors[:SHOWN_ERRORS]:
            hint = f"\n    repair: {issue['hint']}" if issue.get("hint") else ""
            lines.append(f"  - {issue['location']}: {issue['message']}{hint}")
        if len(errors) > SHOWN_ERRORS:
            lines.append(f"  ... {len(errors) - SHOWN_ERRORS} more in the result")
        for warning in result.get("warnings") or []:
            lines.append(f"  warning: {warning}")
        if result.get("target"):
            lines.append(f"target {result['target']}, {result.get('n_samples')} samples")
        for name, variable in (result.get("variables") or {}).items():
            axes = f" over {', '.join(variable['axes'])}" if variable.get("axes") else ""
            lines.append(f"  {name}: {variable['kind']} {variable['dtype']} "
                         f"{tuple(variable['shape'])}{axes}")
        return "\n".join(lines)

"""``validate_evaluator``: prove a custom evaluator file on the data, in the sandbox.

A file of the workspace's ``context.evaluator/`` directory was written by a
model, so it never runs in this process: the tool copies that directory and
the context's data (as a ``context.data`` directory) into a fresh temporary
workspace, mounts the installed ``srh_core`` and ``srh_engine`` read-only in
it, and runs a fixed program in the sandbox (:mod:`srh_core.sandbox`) that
loads the file the way :func:`srh_core.evaluator.loading.load_custom_evaluator`
does (exactly one ``DefaultEvaluator`` subclass), builds a context with that
evaluator and the same split settings, and scores one formula with
``evaluate_formula``'s code, under the code tools' limits (120 s, 2 GB, capped
by the run's ``code_max_*`` settings; stopped when the tool is cancelled). The
live context (its data, its evaluator) is never touched. Without
``evaluator_file`` the context's current evaluator is used, in this process
(it is already loaded).

``valid`` in the result means: the file loaded, the formula was scored, and
every metric the evaluator adds to the default ones is a finite number in
every split (``metric_problems`` lists what a construction agent must repair).
"""

from __future__ import annotations

import math
import shutil
import tempfile
from pathlib import Path, PurePosixPath
from typing import Any

from srh_core.context.manifest_writer import save_context_data
from srh_core.errors import ToolArgumentError, WorkspaceError
from srh_core.tools.base import BaseTool
from srh_core.tools.code_sandbox import SandboxedTool
from srh_core.tools.evaluate import EvaluateTool
from srh_core.tools.source import package_roots
from srh_core.tools.workspace_shell import context_workspace
from srh_core.workspace import Workspace

TOOL_NAME = "validate_evaluator"
EVALUATOR_DIR = "context.evaluator"
MAX_EVALUATOR_BYTES = 1_000_000
TIMEOUT_SECONDS = 120.0
MEMORY_LIMIT_MB = 2048
OUTPUT_LIMIT_BYTES = 256 * 1024
#: The default evaluator's metrics (may be non-finite, e.g. aic of an exact fit); any other
#: metric is the custom evaluator's own and must be a finite number.
STANDARD_METRICS = frozenset({"mse", "rmse", "mae", "mape", "r2", "aic", "bic", "pearson",
                              "spearman", "complexity", "n_params", "n_samples", "n_finite",
                              "rollout_rmse"})

# The fixed program run in the sandbox; the packages are mounted in its working directory.
VALIDATE_PROGRAM = r'''
import os, sys
sys.path.insert(0, os.getcwd())
from srh_core.context import AgentContext, load_context_data
from srh_core.evaluator.loading import load_custom_evaluator
from srh_core.tools.evaluate import EvaluateTool
from srh_core.types import json_value

try:
    evaluator = load_custom_evaluator(os.path.join("evaluator", payload["file"]))
except Exception as error:
    emit_result({"loaded": False, "error": type(error).__name__ + ": " + str(error)})
else:
    context = AgentContext(args=payload["settings"], evaluator=evaluator)
    context.commit_context_data(load_context_data("data"))
    call = EvaluateTool(context=context)(**payload["call"])
    emit_result({"loaded": True, "evaluator": type(evaluator).__qualname__, "ok": call.ok,
                 "result": json_value(call.result), "result_str": call.result_str})
'''


@BaseTool.register(TOOL_NAME)
class ValidateEvaluatorTool(SandboxedTool):
    """Load an evaluator file in isolation and use it to evaluate one formula."""

    def execute(self, f: str, evaluator_file: str | None = None, y: str | None = None,
                fit: bool = False, show_diagnostics: bool = False) -> dict[str, Any]:
        """Validate a custom evaluator on the data without changing the live context.

        The file is loaded in the sandbox from a copy of context.evaluator/; it must
        define exactly one DefaultEvaluator subclass. valid=true means the formula was
        scored and every metric is a finite number.

        Args:
            f: Formula to evaluate with the evaluator, e.g. "a*x1" or 'param("a")*x1'.
            evaluator_file: Workspace-relative Python file under context.evaluator/; omit it
                to check the evaluator the context already uses.
            y: Target expression; defaults to the target.
            fit: Fit the formula's parameters first.
            show_diagnostics: Include residual diagnostics.
        """
        call = {"f": f, "y": y, "fit": bool(fit), "show_diagnostics": bool(show_diagnostics)}
        if evaluator_file is None:
            return self.current_evaluator(call)
        workspace = context_workspace(self.context, TOOL_NAME)
        relative = evaluator_path(evaluator_file)
        try:
            folder = workspace.resolve(EVALUATOR_DIR)
            file = workspace.resolve(str(relative))
        except WorkspaceError as error:
            raise ToolArgumentError(str(error), parameter="evaluator_file") from None
        if not file.is_file():
            raise ToolArgumentError(f"{relative} is not a file of the workspace; write it "
                                    "first.", parameter="evaluator_file")
        report = self.run_in_sandbox(folder, str(relative.relative_to(EVALUATOR_DIR)), call)
        return {"evaluator_file": str(relative), **report}

    def current_evaluator(self, call: dict[str, Any]) -> dict[str, Any]:
        evaluator = getattr(self.context, "evaluator", None)
        result = EvaluateTool(context=self.context)(**call)
        return verdict({"evaluator_file": None, "loaded": True,
                        "evaluator": type(evaluator).__qualname__, "ok": result.ok,
                        "result": result.result, "result_str": result.result_str})

    def run_in_sandbox(self, folder: Path, name: str, call: dict[str, Any]) -> dict[str, Any]:
        settings = self.context.settings()
        with tempfile.TemporaryDirectory(prefix="srh-validate-evaluator-") as temporary:
            root = Path(temporary)
            copy_evaluators(folder, root / "evaluator")
            save_context_data(self.context, root / "data")
            roots = package_roots()
            sandbox = Workspace(root, read_only_mounts={
                name: roots[name] for name in ("srh_core", "srh_engine")})
            payload = {"file": name, "call": call, "settings": {
                key: getattr(settings, key) for key in settings.__dataclass_fields__}}
            limits = self.resolve_limits(TIMEOUT_SECONDS, MEMORY_LIMIT_MB, OUTPUT_LIMIT_BYTES)
            run, value = self.run_sandboxed(VALIDATE_PROGRAM, payload, limits, sandbox)
        if value is None:
            why = run.killed_reason or f"exit code {run.exit_code}"
            raise ToolArgumentError(f"The evaluator could not be validated: the sandboxed run "
                                    f"ended ({why}) without a result. stderr: "
                                    f"{run.stderr[-1500:]}", parameter="evaluator_file")
        return verdict(dict(value))

    @classmethod
    def format_result_dict(cls, result: dict[str, Any]) -> str:
        """The evaluator, the verdict, what to repair, then the formula's evaluation."""
        who = result.get("evaluator_file") or f"the context's {result.get('evaluator')}"
        if not result.get("loaded"):
            return f"Evaluator {who} did not load: {result.get('error')}"
        lines = [f"Evaluator {who} ({result.get('evaluator')}): "
                 + ("valid" if result["valid"] else "NOT valid")]
        lines += [f"  - {problem}" for problem in result.get("metric_problems", [])]
        lines += [f"  {split} custom metrics: " + ", ".join(f"{k}={v!r}" for k, v in own.items())
                  for split, own in custom_metrics(result).items() if own]
        lines.append(result.get("result_str") or "")
        return "\n".join(lines)


def evaluator_path(text: str) -> PurePosixPath:
    """``text`` as a ``.py`` path under ``context.evaluator/``.

    Raises:
        ToolArgumentError: Any other path.
    """
    path = PurePosixPath(str(text).strip())
    if (path.is_absolute() or len(path.parts) < 2 or path.parts[0] != EVALUATOR_DIR
            or ".." in path.parts or path.suffix != ".py"):
        raise ToolArgumentError(f"evaluator_file must be a .py file under {EVALUATOR_DIR}/, "
                                f"e.g. '{EVALUATOR_DIR}/rollout.py'. Got {text!r} instead.",
                                parameter="evaluator_file")
    return path


def copy_evaluators(folder: Path, destination: Path) -> None:
    """Copy the ``.py`` files of ``context.evaluator/`` (the file may import its neighbours).

    Raises:
        ToolArgumentError: The directory holds more than :data:`MAX_EVALUATOR_BYTES`.
    """
    files = [p for p in folder.rglob("*.py") if p.is_file() and not p.is_symlink()]
    if sum(p.stat().st_size for p in files) > MAX_EVALUATOR_BYTES:
        raise ToolArgumentError(f"{EVALUATOR_DIR}/ holds more than {MAX_EVALUATOR_BYTES} bytes "
                                "of Python.", parameter="evaluator_file")
    for file in files:
        target = destination / file.relative_to(folder)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(file, target)


def custom_metrics(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The metrics the evaluator adds to the default ones, by split."""
    blocks = (report.get("result") or {}).get("data_split_results") or {}
    return {split: {name: value for name, value in ((block or {}).get("metrics") or {}).items()
                    if name not in STANDARD_METRICS} for split, block in blocks.items()}


def verdict(report: dict[str, Any]) -> dict[str, Any]:
    """``report`` with ``metric_problems`` (custom metrics that are not finite numbers; a
    non-finite value arrives as None) and ``valid``."""
    problems = []
    if report.get("loaded") and not report.get("ok"):
        problems.append("the formula could not be evaluated with this evaluator (see below)")
    for split, own in custom_metrics(report).items():
        for metric, value in own.items():
            number = isinstance(value, int | float) and not isinstance(value, bool)
            if not number or not math.isfinite(value):
                problems.append(f"{split} metric {metric!r} is {value!r}, not a finite number")
    report["metric_problems"] = problems
    report["valid"] = bool(report.get("loaded")) and not problems
    return report

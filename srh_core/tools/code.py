"""Code tools: run model-written Python in the sandbox, never in this process.

``code_executor(program, ...)`` and ``workspace_code_executor(program, ...)``
run an analysis program. Protocol (the reference's): the training split (the
whole data when validation is disabled) goes to the program as JSON on stdin,
one mapping of variable names to lists of values (the target and every
feature: the sample variables), ``data_dict = json.loads(sys.stdin.read())``;
it is also pre-parsed into the global ``payload``. What was sent is reported
in the result's ``data``::

    {"target": str | None, "features": [str, ...], "split": "train",
     "n_samples": int,                # rows sent
     "n_samples_total": int,          # rows of the training split
     "subsampled": bool}              # rows were subsampled (deterministically)

Above ``MAX_PAYLOAD_VALUES`` numbers a seeded random subset of rows is sent,
in the original order. The program prints what it wants to show, and may
call ``emit_result(value)`` to return JSON (``result["emitted"]``). A
program that fails, is killed (timeout, memory, output flood) or is refused
by the sandbox (fork, sockets, files outside its directory) is still an
``ok=True`` tool result: ``success`` is false and ``exit_code``,
``killed_reason`` and stderr say why, because the output is what the model
needs. ``workspace_code_executor`` runs in the context's workspace (its
read-only mounts and locks apply) and is unavailable without one.

The limits (checked, then capped by the run settings) and the run report are
those of :mod:`srh_core.tools.code_sandbox`; ``evaluate_code`` (a model
written in Python, scored outside the sandbox) is in
:mod:`srh_core.tools.code_model`.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from srh_core.errors import ToolArgumentError
from srh_core.tools.analysis.variables import sample_names
from srh_core.tools.base import BaseTool
from srh_core.tools.code_sandbox import (
    DEFAULT_MEMORY_LIMIT_MB,
    DEFAULT_OUTPUT_LIMIT_BYTES,
    DEFAULT_TIMEOUT_SECONDS,
    STDERR_SHOWN_CHARS,
    SandboxedTool,
    keep_head,
    keep_tail,
    outcome_text,
    run_report,
    strip_fence,
)
from srh_core.tools.workspace_shell import context_workspace, no_workspace_reason
from srh_core.workspace import Workspace

MAX_PAYLOAD_VALUES = 2_000_000
PAYLOAD_SEED = 0
STDOUT_SHOWN_CHARS = 3_500


def data_payload(context: Any) -> dict[str, Any]:
    """The executors' data: ``data`` (what goes on stdin: the training split's sample
    variables, bounded) and what describes it (target, features, rows).

    A context without data gives an empty ``data`` mapping (the program still runs).
    """
    if context is None or not getattr(context, "data", None):
        return {"data": {}, "target": None, "features": [], "split": "train", "n_samples": 0,
                "n_samples_total": 0, "subsampled": False}
    train = context.train_split
    names = [n for n in sample_names(context) if n in train.data]
    n_total = train.n_samples
    width = max(1, sum(int(np.prod(train.data[n].shape[1:], dtype=int)) for n in names))
    rows = np.arange(n_total)
    if n_total * width > MAX_PAYLOAD_VALUES:
        keep = max(1, MAX_PAYLOAD_VALUES // width)
        rows = np.sort(np.random.default_rng(PAYLOAD_SEED).choice(n_total, keep, replace=False))
    return {"data": {n: np.asarray(train.data[n], dtype=float)[rows] for n in names},
            "target": context.target, "features": [n for n in names if n != context.target],
            "split": "train", "n_samples": int(rows.size), "n_samples_total": int(n_total),
            "subsampled": bool(rows.size < n_total)}


@BaseTool.register("code_executor")
class CodeExecutorTool(SandboxedTool):
    """Run an analysis program in the sandbox with the training data on stdin."""

    def execute(
        self,
        program: str,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
        memory_limit_mb: int = DEFAULT_MEMORY_LIMIT_MB,
        output_limit_bytes: int = DEFAULT_OUTPUT_LIMIT_BYTES,
    ) -> dict[str, Any]:
        """Run a Python analysis program in an isolated sandbox and return what it prints.

        Use it for analyses the other tools do not offer (numpy, scipy are
        available). Read the training data with
        `import sys, json; data_dict = json.loads(sys.stdin.read())` (or use the
        global `payload`, the same mapping): it maps each variable name (the
        target and every input) to a list of values. Print the results (output is
        cut at the limit). No network, no subprocesses, no files outside a
        temporary directory.

        Args:
            program: The Python source to run.
            timeout_seconds: Wall-clock limit in seconds, > 0; larger than the cap
                (120 s unless the run sets another) means the cap.
            memory_limit_mb: Memory limit in MB, >= 128; capped (4096 MB by default).
            output_limit_bytes: Most bytes of stdout (and of stderr) kept, >= 256; capped
                (1 MiB by default).
        """
        return self.run_program(program, timeout_seconds, memory_limit_mb, output_limit_bytes,
                                workspace=None)

    def run_program(self, program: str, timeout: float, memory: int, output: int,
                    workspace: Workspace | None) -> dict[str, Any]:
        """Run ``program`` with the data payload; the report of :func:`run_report`."""
        if not isinstance(program, str) or not program.strip():
            raise ToolArgumentError("The 'program' parameter must be non-empty Python source.",
                                    parameter="program")
        limits = self.resolve_limits(timeout, memory, output)
        payload = data_payload(self.context)
        result, value = self.run_sandboxed(strip_fence(program), payload["data"], limits,
                                           workspace)
        data = {key: payload[key] for key in ("split", "n_samples", "n_samples_total",
                                              "subsampled", "target", "features")}
        return {**run_report(result, limits), "emitted": value, "data": data}

    @classmethod
    def format_result_dict(cls, result: dict[str, Any]) -> str:
        """Outcome first, then stdout (head) and stderr (tail)."""
        data = result["data"]
        sent = (f"{data['n_samples']} of {data['n_samples_total']} training rows "
                "(deterministic subsample)" if data["subsampled"]
                else f"{data['n_samples']} training rows")
        lines = [outcome_text(result) + f" Data on stdin: {sent}."]
        lines.append("stdout:\n" + (keep_head(result["stdout"], STDOUT_SHOWN_CHARS) or "(empty)"))
        if result["stderr"].strip():
            lines.append("stderr:\n" + keep_tail(result["stderr"], STDERR_SHOWN_CHARS))
        if result["emitted"] is not None:
            lines.append("emit_result value: " + keep_head(json.dumps(result["emitted"]), 800))
        return "\n".join(lines)


@BaseTool.register("workspace_code_executor")
class WorkspaceCodeExecutorTool(CodeExecutorTool):
    """Run a program in the sandbox with the workspace as its working directory."""

    @classmethod
    def availability(cls, context: Any = None) -> str | None:
        """Unavailable without the sandbox, or when the context has no workspace."""
        return super().availability(context) or no_workspace_reason(context)

    def execute(
        self,
        program: str,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
        memory_limit_mb: int = DEFAULT_MEMORY_LIMIT_MB,
        output_limit_bytes: int = DEFAULT_OUTPUT_LIMIT_BYTES,
    ) -> dict[str, Any]:
        """Run a Python program in the sandbox with the workspace as working directory.

        Use it to read or write workspace files (e.g. open("data.csv"),
        open("notes.txt", "w")): paths are relative to the workspace; nothing
        outside it can be read or written, read-only mounts and locked files
        stay unchanged, and there is no network and no subprocess. The
        training data is on stdin as for code_executor:
        `data_dict = json.loads(sys.stdin.read())` maps each variable name to a list.

        Args:
            program: The Python source to run.
            timeout_seconds: Wall-clock limit in seconds, > 0; larger than the cap
                (120 s unless the run sets another) means the cap.
            memory_limit_mb: Memory limit in MB, >= 128; capped (4096 MB by default).
            output_limit_bytes: Most bytes of stdout (and of stderr) kept, >= 256; capped
                (1 MiB by default).
        """
        return self.run_program(program, timeout_seconds, memory_limit_mb, output_limit_bytes,
                                workspace=context_workspace(self.context, self.metadata.name))

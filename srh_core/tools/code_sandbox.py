"""The sandbox base of the code tools: limits, the sandboxed run and its report.

:class:`SandboxedTool` is what ``code_executor``, ``workspace_code_executor``
(:mod:`srh_core.tools.code`) and ``evaluate_code``
(:mod:`srh_core.tools.code_model`) share: resolving the limits, running code
in the sandbox (stopped when the tool is cancelled), and describing how the
run ended. Model-written code never runs in this process.

Limits: a limit argument below its minimum (timeout <= 0, memory < 128 MB,
output < 256 bytes) or not finite is a ToolArgumentError; a larger one is
reduced to the smallest of itself, the sandbox maximum and the run setting
``code_max_timeout_seconds`` / ``code_max_memory_limit_mb`` /
``code_max_output_limit_bytes`` (read from ``context.args``; defaults in
``LIMITS``). ``result["limits"]`` holds the values used and which were capped.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from srh_core.errors import ToolArgumentError
from srh_core.sandbox import limits as sandbox_limits
from srh_core.sandbox import run_python_with_json
from srh_core.sandbox.runner import SandboxResult
from srh_core.tools.base import BaseTool
from srh_core.workspace import Workspace

DEFAULT_TIMEOUT_SECONDS = sandbox_limits.DEFAULT_TIMEOUT_SECONDS
DEFAULT_MEMORY_LIMIT_MB = sandbox_limits.DEFAULT_MEMORY_LIMIT_MB
DEFAULT_OUTPUT_LIMIT_BYTES = sandbox_limits.DEFAULT_OUTPUT_LIMIT_BYTES
LIMITS = {  # argument -> (lowest accepted, sandbox maximum, cap setting, default cap)
    "timeout_seconds": (0.0, sandbox_limits.MAX_TIMEOUT_SECONDS, "code_max_timeout_seconds",
                        120.0),
    "memory_limit_mb": (sandbox_limits.MIN_MEMORY_LIMIT_MB, sandbox_limits.MAX_MEMORY_LIMIT_MB,
                        "code_max_memory_limit_mb", 4096),
    "output_limit_bytes": (sandbox_limits.MIN_OUTPUT_LIMIT_BYTES,
                           sandbox_limits.MAX_OUTPUT_LIMIT_BYTES, "code_max_output_limit_bytes",
                           1_048_576),
}
STDERR_SHOWN_CHARS = 1_500


@dataclass(frozen=True, slots=True)
class CodeLimits:
    """Limits of one sandboxed run, after capping; ``capped`` names the reduced ones."""

    timeout_seconds: float
    memory_limit_mb: int
    output_limit_bytes: int
    capped: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The limits as plain JSON data."""
        return {"timeout_seconds": self.timeout_seconds, "memory_limit_mb": self.memory_limit_mb,
                "output_limit_bytes": self.output_limit_bytes, "capped": list(self.capped)}


class _Cancellation:
    """Duck-typed interruption event: set when the tool or its context is cancelled."""

    def __init__(self, tool: BaseTool) -> None:
        self.tool = tool

    def is_set(self) -> bool:
        return self.tool.cancelled


class SandboxedTool(BaseTool):
    """Shared parts of the tools that run code in the sandbox (not registered itself)."""

    @classmethod
    def availability(cls, context: Any = None) -> str | None:
        """Why the tool cannot run here: the sandbox needs Linux."""
        return None if sys.platform.startswith("linux") else "the code sandbox runs on Linux only"

    def resolve_limits(self, timeout: float, memory: int, output: int) -> CodeLimits:
        """Check each limit's lower bound; cap it by the sandbox maximum and the run settings."""
        requested = {"timeout_seconds": timeout, "memory_limit_mb": memory,
                     "output_limit_bytes": output}
        values: dict[str, Any] = {}
        capped = []
        for key, (low, high, setting, default) in LIMITS.items():
            value = _at_least(self.metadata.name, key, requested[key], low)
            cap = min(high, _setting(getattr(self.context, "args", None), setting, default))
            values[key] = type(value)(min(value, cap))
            capped += [key] if value > cap else []
        return CodeLimits(**values, capped=tuple(capped))

    def run_sandboxed(self, code: str, payload: Mapping[str, Any], limits: CodeLimits,
                      workspace: Workspace | None = None) -> tuple[SandboxResult, Any]:
        """Run ``code`` with ``payload`` as JSON on stdin; stop when the tool is cancelled."""
        result, value = run_python_with_json(
            code, payload, workspace=workspace, timeout_seconds=limits.timeout_seconds,
            memory_limit_mb=limits.memory_limit_mb, output_limit_bytes=limits.output_limit_bytes,
            interruption_event=_Cancellation(self))  # type: ignore[arg-type]
        self.check_cancelled()
        return result, value


def _at_least(tool: str, name: str, value: Any, low: float) -> float | int:
    """``value`` when it is a finite number >= ``low`` (> 0 for the timeout)."""
    number = float(value) if isinstance(value, int | float) and not isinstance(value, bool) \
        else math.nan
    if not math.isfinite(number) or number < low or number <= 0:
        kind = "an int" if isinstance(low, int) else "a number"
        bound = f">= {low}" if low > 0 else "> 0"
        raise ToolArgumentError(f"The {name!r} parameter of {tool} must be {kind} {bound} "
                                f"(larger values are capped). Got {value!r} instead.",
                                parameter=name)
    return int(number) if isinstance(low, int) else number


def _setting(args: Any, name: str, default: float) -> float:
    value = args.get(name, default) if isinstance(args, Mapping) else getattr(args, name, default)
    ok = isinstance(value, int | float) and not isinstance(value, bool) and value > 0
    return float(value) if ok else default


def run_report(result: SandboxResult, limits: CodeLimits) -> dict[str, Any]:
    """The structured outcome of one sandboxed run (shared by the executors)."""
    return {"success": result.ok, "exit_code": result.exit_code,
            "killed_reason": result.killed_reason, "timed_out": result.timed_out,
            "memory_error": result.memory_error,
            "duration_seconds": round(result.duration_seconds, 3),
            "cpu_seconds": round(result.cpu_seconds, 3),
            "peak_memory_mb": round(result.peak_memory_bytes / 2**20, 1),
            "stdout": result.stdout, "stderr": result.stderr,
            "stdout_truncated": result.stdout_truncated,
            "stderr_truncated": result.stderr_truncated,
            "limits": limits.to_dict(), "isolation": list(result.isolation)}


def outcome_text(report: Mapping[str, Any]) -> str:
    """One line: how the run ended, in words a model can act on."""
    limits = report["limits"]
    reason = report["killed_reason"]
    if reason == "timeout":
        text = f"was killed: it ran past the {limits['timeout_seconds']:g} s time limit"
    elif reason == "output_limit":
        text = "was killed: it printed far more than the output limit"
    elif reason is not None:
        text = f"was killed ({reason})"
    elif report["memory_error"]:
        text = f"failed: out of memory (limit {limits['memory_limit_mb']} MB)"
    elif report["exit_code"] != 0:
        text = f"failed with exit code {report['exit_code']}"
    else:
        text = "finished (exit code 0)"
    capped = f" (reduced to the allowed maximum: {', '.join(limits['capped'])})" \
        if limits["capped"] else ""
    return f"The program {text} after {report['duration_seconds']:g} s{capped}."


def keep_head(text: str, limit: int) -> str:
    """The first ``limit`` characters of ``text``, saying how many were cut."""
    return text if len(text) <= limit else text[:limit] + f"\n... [{len(text) - limit} chars cut]"


def keep_tail(text: str, limit: int) -> str:
    """The last ``limit`` characters of ``text``, saying how many were cut."""
    return text if len(text) <= limit else f"[{len(text) - limit} chars cut] ...\n" + text[-limit:]


def strip_fence(code: str) -> str:
    """``code`` without a surrounding Markdown code fence (models often add one)."""
    text = code.strip()
    if text.startswith("```"):
        text = text.split("\n", 1)[1] if "\n" in text else ""
        text = text[: text.rfind("```")] if text.rstrip().endswith("```") else text
    return text

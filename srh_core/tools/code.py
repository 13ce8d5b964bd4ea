"""Code tools: run model-written Python in the sandbox, never in this process.

``code_executor(program, ...)`` and ``workspace_code_executor(program, ...)``
run an analysis program. Protocol: the training split (the whole data when
validation is disabled) goes to the program as JSON on stdin, and is also
pre-parsed into the global ``payload``::

    {"data": {name: [values, ...]},  # the target and every feature (sample variables)
     "target": str | None, "features": [str, ...], "split": "train",
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

``evaluate_code(model_code, predict_code, y, ...)`` scores a model that is
not an engine formula. ``model_code`` defines ``fit(X, y) -> params``,
``predict_code`` defines ``predict(X, params) -> array``; ``X`` is a dict of
1-D float arrays by feature name (every feature but the target; the global
``FEATURES`` lists them), ``y`` the training values of the target (or of the
``y`` expression). Inside the sandbox a fixed harness fits on the training
rows, round-trips ``params`` through JSON (so ``predict`` sees exactly what
is reported) and predicts the training and validation rows; the validation
target never enters the sandbox. Metrics are computed here with the
evaluator's metrics, in the common formula shape of
:mod:`srh_core.tools.formula` with ``formula = "<code model: SHA1[:12]>"``
and ``is_candidate = False`` (not an engine formula). Any failure of the
code (an exception in a step, a kill, missing or malformed predictions) is
an ``ok=False`` result naming the step, since there are no metrics to give.

Limits: a limit argument below its minimum (timeout <= 0, memory < 128 MB,
output < 256 bytes) or not finite is a ToolArgumentError; a larger one is
reduced to the smallest of itself, the sandbox maximum and the run setting
``code_max_timeout_seconds`` / ``code_max_memory_limit_mb`` /
``code_max_output_limit_bytes`` (read from ``context.args``; defaults in
``LIMITS``). ``result["limits"]`` holds the values used and which were capped.
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

import srh_engine as engine
from srh_core.errors import ToolArgumentError
from srh_core.evaluator.metrics import prediction_metrics
from srh_core.sandbox import limits as sandbox_limits
from srh_core.sandbox import run_python_with_json
from srh_core.sandbox.runner import SandboxResult
from srh_core.tools.analysis.variables import sample_names
from srh_core.tools.base import BaseTool
from srh_core.tools.formula import MAX_DIAGNOSTIC_VARIABLES, FormulaTool, residual_diagnostics
from srh_core.tools.workspace_shell import context_workspace, no_workspace_reason
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
MAX_PAYLOAD_VALUES = 2_000_000
PAYLOAD_SEED = 0
STDOUT_SHOWN_CHARS = 3_500
STDERR_SHOWN_CHARS = 1_500
MAX_PARAMS_JSON_CHARS = 100_000
PARAMS_SHOWN_CHARS = 600


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


def data_payload(context: Any) -> dict[str, Any]:
    """The stdin payload of the executors: the training split's sample variables, bounded.

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


def _head(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n... [{len(text) - limit} chars cut]"


def _tail(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"[{len(text) - limit} chars cut] ...\n" + text[-limit:]


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
        `import sys, json; d = json.loads(sys.stdin.read())` (or use the global
        `payload`): d["data"] maps each variable name to a list of values,
        d["target"] names the target, d["features"] the other variables. Print
        the results (output is cut at the limit). No network, no subprocesses,
        no files outside a temporary directory.

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
        result, value = self.run_sandboxed(_strip_fence(program), payload, limits, workspace)
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
        lines.append("stdout:\n" + (_head(result["stdout"], STDOUT_SHOWN_CHARS) or "(empty)"))
        if result["stderr"].strip():
            lines.append("stderr:\n" + _tail(result["stderr"], STDERR_SHOWN_CHARS))
        if result["emitted"] is not None:
            lines.append("emit_result value: " + _head(json.dumps(result["emitted"]), 800))
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
        training data is on stdin as for code_executor.

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


def _strip_fence(code: str) -> str:
    text = code.strip()
    if text.startswith("```"):
        text = text.split("\n", 1)[1] if "\n" in text else ""
        text = text[: text.rfind("```")] if text.rstrip().endswith("```") else text
    return text


# The fixed program evaluate_code runs in the sandbox; the model's code is
# compiled under "<model_code>" / "<predict_code>" so tracebacks point into it.
EVALUATE_HARNESS = r'''
import json, linecache, sys, traceback
import numpy as np

def _load(code, name, label):
    filename = "<" + label + ">"
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    namespace = {"__name__": "__" + label + "__", "FEATURES": list(payload["features"])}
    exec(compile(code, filename, "exec"), namespace)
    if not callable(namespace.get(name)):
        raise TypeError(label + " must define a function named " + repr(name))
    return namespace[name]

def _plain(value):
    if isinstance(value, np.ndarray): return value.tolist()
    if isinstance(value, np.generic): return value.item()
    if isinstance(value, dict): return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)): return [_plain(v) for v in value]
    return value

def _columns(block):
    return {name: np.asarray(values, dtype=float) for name, values in block.items()}

def _predict(predict, block, params):
    return np.asarray(predict(_columns(block), params), dtype=float).reshape(-1).tolist()

def _main():
    stage, result = "model_code", {}
    try:
        fit = _load(payload["model_code"], "fit", "model_code")
        stage = "predict_code"
        predict = _load(payload["predict_code"], "predict", "predict_code")
        stage = "fit"
        params = fit(_columns(payload["train"]["X"]), np.asarray(payload["train"]["y"], float))
        stage = "params"
        result["params"] = params = json.loads(json.dumps(_plain(params)))
        stage = "predict_train"
        result["train"] = _predict(predict, payload["train"]["X"], params)
        if payload["validation"] is not None:
            stage = "predict_validation"
            result["validation"] = _predict(predict, payload["validation"]["X"], params)
    except BaseException as error:
        frames = [f for f in traceback.extract_tb(error.__traceback__)
                  if f.filename.startswith("<")]  # the model's code only, not the harness
        emit_result({"error": {"stage": stage, "type": type(error).__name__,
                               "message": str(error)[:2000],
                               "traceback": "".join(traceback.format_list(frames))[-3000:]}})
        sys.exit(1)
    emit_result(result)

_main()
'''

STAGES = {  # harness step -> (argument at fault, what was running)
    "model_code": ("model_code", "running model_code"),
    "predict_code": ("predict_code", "running predict_code"),
    "fit": ("model_code", "fit(X, y)"),
    "params": ("model_code", "converting fit's return value to JSON (return numbers, lists, "
               "dicts and strings)"),
    "predict_train": ("predict_code", "predict(X, params) on the training rows"),
    "predict_validation": ("predict_code", "predict(X, params) on the validation rows"),
}
NOT_A_CANDIDATE = ("a code model is never a candidate: write it as an engine formula and use "
                   "evaluate to make it one")


@BaseTool.register("evaluate_code")
class EvaluateCodeTool(FormulaTool, SandboxedTool):
    """Fit and score a Python-defined model in the sandbox; metrics computed outside."""

    def execute(
        self,
        model_code: str,
        predict_code: str,
        y: str | None = None,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
        memory_limit_mb: int = DEFAULT_MEMORY_LIMIT_MB,
        output_limit_bytes: int = DEFAULT_OUTPUT_LIMIT_BYTES,
        show_diagnostics: bool = True,
    ) -> dict[str, Any]:
        """Score a model written in Python when no engine formula can express it.

        Prefer an engine formula (evaluate) when one can express the model: a code
        model is never a candidate answer. Use this to test a hypothesis quickly
        (a lookup, a piecewise or iterative model) before writing it as a formula.
        Both parts run in an isolated sandbox with numpy and scipy; metrics on the
        training and validation splits are computed outside it (trust validation:
        fit sees the training target).

        Args:
            model_code: Python defining `def fit(X, y):` returning params (numbers,
                lists, dicts, strings), e.g. the coefficients of a least-squares fit.
                X is a dict of 1-D numpy arrays by feature name (all features except
                the target; FEATURES lists the names); y is a numpy array of the
                training target.
            predict_code: Python defining `def predict(X, params):` returning one
                prediction per row (array-like); it gets the params fit returned, after
                a JSON round trip. Put its imports inside this code too.
            y: Variable or expression to predict, e.g. "log(y)". Default: the target.
            timeout_seconds: Wall-clock limit in seconds, > 0; larger than the cap
                (120 s unless the run sets another) means the cap.
            memory_limit_mb: Memory limit in MB, >= 128; capped (4096 MB by default).
            output_limit_bytes: Most bytes of printed output kept, >= 256; capped
                (1 MiB by default).
            show_diagnostics: Add residual diagnostics of the training split.
        """
        codes = {"model_code": _strip_fence(model_code), "predict_code": _strip_fence(predict_code)}
        for name, code in codes.items():
            if not code.strip():
                raise ToolArgumentError(f"The {name!r} parameter must be non-empty Python source.",
                                        parameter=name)
        limits = self.resolve_limits(timeout_seconds, memory_limit_mb, output_limit_bytes)
        target = self.target_term(y)
        context = self.require_context()
        splits = {name: split for name, split in (("train", context.train_split),
                                                  ("validation", context.validation_split))
                  if split is not None}
        features = [n for n in sample_names(context) if n != context.target]
        y_true = {name: np.asarray(engine.evaluate(target.expression, split.data), dtype=float)
                  for name, split in splits.items()}
        payload = {**codes, "features": features, "target": target.text,
                   "train": {"X": _columns(splits["train"], features), "y": y_true["train"]},
                   "validation": {"X": _columns(splits["validation"], features)}
                   if "validation" in splits else None}
        result, value = self.run_sandboxed(EVALUATE_HARNESS, payload, limits)
        predictions = _checked_predictions(result, value, limits, y_true)
        entry = _code_entry(codes, target.text, value["params"], y_true, predictions)
        entry.update(stdout=_tail(result.stdout, STDERR_SHOWN_CHARS),
                     stderr=_tail(result.stderr, STDERR_SHOWN_CHARS), limits=limits.to_dict())
        if show_diagnostics:
            data = {n: splits["train"].data[n] for n in features[:MAX_DIAGNOSTIC_VARIABLES]}
            entry["diagnostics"] = {"split": "train", **residual_diagnostics(
                y_true["train"], predictions["train"], data)}
        return entry

    @classmethod
    def format_result_dict(cls, result: dict[str, Any]) -> str:
        """The common evaluation text, then the model's params and printed output."""
        lines = [cls.format_evaluation_result(result, title="evaluate_code (code model)")]
        if result.get("description"):
            lines.append(f"  description: {result['description']}")
        lines.append("  params: " + _head(json.dumps(result["params"]), PARAMS_SHOWN_CHARS))
        if result["stdout"].strip():
            lines.append("  stdout:\n" + _tail(result["stdout"], STDERR_SHOWN_CHARS // 2))
        return "\n".join(lines)


def _columns(split: Any, features: list[str]) -> dict[str, np.ndarray]:
    return {name: np.asarray(split.data[name], dtype=float) for name in features}


def _failure(parameter: str, message: str, result: SandboxResult) -> ToolArgumentError:
    detail = _tail(result.stderr.strip(), STDERR_SHOWN_CHARS)
    return ToolArgumentError(message + (f"\nstderr:\n{detail}" if detail else ""),
                             parameter=parameter)


def _checked_predictions(result: SandboxResult, value: Any, limits: CodeLimits,
                         y_true: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Predictions per split, or a ToolArgumentError saying which step failed and why."""
    if isinstance(value, Mapping) and isinstance(value.get("error"), Mapping):
        error = value["error"]
        parameter, doing = STAGES.get(error.get("stage"), ("model_code", "the code"))
        memory = f" (memory limit {limits.memory_limit_mb} MB)" \
            if error.get("type") == "MemoryError" else ""
        raise ToolArgumentError(f"The code failed while {doing}: {error.get('type')}{memory}: "
                                f"{error.get('message')}\n{error.get('traceback', '')}",
                                parameter=parameter)
    report = run_report(result, limits)
    if not result.ok or not isinstance(value, Mapping) or "train" not in value:
        raise _failure("model_code", outcome_text(report) + " No predictions were returned.",
                       result)
    predictions = {}
    for split, truth in y_true.items():
        predicted = np.asarray(value.get(split), dtype=float)
        if predicted.size not in (1, truth.size):
            raise _failure("predict_code", f"predict returned {predicted.size} values for the "
                           f"{truth.size} {split} rows; return one prediction per row.", result)
        predictions[split] = np.broadcast_to(predicted.reshape(-1)[0], truth.shape) \
            if predicted.size == 1 else predicted.reshape(truth.shape)
    return predictions


def _code_entry(codes: Mapping[str, str], target: str, params: Any,
                y_true: Mapping[str, np.ndarray],
                predictions: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """The common formula-tool shape for a code model (never a candidate)."""
    digest = hashlib.sha1(f"{codes['model_code']}\n#---\n{codes['predict_code']}".encode(),
                          usedforsecurity=False).hexdigest()
    n_params = _count_numbers(params)
    metrics = {split: {**prediction_metrics(truth, predictions[split], n_params),
                       "n_params": n_params} for split, truth in y_true.items()}
    text = json.dumps(params)
    shown = params if len(text) <= MAX_PARAMS_JSON_CHARS else {
        "truncated": True, "chars": len(text), "preview": text[:2000]}
    description = params.get("description") if isinstance(params, Mapping) else None
    return {"formula": f"<code model: {digest[:12]}>", "is_candidate": False, "target": target,
            "metrics": metrics, "warnings": [NOT_A_CANDIDATE], "params": shown,
            "description": description if isinstance(description, str) else None,
            "code_sha1": digest}


def _count_numbers(value: Any) -> int:
    """Numeric leaves of a JSON value (the model's parameter count, for AIC/BIC)."""
    count, pending = 0, [value]
    while pending:
        item = pending.pop()
        if isinstance(item, Mapping):
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
        elif isinstance(item, int | float) and not isinstance(item, bool):
            count += 1
    return count

"""The ``evaluate_code`` tool: fit and score a model written in Python, in the sandbox.

``evaluate_code(model_code, predict_code, y, ...)`` scores a model that is
not an engine formula. The reference's contract: ``model_code`` defines
``func(data) -> model`` (``data``: every variable by name, the target
included, as 1-D float arrays of the training rows; ``model``: a dict with a
``description``), ``predict_code`` defines ``func(data, model) -> array``
(``data``: the features only). Also accepted: ``fit(X, y) -> params`` and
``predict(X, params)`` (``X`` the features, ``y`` the training values of the
target or of the ``y`` expression). The global ``FEATURES`` lists the
feature names. Inside the sandbox a fixed harness fits on the training
rows, round-trips the model through JSON (so the prediction sees exactly
what is reported) and predicts the training and validation rows; no target
reaches a prediction and the validation target never enters the sandbox.
Metrics are computed here with the evaluator's metrics, in the common
formula shape of :mod:`srh_core.tools.formula` with ``formula`` the model's
``description`` (else ``"<code model: SHA1[:12]>"``) and ``is_candidate =
False``: the reference makes a code model a candidate (its complexity the
code's length); here only an engine formula is one, since a description
cannot be evaluated, judged or ranked by node count. Any failure of the
code (an exception in a step, a kill, missing or malformed predictions) is
an ``ok=False`` result naming the step, since there are no metrics to give.

The limits are checked and capped as for the other code tools (see
:mod:`srh_core.tools.code_sandbox`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

import numpy as np

import srh_engine as engine
from srh_core.errors import ToolArgumentError
from srh_core.evaluator.metrics import prediction_metrics
from srh_core.sandbox.runner import SandboxResult
from srh_core.tools.analysis.variables import sample_names
from srh_core.tools.base import BaseTool
from srh_core.tools.code_sandbox import (
    DEFAULT_MEMORY_LIMIT_MB,
    DEFAULT_OUTPUT_LIMIT_BYTES,
    DEFAULT_TIMEOUT_SECONDS,
    STDERR_SHOWN_CHARS,
    CodeLimits,
    SandboxedTool,
    keep_head,
    keep_tail,
    outcome_text,
    run_report,
    strip_fence,
)
from srh_core.tools.diagnostics import residual_diagnostics
from srh_core.tools.formula import MAX_DIAGNOSTIC_VARIABLES, FormulaTool, split_results

MAX_PARAMS_JSON_CHARS = 100_000
MAX_DESCRIPTION_CHARS = 300
PARAMS_SHOWN_CHARS = 600

# The fixed program evaluate_code runs in the sandbox; the model's code is
# compiled under "<model_code>" / "<predict_code>" so tracebacks point into it.
EVALUATE_HARNESS = r'''
import json, linecache, sys, traceback
import numpy as np

def _load(code, names, label):
    """The first of ``names`` that ``code`` defines as a function: (name, function)."""
    filename = "<" + label + ">"
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    namespace = {"__name__": "__" + label + "__", "FEATURES": list(payload["features"])}
    exec(compile(code, filename, "exec"), namespace)
    for name in names:
        if callable(namespace.get(name)):
            return name, namespace[name]
    raise TypeError(label + " must define a function named " + " or ".join(map(repr, names)))

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
        contract, fit = _load(payload["model_code"], ("func", "fit"), "model_code")
        stage = "predict_code"
        _, predict = _load(payload["predict_code"],
                           ("func",) if contract == "func" else ("predict",), "predict_code")
        stage = "fit"
        train = payload["train"]
        if contract == "func":  # the reference's: func(data) -> model dict, target included
            params = fit({**_columns(train["X"]),
                          payload["target_name"]: np.asarray(train["target"], float)})
            if not isinstance(params, dict):
                raise TypeError("func(data) must return a dict (the model, with a "
                                "'description'); it returned " + type(params).__name__)
        else:
            params = fit(_columns(train["X"]), np.asarray(train["y"], float))
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
    "fit": ("model_code", "fitting: func(data) or fit(X, y)"),
    "params": ("model_code", "converting fit's return value to JSON (return numbers, lists, "
               "dicts and strings)"),
    "predict_train": ("predict_code", "predicting the training rows (the target is not "
                      "in their data)"),
    "predict_validation": ("predict_code", "predicting the validation rows (the target is "
                           "not in their data)"),
}
NOT_A_CANDIDATE = ("a code model is never a candidate: write it as an engine formula and use "
                   "evaluate_formula to make it one")


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

        Prefer an engine formula (evaluate_formula) when one can express the model: a code
        model is never a candidate answer. Use this to test a hypothesis quickly
        (a lookup, a piecewise or iterative model) before writing it as a formula.
        Both parts run in an isolated sandbox with numpy and scipy; metrics on the
        training and validation splits are computed outside it (trust validation:
        the fit sees the training target, the prediction never sees a target).

        Args:
            model_code: Python defining `def func(data):` that fits and returns the model
                as a dict with a 'description' (a concise formula, e.g. "y = a*x**2 + b")
                and its numbers, lists or strings; data maps every variable name,
                the target included, to a numpy array of the training rows. (Also
                accepted: `def fit(X, y):` with X the features only and y the values
                of the y argument.)
            predict_code: Python defining `def func(data, model):` (with fit: `def
                predict(X, params):`) returning one prediction per row (array-like) of
                the y argument; data holds the features only, model is what the fit
                returned after a JSON round trip. Put its imports inside this code too.
            y: Variable or expression to predict, e.g. "log(y)". Default: the target.
            timeout_seconds: Wall-clock limit in seconds, > 0; larger than the cap
                (120 s unless the run sets another) means the cap.
            memory_limit_mb: Memory limit in MB, >= 128; capped (4096 MB by default).
            output_limit_bytes: Most bytes of printed output kept, >= 256; capped
                (1 MiB by default).
            show_diagnostics: Add residual diagnostics of the training split.
        """
        codes = {"model_code": strip_fence(model_code), "predict_code": strip_fence(predict_code)}
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
                   "target_name": context.target,
                   "train": {"X": _columns(splits["train"], features), "y": y_true["train"],
                             "target": np.asarray(splits["train"].data[context.target],
                                                  dtype=float)},
                   "validation": {"X": _columns(splits["validation"], features)}
                   if "validation" in splits else None}
        result, value = self.run_sandboxed(EVALUATE_HARNESS, payload, limits)
        predictions = _checked_predictions(result, value, limits, y_true)
        entry = _code_entry(codes, target.text, value["params"], y_true, predictions)
        entry.update(stdout=keep_tail(result.stdout, STDERR_SHOWN_CHARS),
                     stderr=keep_tail(result.stderr, STDERR_SHOWN_CHARS), limits=limits.to_dict())
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
        lines.append("  params: " + keep_head(json.dumps(result["params"]), PARAMS_SHOWN_CHARS))
        if result["stdout"].strip():
            lines.append("  stdout:\n" + keep_tail(result["stdout"], STDERR_SHOWN_CHARS // 2))
        return "\n".join(lines)


def _columns(split: Any, features: list[str]) -> dict[str, np.ndarray]:
    return {name: np.asarray(split.data[name], dtype=float) for name in features}


def _failure(parameter: str, message: str, result: SandboxResult) -> ToolArgumentError:
    detail = keep_tail(result.stderr.strip(), STDERR_SHOWN_CHARS)
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
    description = " ".join(description.split())[:MAX_DESCRIPTION_CHARS] \
        if isinstance(description, str) and description.strip() else None
    return {"formula": description or f"<code model: {digest[:12]}>", "is_candidate": False,
            "target": target,
            "metrics": metrics, "data_split_results": split_results(metrics),
            "warnings": [NOT_A_CANDIDATE], "params": shown,
            "description": description,
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

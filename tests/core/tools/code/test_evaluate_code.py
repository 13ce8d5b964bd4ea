"""evaluate_code: exact metrics outside the sandbox, failures as ok=False, escapes stopped.

Decision under test: any failure of the model's code (exception, kill, bad
predictions, sandbox refusal) is an ``ok=False`` result naming the step,
because there are no metrics to report.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from srh_core.context import AgentContext
from srh_core.evaluator.metrics import prediction_metrics
from srh_core.tools.code_model import EvaluateCodeTool
from tests.core.tools.code.helpers import ESCAPES, call, escape_timeout, indent, make_context

LSTSQ_FIT = """
import numpy as np

def fit(X, y):
    A = np.column_stack([X[name] for name in FEATURES] + [np.ones_like(y)])
    coef, *_ = np.linalg.lstsq(A, y, rcond=None)
    return {"coef": coef, "description": "y = a*x1 + b*x2 + c"}
"""
LINEAR_PREDICT = """
def predict(X, params):
    *slopes, intercept = params["coef"]
    return sum(c * X[name] for c, name in zip(slopes, FEATURES)) + intercept
"""
MEAN_FIT = "def fit(X, y):\n    return {'mean': float(y.mean())}"
MEAN_PREDICT = "import numpy as np\ndef predict(X, params):\n    return np.full(len(X['x1']), " \
    "params['mean'])"


def evaluate(context: AgentContext, **params: Any) -> Any:
    return call("evaluate_code", context, **params)


def test_exact_model_gives_exact_metrics_in_the_common_shape(context: AgentContext) -> None:
    result = evaluate(context, model_code=LSTSQ_FIT, predict_code=LINEAR_PREDICT)
    assert result.ok, result.result_str
    entry = result.result
    assert entry["formula"] == "y = a*x1 + b*x2 + c" and len(entry["code_sha1"]) == 40
    assert entry["is_candidate"] is False and entry["target"] == "y"
    assert set(entry["metrics"]) == {"train", "validation"}
    for split in ("train", "validation"):
        metrics = entry["metrics"][split]
        assert metrics["mse"] < 1e-24 and metrics["r2"] == pytest.approx(1.0)
        assert metrics["n_params"] == 3
    assert entry["metrics"]["train"]["n_samples"] == 30
    assert entry["metrics"]["validation"]["n_samples"] == 10
    assert entry["description"] == "y = a*x1 + b*x2 + c"
    assert entry["params"]["coef"] == pytest.approx([2.5, -1.0, 1.0])
    assert entry["diagnostics"]["exact"] is True
    assert "evaluate_code (code model)" in result.result_str
    json.dumps(result.to_dict(), allow_nan=False)


def test_metrics_equal_the_evaluator_metrics_of_the_same_predictions(
        context: AgentContext) -> None:
    result = evaluate(context, model_code=MEAN_FIT, predict_code=MEAN_PREDICT,
                      show_diagnostics=False)
    assert result.ok, result.result_str
    mean = float(context.train_split.data["y"].mean())
    for split, view in (("train", context.train_split), ("validation", context.validation_split)):
        truth = view.data["y"]
        expected = {**prediction_metrics(truth, np.full(truth.shape, mean), 1), "n_params": 1}
        assert result.result["metrics"][split] == pytest.approx(expected, nan_ok=True)
    assert "diagnostics" not in result.result


def test_validation_target_never_enters_the_sandbox(context: AgentContext) -> None:
    spy = ("import __main__, json\n"
           "def fit(X, y):\n"
           "    p = __main__.payload\n"
           "    print(json.dumps({'validation': sorted(p['validation']),"
           " 'train': sorted(p['train']), 'features': FEATURES, 'n': len(y)}))\n"
           "    return {'mean': float(y.mean())}\n")
    result = evaluate(context, model_code=spy, predict_code=MEAN_PREDICT)
    assert result.ok, result.result_str
    seen = json.loads(result.result["stdout"].strip().splitlines()[-1])
    assert seen == {"validation": ["X"], "train": ["X", "target", "y"], "features": ["x1", "x2"],
                    "n": 30}  # the training target (for func(data)) and y; no validation one


# the reference's contract: func(data) with the target in data, func(data, model) without
FUNC_FIT = """
import numpy as np

def func(data):
    A = np.column_stack([data["x1"], data["x2"], np.ones_like(data["y"])])
    coef, *_ = np.linalg.lstsq(A, data["y"], rcond=None)
    return {"coef": coef, "description": "y = a*x1 + b*x2 + c"}
"""
FUNC_PREDICT = """
def func(data, model):
    a, b, c = model["coef"]
    return a * data["x1"] + b * data["x2"] + c
"""


def test_the_reference_contract_fits_with_the_target_and_predicts_without(
        context: AgentContext) -> None:
    result = evaluate(context, model_code=FUNC_FIT, predict_code=FUNC_PREDICT)
    assert result.ok, result.result_str
    entry = result.result
    assert entry["formula"] == entry["description"] == "y = a*x1 + b*x2 + c"
    assert entry["metrics"]["validation"]["mse"] < 1e-24 and entry["is_candidate"] is False
    assert entry["params"]["coef"] == pytest.approx([2.5, -1.0, 1.0])
    peeking = "def func(data, model):\n    return data['y']"
    refused = evaluate(context, model_code=FUNC_FIT, predict_code=peeking)
    assert not refused.ok and "KeyError" in refused.result_str
    assert "the target is not in their data" in refused.result_str
    not_a_dict = evaluate(context, model_code="def func(data):\n    return [1.0]",
                          predict_code=FUNC_PREDICT)
    assert not not_a_dict.ok and "must return a dict" in not_a_dict.result_str
    mixed = evaluate(context, model_code=FUNC_FIT, predict_code=LINEAR_PREDICT)
    assert not mixed.ok and "function named 'func'" in mixed.result_str


def test_transformed_target_is_scored_but_not_a_candidate(context: AgentContext) -> None:
    result = evaluate(context, model_code=MEAN_FIT, predict_code=MEAN_PREDICT, y="log(y)")
    assert result.ok, result.result_str
    assert result.result["target"] == "log(y)" and not result.result["is_candidate"]


def test_fenced_code_and_scalar_predictions_are_accepted(context: AgentContext) -> None:
    fenced = "```python\n" + MEAN_FIT + "\n```"
    scalar = "def predict(X, params):\n    return params['mean']"
    result = evaluate(context, model_code=fenced, predict_code=scalar)
    assert result.ok, result.result_str
    assert result.result["metrics"]["validation"]["n_finite"] == 10


FAILURES = {
    "fit_raises": ("def fit(X, y):\n    return 1 / 0", MEAN_PREDICT,
                   ["fitting", "ZeroDivisionError", '<model_code>", line 2']),
    "syntax_error": ("def fit(X, y) return 1", MEAN_PREDICT, ["running model_code",
                                                             "SyntaxError"]),
    "no_fit_function": ("x = 1", MEAN_PREDICT, ["function named 'func' or 'fit'"]),
    "no_predict_function": (MEAN_FIT, "y = 2", ["function named 'predict'"]),
    "params_not_json": ("def fit(X, y):\n    return {'f': print}", MEAN_PREDICT,
                        ["converting fit's return value"]),
    "wrong_length": (MEAN_FIT, "def predict(X, params):\n    return [1.0, 2.0]",
                     ["predict returned 2 values for the 30 train rows"]),
    "non_numeric": (MEAN_FIT, "def predict(X, params):\n    return ['a'] * len(X['x1'])",
                    ["predicting the training rows", "ValueError"]),
    "exits_early": ("import os\nos._exit(0)", MEAN_PREDICT, ["No predictions were returned"]),
    "sys_exit": ("def fit(X, y):\n    raise SystemExit(0)", MEAN_PREDICT, ["SystemExit"]),
}


@pytest.mark.parametrize(("model_code", "predict_code", "needles"), FAILURES.values(),
                         ids=FAILURES.keys())
def test_code_failures_are_ok_false_naming_the_step(context: AgentContext, model_code: str,
                                                    predict_code: str,
                                                    needles: list[str]) -> None:
    result = evaluate(context, model_code=model_code, predict_code=predict_code,
                      timeout_seconds=10)
    assert not result.ok
    for needle in needles:
        assert needle in result.result_str


ESCAPE_NEEDLES = {
    "fork": "not allowed in the sandbox", "subprocess": "not allowed in the sandbox",
    "socket": "not allowed in the sandbox", "read_passwd": "not allowed in the sandbox",
    "write_outside": "not allowed in the sandbox", "infinite_loop": "time limit",
    "memory_bomb": "MemoryError", "output_flood": "killed",
}


@pytest.mark.parametrize("name", ESCAPES, ids=ESCAPES.keys())
def test_escapes_inside_fit_are_stopped_and_reported(context: AgentContext, name: str) -> None:
    model_code = "def fit(X, y):\n" + indent(ESCAPES[name]) + "\n    return {}"
    result = evaluate(context, model_code=model_code, predict_code=MEAN_PREDICT,
                      timeout_seconds=escape_timeout(name), memory_limit_mb=256,
                      output_limit_bytes=4096)
    assert not result.ok
    assert ESCAPE_NEEDLES[name] in result.result_str
    assert not Path("/tmp/srh-code-tool-escape.txt").exists()


@pytest.mark.parametrize(("params", "needle"), [
    ({"model_code": "  "}, "'model_code'"),
    ({"predict_code": ""}, "'predict_code'"),
    ({"timeout_seconds": 0}, "'timeout_seconds'"),
    ({"timeout_seconds": -5}, "> 0"),
    ({"timeout_seconds": "nan"}, "'timeout_seconds'"),
    ({"memory_limit_mb": 1}, ">= 128"),
    ({"output_limit_bytes": 10}, ">= 256"),
    ({"y": "yy"}, "Did you mean 'y'?"),
    ({"y": "__import__('os')"}, "'y'"),
], ids=["blank_model", "empty_predict", "timeout_zero", "timeout_negative", "timeout_nan",
        "memory_tiny", "output_tiny", "y_unknown", "y_dunder"])
def test_invalid_arguments(context: AgentContext, params: dict[str, Any], needle: str) -> None:
    arguments = {"model_code": MEAN_FIT, "predict_code": MEAN_PREDICT, **params}
    result = evaluate(context, **arguments)
    assert not result.ok
    assert needle in result.result_str


def test_limits_are_capped_by_arguments_and_run_settings() -> None:
    context = make_context(code_max_timeout_seconds=7, code_max_memory_limit_mb=512)
    tool = EvaluateCodeTool(context)
    limits = tool.resolve_limits(1e9, 10**6, 10**9)
    assert (limits.timeout_seconds, limits.memory_limit_mb) == (7.0, 512)
    assert limits.output_limit_bytes == 1_048_576
    assert limits.capped == ("timeout_seconds", "memory_limit_mb", "output_limit_bytes")
    assert tool.resolve_limits(2, 300, 1000).capped == ()
    result = evaluate(context, model_code=MEAN_FIT, predict_code=MEAN_PREDICT,
                      timeout_seconds=10**6)
    assert result.ok and result.result["limits"]["timeout_seconds"] == 7.0

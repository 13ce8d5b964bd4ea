"""sample_weight / the weights setting: context, metrics, tools, estimator, run directory, CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import srh_engine as engine
from srh_core.agent import SRAgent
from srh_core.context import AgentContext, load_context_data
from srh_core.errors import ConfigurationError, DataError
from srh_core.estimator import SRHarnessRegressor
from srh_core.evaluator.metrics import prediction_metrics
from srh_core.tools.base import BaseTool

ROOT = Path(__file__).resolve().parents[2]
RNG = np.random.default_rng(3)
A = RNG.uniform(0.5, 3.0, 300)
B = RNG.uniform(0.5, 3.0, 300)
FIRST = A < 1.5
Y = np.where(FIRST, A * B**2, np.sin(A) + B + 5.0)  # two regimes; the truth of the first
TOOLS = ["evaluate_formula", "expression_search", "power_law_fit", "polynomial_fit",
         "submit_formula"]


def _context(weights, validation=0.0):
    return AgentContext(args={"validation_fraction": validation, "weights": "w"},
                        data={"a": A, "b": B, "w": weights, "y": Y}, target="y")


def test_the_weights_column_is_data_but_not_a_feature():
    context = _context(FIRST.astype(float))
    assert context.feature_names() == ("a", "b") and "w" in context.data
    np.testing.assert_array_equal(context.train_split.row_weights(), FIRST.astype(float))
    result = BaseTool.create("evaluate_formula", context)(f="a*w")
    assert not result.ok and "the weights column" in result.result_str


@pytest.mark.parametrize(("weights", "message"), [
    (-np.ones(300), "finite and >= 0"), (np.zeros(300), "not all 0")],
    ids=["negative", "all-zero"])
def test_bad_weights_are_refused_when_the_data_is_committed(weights, message):
    with pytest.raises(DataError, match=message):
        _context(weights)
    with pytest.raises(DataError, match="'weights' setting names 'v'"):
        AgentContext(args={"weights": "v"}, data={"a": A, "y": Y}, target="y")


def test_weighted_metrics_are_the_weighted_mse_and_r2():
    weights = np.where(FIRST, 1.0, 3.0)
    prediction = A * B**2
    metrics = prediction_metrics(Y, prediction, 0, weights)
    mse = float(weights @ (prediction - Y) ** 2) / weights.sum()
    mean = float(weights @ Y) / weights.sum()
    spread = float(weights @ (Y - mean) ** 2) / weights.sum()
    assert metrics["mse"] == pytest.approx(mse) and metrics["r2"] == pytest.approx(1 - mse / spread)
    zero = prediction_metrics(Y, prediction, 0, FIRST.astype(float))
    assert zero["mse"] == 0.0 and zero["r2"] == 1.0 and zero["n_samples"] == int(FIRST.sum())
    assert prediction_metrics(Y, prediction, 0)["mse"] > 1.0


def test_a_tool_scores_fits_and_says_it_weighs():
    context = _context(FIRST.astype(float), validation=0.2)
    result = BaseTool.create("evaluate_formula", context)(f="a*b**2")
    train = result.result["metrics"]["train"]
    assert train["mse"] == 0.0 and train["r2"] == 1.0
    assert "metrics weighted by w" in result.result_str
    fitted = BaseTool.create("evaluate_formula", context)(f='param("k")*a*b**2 + param("c")',
                                                          fit=True)
    assert fitted.result["metrics"]["train"]["mse"] < 1e-20


def test_a_tools_own_fit_is_refitted_under_the_weighted_loss():
    weights = np.where(FIRST, 1.0, 0.01)
    y = np.where(FIRST, 2.0 * A + 1.0, -3.0 * A)
    context = AgentContext(args={"validation_fraction": 0.0, "weights": "w"},
                           data={"a": A, "w": weights, "y": y}, target="y")
    result = BaseTool.create("polynomial_fit", context)(max_degree=1)
    root = np.sqrt(weights)
    expected = np.linalg.lstsq(np.column_stack([A, np.ones_like(A)]) * root[:, None],
                               y * root, rcond=None)[0]
    prediction = engine.parse(result.result["formula"]).evaluate({"a": A})
    np.testing.assert_allclose(prediction, expected[0] * A + expected[1], rtol=1e-6)


def test_the_estimator_finds_the_weighted_truth():
    weighted = SRHarnessRegressor(max_refinement_depth=3, tools=TOOLS).fit(
        np.column_stack([A, B]), Y, variable_names=["a", "b"], sample_weight=FIRST)
    assert weighted.formula_ == "a*b**2", weighted.formula_
    assert weighted.pareto_front_[0]["metrics"]["train"]["mse"] == 0.0
    plain = SRHarnessRegressor(max_refinement_depth=3, tools=TOOLS).fit(
        np.column_stack([A, B]), Y, variable_names=["a", "b"])
    assert plain.formula_ != "a*b**2"  # the weights change the answer
    assert weighted.variable_names_ == ["a", "b"]


def test_estimator_weights_that_say_nothing_or_are_bad():
    X = np.column_stack([A, B])
    model = SRHarnessRegressor(max_refinement_depth=1, tools=TOOLS)
    assert model.fit(X, A * B, sample_weight=np.full(300, 2.0)).result_ is not None
    with pytest.raises(ConfigurationError, match="one per row of X"):
        model.fit(X, Y, sample_weight=np.ones(5))
    with pytest.raises(ConfigurationError, match="every weight is zero"):
        model.fit(X, Y, sample_weight=np.zeros(300))


class _StopAfterFirstStep:
    def __call__(self, event):
        if event["event"] == "step":
            raise KeyboardInterrupt


def test_a_resumed_run_keeps_its_weights(tmp_path):
    agent = SRAgent(weights="w", save_path=str(tmp_path / "run"), max_refinement_depth=2,
                    run_id="weights", validation_fraction=0.0, early_stop=False, tools=TOOLS)
    agent.observers.append(_StopAfterFirstStep())
    first = agent.run({"a": A, "b": B, "w": FIRST.astype(float)}, {"y": Y}, "y")
    assert first["status"] == "interrupted"
    assert set(np.load(tmp_path / "run" / "data.npz")) == {"a", "b", "w", "y"}
    resumed = SRAgent.resume(tmp_path / "run")
    assert resumed["status"] == "completed"
    best = resumed["candidates"][resumed["best_candidate"]]
    assert best["metrics"]["train"]["n_samples"] == int(FIRST.sum())


def test_a_manifest_names_its_weights_column(tmp_path):
    root = tmp_path / "context.data"
    root.mkdir()
    variables = {}
    for name, values in (("a", A), ("b", B), ("w", FIRST.astype(float)), ("y", Y)):
        np.save(root / f"{name}.npy", values)
        variables[name] = {"file": f"{name}.npy", "description": name}
    (root / "manifest.json").write_text(json.dumps({"target": "y", "weights": "w",
                                                    "variables": variables}))
    assert load_context_data(root)["weights"] == "w"
    done = subprocess.run(
        [sys.executable, "-m", "srh_core", "run", "--data", str(root), "-L", "3", "--json",
         "--tools", ",".join(TOOLS), "--out", str(tmp_path / "run")],
        cwd=ROOT, text=True, capture_output=True, timeout=240)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["candidates"][result["best_candidate"]]["formula"] == "a*b**2"
    assert json.loads((tmp_path / "run" / "settings.json").read_text())["weights"] == "w"
    (root / "manifest.json").write_text(json.dumps({"target": "y", "weights": "v",
                                                    "variables": variables}))
    from srh_core.errors import ContextManifestError

    with pytest.raises(ContextManifestError, match="Weights 'v' is not a variable"):
        load_context_data(root)


def test_the_weights_flag_sets_the_setting():
    from srh_core.cli import build_parser
    from srh_core.cli.commands import settings_from_args

    args = build_parser().parse_args(["run", "--data", "d.csv", "--target", "y",
                                      "--weights", "w"])
    assert settings_from_args(args).weights == "w"
    with pytest.raises(ConfigurationError, match="weights"):
        SRAgent(weights="not a name")

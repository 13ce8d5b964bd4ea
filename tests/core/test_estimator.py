"""SRHarnessRegressor as a scikit-learn estimator: its own checks, pipelines, search, CV."""

from __future__ import annotations

import importlib.util
import inspect
import subprocess
import sys
import warnings

import numpy as np
import pytest

from srh_core.agent.settings import SearchSettings
from srh_core.errors import ConfigurationError
from srh_core.estimator import (
    ESTIMATOR_ONLY,
    NoFormulaFoundWarning,
    NotFittedError,
    SRHarnessRegressor,
    expected_failed_checks,
)

sklearn = pytest.importorskip("sklearn")

from sklearn.base import clone  # noqa: E402
from sklearn.model_selection import GridSearchCV, cross_val_score  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import FunctionTransformer  # noqa: E402
from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

TINY = {"max_refinement_depth": 1}  # one offline step: enough for a formula, fast


def kinetic(n: int = 120, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.uniform(1, 5, size=(n, 2))
    return X, 0.5 * X[:, 0] * X[:, 1] ** 2


@parametrize_with_checks([SRHarnessRegressor(**TINY)],
                         expected_failed_checks=expected_failed_checks)
def test_scikit_learn_estimator_checks(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NoFormulaFoundWarning)  # tiny random check data
        check(estimator)


def test_refit_comparisons_are_expected_failures_only_for_a_varying_search():
    from sklearn.utils import estimator_checks

    assert list(expected_failed_checks(SRHarnessRegressor())) == [
        "check_sample_weight_equivalence_on_dense_data"]  # weight 2 is not a repeated row
    varying = expected_failed_checks(SRHarnessRegressor(llm_provider="openai"))
    assert varying == expected_failed_checks(SRHarnessRegressor(time_limit=5.0))
    assert "check_fit_idempotent" in varying and all(varying.values())
    assert all(callable(getattr(estimator_checks, name)) for name in varying)
    assert SRHarnessRegressor(llm_provider="openai").__sklearn_tags__().non_deterministic


def test_every_search_setting_is_a_parameter_with_the_same_default():
    parameters = inspect.signature(SRHarnessRegressor).parameters
    fields = {name: field for name, field in SearchSettings.model_fields.items()
              if name not in ("run_id", "units", "weights")}  # X_units, y_units: units;
    # fit's sample_weight: weights
    assert set(parameters) == {*fields, *ESTIMATOR_ONLY}
    for name, field in fields.items():
        default = field.get_default(call_default_factory=True)
        assert parameters[name].default == (None if default == [] else default), name
    assert SRHarnessRegressor().get_params()["max_refinement_depth"] == 20


def test_fit_predict_score_and_the_pysr_like_accessors():
    X, y = kinetic()
    model = SRHarnessRegressor(**TINY)
    with pytest.raises(NotFittedError):
        model.predict(X)
    model.fit(X, y, variable_names=["m", "v"])
    assert model.n_features_in_ == 2 and model.variable_names_ == ["m", "v"]
    assert model.score(X, y) > 0.999999
    fresh = np.column_stack([np.linspace(1, 5, 7), np.linspace(2, 3, 7)])
    np.testing.assert_allclose(model.predict(fresh), 0.5 * fresh[:, 0] * fresh[:, 1] ** 2,
                               rtol=1e-8)
    m, v = sorted(model.sympy().free_symbols, key=str)
    assert (model.sympy() - m * v**2 / 2).simplify() == 0
    assert "v" in model.latex() and "{" in model.latex()
    rows = model.front_table()
    assert rows[0]["formula"] == model.best_formula_ == model.formula_
    if importlib.util.find_spec("pandas") is None:
        with pytest.raises(ImportError, match="front_table"):
            _ = model.equations_
    else:
        assert list(model.equations_["formula"]) == [row["formula"] for row in rows]
    assert str(model.sympy(len(rows) - 1))


def test_dataframe_columns_become_usable_variable_names():
    pd = pytest.importorskip("pandas")
    X, y = kinetic()
    frame = pd.DataFrame(X, columns=["mass (kg)", "e"])
    model = SRHarnessRegressor(**TINY).fit(frame, y)
    assert list(model.feature_names_in_) == ["mass (kg)", "e"]
    assert model.variable_names_ == ["mass_kg_", "x2"]  # e is Euler's number in formulas
    assert model.score(frame, y) > 0.999999


def test_in_a_pipeline_a_grid_search_cross_validation_and_clone():
    X, y = kinetic(90)
    pipeline = make_pipeline(FunctionTransformer(), SRHarnessRegressor(**TINY))
    assert pipeline.fit(X, y).score(X, y) > 0.999999
    grid = GridSearchCV(SRHarnessRegressor(**TINY), {"validation_fraction": [0.0, 0.25]}, cv=2)
    grid.fit(X, y)
    assert grid.best_score_ > 0.999999 and set(grid.cv_results_["param_validation_fraction"])
    scores = cross_val_score(SRHarnessRegressor(**TINY), X, y, cv=3)
    assert scores.shape == (3,) and scores.min() > 0.999999
    fitted = SRHarnessRegressor(seed=3, **TINY).fit(X, y)
    copy = clone(fitted)
    assert copy.get_params() == fitted.get_params() and not hasattr(copy, "formula_")


def test_bad_parameters_are_value_errors_naming_the_parameter():
    X, y = kinetic(30)
    with pytest.raises(ConfigurationError, match="local_sample_size") as caught:
        SRHarnessRegressor(local_sample_size=0).fit(X, y)
    assert isinstance(caught.value, ValueError)
    with pytest.raises(ValueError, match="Did you mean 'max_refinement_depth'"):
        SRHarnessRegressor().set_params(max_refinment_depth=4)


def test_a_search_without_a_candidate_predicts_the_mean_and_warns():
    X, y = kinetic(40)
    model = SRHarnessRegressor(tools=["statistics_analysis"], **TINY)
    with pytest.warns(NoFormulaFoundWarning, match="mean of y"):
        model.fit(X, y)
    assert model.best_formula_ is None
    np.testing.assert_allclose(model.predict(X), np.full(len(X), y.mean()))


WITHOUT_SKLEARN = """
import sys
sys.modules["sklearn"] = None  # import sklearn now raises ImportError
import numpy as np
import srh_core
from srh_core import SRHarnessRegressor
from srh_core.estimator import SKLEARN_AVAILABLE, NotFittedError
assert not SKLEARN_AVAILABLE
rng = np.random.default_rng(0)
X = rng.uniform(1, 5, size=(80, 2))
y = 0.5 * X[:, 0] * X[:, 1] ** 2
model = SRHarnessRegressor(max_refinement_depth=1)
try:
    model.predict(X)
except NotFittedError:
    pass
assert model.get_params()["seed"] == 0 and model.set_params(seed=2) is model
print(round(model.fit(X, y).score(X, y), 6), model.n_features_in_, repr(model))
"""


def test_the_estimator_works_without_scikit_learn():
    done = subprocess.run([sys.executable, "-c", WITHOUT_SKLEARN], capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1.0", "2", "SRHarnessRegressor(max_refinement_depth=1,",
                                   "seed=2)"]

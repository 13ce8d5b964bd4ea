"""The baselines' fits and model-text conversions (real gplearn and pyoperon)."""

from __future__ import annotations

import numpy as np
import pytest

from srh_core.benchmark import baselines
from srh_engine import parse


def _data() -> tuple[dict[str, np.ndarray], np.ndarray]:
    rng = np.random.default_rng(0)
    X = {"m": rng.uniform(1, 5, 300), "g": rng.uniform(1, 5, 300)}
    y = X["m"] * X["g"]
    for column in (*X.values(), y):
        column.flags.writeable = False  # as a run's data arrays are
    return X, y


@pytest.mark.parametrize("fit", [baselines.fit_gplearn, baselines.fit_pyoperon],
                         ids=["gplearn", "pyoperon"])
def test_a_fit_on_read_only_data_gives_an_engine_formula_in_the_problem_s_names(fit):
    X, y = _data()
    result = fit(X, y, ["m", "g"], 1.5, 0)
    predicted = np.asarray(parse(result.formula).evaluate(X), dtype=float)
    assert np.all(np.isfinite(predicted)), result
    # evaluated on X alone: any other name would have raised


def test_gplearn_programs_become_plain_formulas():
    values = {"a": np.array([1.0, 3.0]), "b": np.array([2.0, 5.0])}
    program = parse(baselines.gplearn_formula("mul(X0, add(X1, -0.5))", ["a", "b"]))
    assert np.allclose(program.evaluate(values), values["a"] * (values["b"] - 0.5))
    formula = baselines.gplearn_formula("div(X0, X1)", ["a", "b"])
    values = {"a": np.array([1.0, 4.0]), "b": np.array([2.0, 0.0])}
    assert np.isfinite(parse(formula).evaluate(values)[0])
    with pytest.raises(baselines.ModelTextError):
        baselines.gplearn_formula("mul(X0, X7)", ["a", "b"])
    with pytest.raises(baselines.ModelTextError):
        baselines.gplearn_formula("frobnicate(X0)", ["a"])


def test_unknown_and_missing_methods_are_clear_errors():
    from srh_core.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="eureqa"):
        baselines.check_method("eureqa")

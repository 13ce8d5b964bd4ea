"""The parameters a PySR user reaches for: operators, maxsize, guesses, warm_start,
verbosity, equations_ and default names. Each test fails without its parameter."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import srh_engine as engine
from srh_core.errors import ConfigurationError
from srh_core.estimator import SRHarnessRegressor
from srh_core.operators import missing_operators

TINY = {"max_refinement_depth": 1}
SHORT = {"max_refinement_depth": 2}  # the first step's fits may all break a restriction
GUESS = 'param("a")*exp(x1) + x2'


def kinetic(n: int = 120) -> tuple[np.ndarray, np.ndarray]:
    X = np.random.default_rng(0).uniform(1, 5, size=(n, 2))
    return X, 0.5 * X[:, 0] * X[:, 1] ** 2


def exponential(n: int = 120) -> tuple[np.ndarray, np.ndarray]:
    X = np.random.default_rng(1).uniform(1, 3, size=(n, 2))
    return X, 1.5 * np.exp(X[:, 0]) + X[:, 1]


def formulas(model: SRHarnessRegressor) -> list[str]:
    return [candidate.formula for candidate in model.result_.candidates]


def test_the_operator_set_restricts_every_formula_found():
    X, _ = kinetic()
    y = 2 * X[:, 0] / X[:, 1]
    binary, unary = ["+", "-", "*"], ["sin"]
    free = SRHarnessRegressor(**TINY).fit(X, y)
    assert missing_operators(engine.parse(free.formula_), binary, unary) == ["/"]
    model = SRHarnessRegressor(binary_operators=binary, unary_operators=unary, **SHORT).fit(X, y)
    assert formulas(model)
    for text in formulas(model):
        assert missing_operators(engine.parse(text), binary, unary) == [], text


@pytest.mark.parametrize(("setting", "value", "message"), [
    ("unary_operators", ["sinn"], "did you mean 'sin'"),
    ("binary_operators", ["exp"], "'exp' is a unary operator"),
    ("binary_operators", ["^"], "need one of"),
    ("guesses", ["x1 +"], "the guess 'x1 \\+' is not a formula"),
    ("guesses", ["x3*x1"], "uses 'x3', which is not a variable of X \\(x1, x2\\)"),
    ("maxsize", 2, "maxsize"),
], ids=["unknown-unary", "unary-as-binary", "no-arithmetic", "bad-guess", "guess-variable",
        "tiny-maxsize"])
def test_bad_pysr_parameters_are_configuration_errors(setting, value, message):
    X, y = kinetic(30)
    with pytest.raises(ConfigurationError, match=message) as caught:
        SRHarnessRegressor(**{setting: value}, **TINY).fit(X, y)
    assert isinstance(caught.value, ValueError) and caught.value.setting == setting


def test_maxsize_bounds_the_complexity_of_every_formula_found():
    X, y = kinetic()
    free = SRHarnessRegressor(early_stop=False, **SHORT).fit(X, y)
    assert max(candidate.complexity for candidate in free.result_.candidates) > 7
    model = SRHarnessRegressor(maxsize=7, early_stop=False, **SHORT).fit(X, y)
    assert model.formula_ == free.formula_ == "0.5*x1*x2**2"  # 7 nodes
    assert max(candidate.complexity for candidate in model.result_.candidates) <= 7


def test_guesses_seed_the_search():
    X, y = exponential()
    assert SRHarnessRegressor(**TINY).fit(X, y).score(X, y) < 0.999999
    model = SRHarnessRegressor(guesses=[GUESS], **TINY).fit(X, y)
    assert model.formula_ == "1.5*exp(x1) + x2"


def test_warm_start_continues_from_the_previous_front():
    X, y = exponential()
    model = SRHarnessRegressor(guesses=[GUESS], **TINY).fit(X, y)
    model.set_params(guesses=None)
    assert SRHarnessRegressor(**TINY).fit(X, y).score(X, y) < 0.999999  # alone it misses
    model.set_params(warm_start=True).fit(X, y)
    assert model.formula_ == "1.5*exp(x1) + x2"
    assert model.result_.candidates[0].node_id.endswith("R1-C1-L1-K1")


def test_verbosity_prints_a_line_per_step(capsys):
    X, y = kinetic(40)
    SRHarnessRegressor(**TINY).fit(X, y)
    assert capsys.readouterr().out == ""
    SRHarnessRegressor(verbosity=1, max_refinement_depth=2, early_stop=False).fit(X, y)
    lines = capsys.readouterr().out.splitlines()
    steps = [line for line in lines if " R1 C1 L" in line]
    assert len(steps) == 2 and "best validation mse" in steps[-1] and "x1" in steps[-1]
    with pytest.raises(ConfigurationError, match="verbosity"):
        SRHarnessRegressor(verbosity=2, **TINY).fit(X, y)


def test_equations_is_a_dataframe_and_names_the_extra_without_pandas(monkeypatch):
    pd = pytest.importorskip("pandas")
    X, y = kinetic(40)
    model = SRHarnessRegressor(**TINY).fit(X, y)
    assert isinstance(model.equations_, pd.DataFrame)
    assert list(model.equations_["formula"])[0] == model.formula_
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match=r"srh\[sklearn\]"):
        _ = model.equations_


def test_arrays_get_one_based_names():
    X, y = kinetic(40)
    model = SRHarnessRegressor(**TINY).fit(X, y)
    assert model.variable_names_ == ["x1", "x2"]
    assert set(engine.symbols(engine.parse(model.formula_))) == {"x1", "x2"}

"""srh_engine.search: decomposition tests (both answers), determinism, time bound, recovery."""

from __future__ import annotations

import time

import numpy as np
import pytest

import srh_engine as engine
from srh_engine.search import search
from srh_engine.search.decomposition import (
    additive_separable,
    multiplicative_separable,
    pair_combinations,
)
from srh_engine.search.operators import resolve_operators


def inputs(n: int = 500, d: int = 3, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(1.0, 3.0, (n, d))


X = inputs()
A, B, C = X.T


pytestmark = pytest.mark.usefixtures("blas_one_thread")


@pytest.mark.parametrize(("y", "first", "expected"), [
    (np.exp(A) + B / C, [0], True),
    (np.exp(A) * B / C, [0], False),
    (A * B + np.sin(C), [2], True),
    (np.sin(A * C) + B, [2], False),
], ids=["exp-plus-ratio", "product", "sine-of-the-rest", "coupled"])
def test_additive_separability(y, first, expected):
    assert additive_separable(X, y, first) is expected


@pytest.mark.parametrize(("y", "first", "expected"), [
    (np.sqrt(A) * (B + C), [0], True),
    (np.sqrt(A) + B + C, [0], False),
    (A * B / (1 + C), [2], True),
    (A / (B + C), [2], False),
], ids=["root-times-sum", "sum", "over-one-plus", "over-a-sum"])
def test_multiplicative_separability(y, first, expected):
    assert multiplicative_separable(X, y, first) is expected


def test_multiplicative_separability_needs_a_single_signed_target():
    assert not multiplicative_separable(X, (A - 2) * B, [0])


@pytest.mark.parametrize(("y", "pair"), [
    (np.sin(A / B) + C, (0, 1, "/")),
    (np.log(B * C) * A, (1, 2, "*")),
    (np.exp(A + C) / B, (0, 2, "+")),
], ids=["ratio", "product", "sum"])
def test_dependence_through_a_pair_is_found(y, pair):
    assert pair in pair_combinations(X, y)


def test_no_pair_when_every_variable_enters_on_its_own():
    assert pair_combinations(X, A * B + B * C + np.sin(A * C)) == []


def test_search_recovers_a_ratio_of_sums_exactly():
    small = X[:400]
    a, b, c = small.T
    # a wide budget, for a loaded machine: the search returns once it is exact (about 1 s)
    result = search(small, (a - b) / (a + c), ["a", "b", "c"], time_budget=60, seed=0)
    best = result.best
    assert best is not None and best.mse < 1e-20, [e.formula for e in result.front]
    fresh = inputs(200, seed=9)
    values = {"a": fresh[:, 0], "b": fresh[:, 1], "c": fresh[:, 2]}
    truth = (fresh[:, 0] - fresh[:, 1]) / (fresh[:, 0] + fresh[:, 2])
    parsed = engine.parse(best.formula)  # the front renders to parseable text
    assert np.allclose(engine.evaluate(parsed, values), truth, rtol=1e-9, atol=0)
    complexities = [entry.complexity for entry in result.front]
    assert complexities == sorted(set(complexities))
    errors = [entry.mse for entry in result.front]
    assert errors == sorted(errors, reverse=True)


def test_same_seed_same_front():
    y = np.exp(-A) * np.cos(B) + C
    runs = [search(X, y, time_budget=60, seed=4, max_evaluations=6_000, max_complexity=9)
            for _ in range(2)]
    assert [e.formula for e in runs[0].front] == [e.formula for e in runs[1].front]
    assert runs[0].evaluated == runs[1].evaluated


def test_time_budget_bounds_the_call():
    y = np.sin(A * B) / (1 + C**2) + np.sqrt(A + C)  # nothing exact quickly
    started = time.monotonic()
    result = search(X, y, time_budget=1.0, seed=0)
    assert time.monotonic() - started < 3.0
    assert result.front  # at least the mean; under load the budget may end before any form


@pytest.mark.parametrize(("call", "message"), [
    (lambda: search(X, A[:10]), "matching rows"),
    (lambda: search(X, np.where(A > 2, np.nan, A)), "finite"),
    (lambda: search(X, A, ["a", "b"]), "identifiers"),
    (lambda: search(X, A, time_budget=0), "time_budget"),
    (lambda: search(X, A, max_complexity=100), "max_complexity"),
    (lambda: resolve_operators(["+", "gamma"]), "gamma"),
    (lambda: resolve_operators(["sin"]), "binary"),
], ids=["rows", "nan", "names", "budget", "complexity", "unknown-operator", "no-binary"])
def test_bad_input_is_a_clear_error(call, message):
    with pytest.raises(ValueError, match=message):
        call()


@pytest.mark.parametrize("y", [np.zeros(A.size), np.full(A.size, -7.25),
                               np.linspace(1, 2, A.size) * 1e-320],
                         ids=["zero", "negative", "subnormal-spread"])
def test_a_constant_target_gives_its_constant(y):
    # zero once crashed the enumeration (no transform of it to score forms on) and a
    # spread of subnormal numbers divided by a variance of 0.0
    result = search(X, y, time_budget=5, seed=0, workers=1)
    value = float(engine.evaluate(result.best.expression, {}))
    assert value == pytest.approx(float(np.mean(y)), rel=1e-6, abs=1e-300)
    assert result.best.complexity == 1
    assert any("constant" in note for note in result.notes)



def test_a_target_near_the_float_limit_is_searched():
    # exp(300*x) reaches 1e260: the sums' energy overflowed to inf and every support's
    # share was NaN (a ValueError from an empty band); two equal columns sent it there
    rng = np.random.default_rng(2)
    same = np.repeat(rng.uniform(-2, 2, (400, 1)), 2, axis=1)
    result = search(same, np.exp(300 * same[:, 0]), time_budget=20, seed=2, workers=1)
    assert result.best.r2 == pytest.approx(1.0)


@pytest.mark.parametrize("seed", [0, 2])
def test_a_target_whose_errors_overflow_returns(seed):
    # two values, e**600 and e**-600: squared errors overflow, the front of finite errors
    # was empty and the snapping popped from it (IndexError)
    rng = np.random.default_rng(seed)
    huge = rng.uniform(-2, 2, (60, 2)) * 1e9
    y = np.exp(300 * np.clip(huge[:, 0], -2, 2))
    result = search(huge, y, time_budget=1, seed=0, workers=1)
    assert all(np.isfinite(entry.mse) for entry in result.front)


def test_a_target_of_no_finite_spread_on_few_rows_returns():
    # e**600 three times and e**-600 once: no transform of it has a finite spread, and the
    # enumeration stacked no target (a ValueError from numpy)
    y = np.array([np.exp(600.0), np.exp(-600.0), np.exp(600.0), np.exp(600.0)])
    result = search(np.arange(12.0).reshape(4, 3), y, time_budget=1, seed=0, workers=1)
    assert all(np.isfinite(entry.mse) for entry in result.front)

"""monomial_sum_fit: sums of power laws with small rational exponents, found by search."""

from __future__ import annotations

import math

import numpy as np
import pytest

from srh_core.context import AgentContext
from srh_core.tools.base import BaseTool
from srh_core.tools.monomial_sum import exponent_grid


def context(truth, size: int = 800, **ranges: tuple[float, float]) -> AgentContext:
    rng = np.random.default_rng(0)
    data = {name: rng.uniform(lo, hi, size) for name, (lo, hi) in ranges.items()}
    data["Y"] = np.asarray(truth(data), dtype=float)
    return AgentContext(args={"validation_fraction": 0.25}, data=data, target="Y")


def candidate_mse(result) -> float:
    entries = [result.result, *result.result.get("all_formulas", [])]
    return min(entry["metrics"]["train"]["mse"] for entry in entries
               if entry.get("is_candidate"))


@pytest.mark.parametrize(("truth", "ranges"), [
    (lambda d: 3 * d["a"] * d["b"] ** 2 - d["c"] / np.sqrt(d["e"]),
     {"a": (1, 5), "b": (1, 3), "c": (1, 5), "e": (0.5, 2)}),
    (lambda d: d["a"] ** (1 / 3) * d["b"] ** 2 + d["c"] ** 1.5,
     {"a": (1, 10), "b": (1, 3), "c": (1, 5)}),
    (lambda d: d["l"] * (math.pi * d["p"] * d["e"] + 2 * math.pi * np.sqrt(d["q"] / d["s"])),
     {"p": (0.5, 2), "e": (1, 5), "s": (1, 5), "q": (1, 10), "l": (1, 5)}),
], ids=["difference", "cube-root", "shared-factor"])
def test_sum_of_two_power_laws_is_exact(truth, ranges):
    result = BaseTool.create("monomial_sum_fit", context(truth, **ranges))(terms=2)
    assert result.ok, result.result_str
    assert result.result["metrics"]["train"]["r2"] == 1.0
    assert candidate_mse(result) < 1e-20, result.result["formula"]


def test_log_terms_give_a_power_law_times_an_exponential():
    found = context(lambda d: d["a"] ** -0.5 * d["b"] ** (1 / 3)
                    * np.exp(-d["c"] * d["e"] ** (1 / 3) / d["f"]),
                    a=(1, 5), b=(1, 5), c=(1, 3), e=(1, 5), f=(2, 4))
    result = BaseTool.create("monomial_sum_fit", found)(y="log(Y)", terms=1, log_terms=True)
    assert result.ok, result.result_str
    assert candidate_mse(result) < 1e-20, result.result["formula"]


def test_non_positive_inputs_are_refused_with_a_message():
    found = context(lambda d: d["a"] + d["b"], a=(-1, 1), b=(1, 2))
    result = BaseTool.create("monomial_sum_fit", found)(terms=2)
    assert not result.ok
    assert "strictly positive" in result.result_str


def test_exponent_grid_holds_integers_halves_and_thirds():
    grid = exponent_grid()
    assert {-3, -1.5, -1, -0.5, 0, 1, 2, 3} <= {float(v) for v in grid}
    assert any(v.denominator == 3 for v in grid) and max(grid) == 3


def test_log_factor_gives_a_power_law_times_the_log_of_a_ratio():
    found = context(lambda d: d["a"] ** 3 * d["b"] ** (1 / 3) * np.log(d["c"] / d["e"]),
                    a=(1, 3), b=(1, 5), c=(2, 4), e=(0.5, 2))
    result = BaseTool.create("monomial_sum_fit", found)(terms=1, log_factor=True)
    assert result.ok, result.result_str
    assert candidate_mse(result) < 1e-20, result.result["formula"]


@pytest.mark.parametrize(("truth", "wave"), [
    (lambda d: 3 * d["w"] * d["p"] ** (1 / 3) * np.cos(d["th"]) ** 2, "cos**2"),
    (lambda d: d["w"] ** 3 * d["p"] ** -0.5 * np.sin(d["th"]), "sin"),
], ids=["cos-squared", "sine"])
def test_factors_give_a_power_law_times_a_harmonic(truth, wave):
    found = context(truth, w=(2, 4), p=(1, 3), th=(0, 5))
    factors = ["sin(th)", "cos(th)", "sin(th)**2", "sin(th)*cos(th)"]
    result = BaseTool.create("monomial_sum_fit", found)(x=["w", "p"], terms=1, factors=factors)
    assert result.ok, result.result_str
    assert candidate_mse(result) < 1e-20, (wave, result.result["formula"])

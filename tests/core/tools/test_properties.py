"""predict_property on data whose properties are known by construction."""

from __future__ import annotations

import math

import numpy as np
import pytest

from srh_core.context import AgentContext
from srh_core.tools.base import BaseTool


def properties(data: dict[str, np.ndarray]):
    result = BaseTool.create("predict_property", AgentContext(data=data, target="y"))()
    assert result.ok, result.result_str
    return result.result, {v["variable"]: v for v in result.result["variables"]}


def test_a_product_of_monotone_factors() -> None:
    x1, x2, x3, x4 = np.random.default_rng(0).uniform(1, 5, (4, 600))
    found, by = properties({"x1": x1, "x2": x2, "x3": x3, "x4": x4,
                            "y": x1**2 * np.exp(-x2) / x3})
    assert found["reliable"]
    assert (by["x1"]["monotonicity"], by["x1"]["convexity"]) == ("increasing", "convex")
    assert (by["x2"]["monotonicity"], by["x2"]["convexity"]) == ("decreasing", "convex")
    assert by["x3"]["monotonicity"] == "decreasing" and by["x4"]["monotonicity"] == "constant"
    assert all(not v["periodic"] for v in by.values())
    assert by["x1"]["multiplicative_separable"] and by["x2"]["multiplicative_separable"]


def test_an_affine_target_that_changes_sign() -> None:
    x1, x2 = np.random.default_rng(1).uniform(-2, 2, (2, 400))
    found, by = properties({"x1": x1, "x2": x2, "y": 3 * x1 - x2})
    assert (by["x1"]["monotonicity"], by["x1"]["convexity"]) == ("increasing", "affine")
    assert (by["x2"]["monotonicity"], by["x2"]["convexity"]) == ("decreasing", "affine")
    assert not found["multiplicatively_separable"]  # y changes sign: no log test
    assert not any(v["multiplicative_separable"] for v in by.values())


def test_periodicity_of_a_variable_and_of_a_combination_only() -> None:
    rng = np.random.default_rng(2)
    t, c = rng.uniform(0, 10, 800), rng.uniform(1, 2, 800)
    _, by = properties({"t": t, "c": c, "y": np.sin(2 * t) + c})
    assert by["t"]["periodic"] and by["t"]["period"] == pytest.approx(math.pi, rel=0.05)
    assert not by["c"]["periodic"] and by["c"]["monotonicity"] == "increasing"
    a, b = rng.uniform(0, 4, (2, 800))
    found, by = properties({"a": a, "b": b, "y": np.sin(3 * a * b)})
    assert not by["a"]["periodic"] and not by["b"]["periodic"]
    product = next(c for c in found["combinations"] if c["expression"] == "a*b")
    assert product["periodic"] and product["period"] == pytest.approx(2 * math.pi / 3, rel=0.03)
    assert not any(c["periodic"] for c in found["combinations"] if c["expression"] != "a*b")


def test_without_enough_data_it_says_so() -> None:
    small = BaseTool.create("predict_property", AgentContext(
        data={"x": np.arange(10.0), "y": np.arange(10.0)}, target="y"))()
    assert not small.ok and "at least 30" in small.result_str
    assert not BaseTool.create("predict_property", None)().ok

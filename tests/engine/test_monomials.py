"""Inputs entering only through a power-law monomial: both answers, the exponents read from
the data, units, and the view's answer mapped back to the original inputs."""

from __future__ import annotations

import numpy as np
import pytest

from srh_engine import evaluate
from srh_engine.nodes import Binary, Function, Number, Symbol
from srh_engine.rendering import to_str
from srh_engine.search.invariance import invariant_views
from srh_engine.search.monomials import Monomial, monomial_combinations
from srh_engine.search.operators import resolve_operators
from srh_engine.search.views import Run, View
from srh_engine.units import parse_units

NAMES = ["a", "b", "c", "e"]
X = np.random.default_rng(5).uniform(1.0, 3.0, (1000, 4))
A, B, C, E = X.T


pytestmark = pytest.mark.usefixtures("blas_one_thread")


@pytest.mark.parametrize(("y", "expected"), [
    (np.exp(-A * B**2 / 4) * C + E, Monomial((0, 1), (1, 2))),
    (C / (1 + A * np.sqrt(B)) + E, Monomial((0, 1), (2, 1))),
    (np.log(1 + A * B / C) + E**2, Monomial((0, 1, 2), (1, 1, -1))),
], ids=["a*b**2", "a**2*b", "a*b/c"])
def test_a_monomial_is_found_with_its_exponents(y, expected):
    assert monomial_combinations(X, y)[:1] == [expected]


@pytest.mark.parametrize("y", [
    A * B + B * C + np.sin(A * C) + E,  # every input enters on its own
    (A - B) ** 2 + A * C + E,  # a difference, not a monomial
    A / (1 + B) + C * np.sin(E),  # a ratio with a shift
    np.exp(-(A**2 + 2 * B**2)) * C + E,  # an ellipse
], ids=["separate", "difference", "shifted-ratio", "ellipse"])
def test_no_monomial_where_there_is_none(y):
    assert monomial_combinations(X, y) == []


def views_of(y: np.ndarray, units: dict | None = None) -> tuple[Run, list[View]]:
    binary, unary = resolve_operators(None)
    run = Run(y, binary, unary, 30, 0)
    run.units = {k: parse_units(v) for k, v in (units or {}).items()}
    return run, invariant_views(run, View("inputs", [Symbol(n) for n in NAMES], X), y, 6)


def test_the_view_takes_the_monomial_out_and_its_answer_maps_back():
    y = np.exp(-A * B**2 / 4) * C + E
    run, views = views_of(y)
    assert len(views) == 1, run.notes
    view = views[0]
    assert to_str(view.inputs[0]) == "a*b**2"
    original = dict(zip(NAMES, X.T, strict=True))
    for k, expression in enumerate(view.inputs):
        assert np.allclose(view.columns[:, k], evaluate(expression, original), rtol=1e-12)
    u, c, e = view.inputs
    truth = Binary("+", Binary("*", Function("exp", (Binary("/", u, Number(-4)),)), c), e)
    assert np.allclose(evaluate(truth, original), y, rtol=1e-10)
    assert any("power-law combination" in note for note in run.notes)


def test_units_keep_only_a_dimensionless_monomial():
    y = np.exp(-A * B**2 / 4) * C + E
    others = {"c": "kg", "e": "A"}
    _, free = views_of(y, {"a": "1/s**2", "b": "s", **others})  # a*b**2 is dimensionless
    assert free and to_str(free[0].inputs[0]) == "a*b**2"
    run, bound = views_of(y, {"a": "m", "b": "s", **others})  # a*b**2 is m*s**2
    assert bound == [], run.notes

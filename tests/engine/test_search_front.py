"""Fronts that collapsed to the mean: a refit squeezed out by an earlier phase's overrun,
and sign-losing transforms of sign-changing targets."""

from __future__ import annotations

import time

import numpy as np
import pytest

from srh_engine.nodes import Number, Parameter, Symbol
from srh_engine.parser import parse
from srh_engine.search.budget import Budget
from srh_engine.search.explore import explore
from srh_engine.search.operators import resolve_operators
from srh_engine.search.refit import (
    MIN_REFITS,
    _banded,
    _round_robin,
    fit_entry,
    identifiable,
    refit,
)
from srh_engine.search.results import FrontEntry, pareto_front
from srh_engine.search.views import Found, Run, View, target_transforms
from srh_engine.transform import complexity

RNG = np.random.default_rng(4)
X = RNG.uniform(-3.0, 3.0, (600, 2))
SIGN_CHANGING = X[:, 0] * np.sin(X[:, 1])


pytestmark = pytest.mark.usefixtures("blas_one_thread")


def test_sign_changing_targets_get_no_one_signed_transform():
    assert set(target_transforms(SIGN_CHANGING)) == {"identity", "inv"}
    assert {"square", "log", "sqrt"} <= set(target_transforms(np.exp(X[:, 0])))


def test_a_refit_that_starts_past_its_deadline_still_fits_the_best_forms():
    y = SIGN_CHANGING + 0.01 * np.sqrt(np.mean(SIGN_CHANGING**2)) * RNG.standard_normal(600)
    binary, unary = resolve_operators(None)
    run = Run(y, binary, unary, 20, 0)
    values = {"x": X[:, 0], "z": X[:, 1]}
    run.columns_by_name = values
    base = View("inputs", [Symbol("x"), Symbol("z")], X)
    with np.errstate(all="ignore"):
        run.found = explore(run, base, y, Budget(time.monotonic() + 60, run.counter, 3000))
        entries = refit(run, values, deadline=time.monotonic() - 1.0)  # an overrun phase
    assert 2 <= len(entries) <= 1 + 2 * MIN_REFITS  # the mean and the guaranteed fits
    assert max(entry.r2 for entry in entries) > 0.99, [e.formula for e in entries]


def test_refits_take_each_transform_in_turn_the_untransformed_first():
    view = View("inputs", [Symbol("x")], X[:, :1])
    found = [Found(nmse, ("v", 0), view, transform) for nmse, transform in
             [(1e-9, "inv"), (2e-9, "inv"), (3e-9, "inv"), (1e-3, "identity"),
              (2e-3, "identity"), (1e-2, "log")]]
    chosen = _round_robin(found, 4)
    assert [(f.transform, f.nmse) for f in chosen] == [
        ("identity", 1e-3), ("inv", 1e-9), ("log", 1e-2), ("identity", 2e-3)]


def test_forms_of_equal_fit_at_noise_are_refitted_smallest_first():
    view = View("inputs", [Symbol("x")], X[:, :1])
    small, large = ("v", 0), ("sqrt", ("exp", ("v", 0)))

    def ranked(errors):
        found = [Found(nmse, tree, view, "identity") for nmse, tree in errors]
        return [(f.nmse, f.tree) for f in _banded(found)]

    # noisy: a lookalike a hair better than the smaller truth waits behind it
    assert ranked([(1.00e-3, large), (1.10e-3, small), (5e-3, ("v", 0))]) == \
        [(1.10e-3, small), (1.00e-3, large), (5e-3, ("v", 0))]
    # exact: the exact form first whatever its size
    assert ranked([(1e-30, large), (1e-14, small)]) == [(1e-30, large), (1e-14, small)]


def _redundant_fit_inputs():
    rng = np.random.default_rng(0)
    values = {"x": rng.uniform(1.0, 3.0, 500), "t": rng.uniform(1.0, 3.0, 500)}
    y = np.cos(values["x"]) * np.exp(-values["t"])
    # four numbers, one function of three ratios: a flat direction of the loss (a refit's
    # start, near a solution, from the search of ``exp(-A)*cos(B) + C``)
    expression = parse('(param("a", -7.6e-08) + param("b", -0.975984983514)*cos(x))'
                       '/(param("c", 6.7e-07) + param("d", -0.975985080349)*exp(t))')
    return expression, values, y


def test_a_redundant_number_is_bound_and_the_rest_fitted():
    expression, values, y = _redundant_fit_inputs()
    bound = identifiable(expression, values, y)
    free = {n.name for n in bound.iter_preorder() if isinstance(n, Parameter)}
    assert len(free) == 3  # one of the four fixed at its start value
    entry = fit_entry(expression, values, y, float(np.var(y)))
    assert entry is not None and entry.mse <= 1e-24 * float(np.mean(y**2))
    plain = parse('param("a", 0.5) + param("b", 2.0)*cos(x)*exp(-t)')
    assert identifiable(plain, values, y) is plain  # nothing redundant: untouched
    # two columns equal at the start point only (x and x**1): no redundancy of the formula
    coincidence = parse('param("a", 0.5)*x + param("b", 2.0)*x**param("c", 1.0)')
    assert identifiable(coincidence, values, y) is coincidence


def test_a_redundant_fit_does_not_depend_on_where_arrays_lie_in_memory():
    # the optimiser's rounding follows the addresses of its arrays; on a flat direction
    # that rounding chose the fitted numbers (the same seed gave two fronts)
    expression, values, y = _redundant_fit_inputs()
    rng = np.random.default_rng(0)
    held, fits = [], []
    for _ in range(30):
        held.append(np.empty(int(rng.integers(1, 5000))))
        if rng.random() < 0.5:
            held.pop(int(rng.integers(len(held))))
        entry = fit_entry(expression, values, y, float(np.var(y)))
        fits.append([n.value for n in entry.expression.iter_preorder()
                     if isinstance(n, Number)])
    for numbers in fits[1:]:
        np.testing.assert_allclose(numbers, fits[0], rtol=1e-8)


def test_exact_entries_differ_on_the_front_only_by_size():
    def entry(text, mse):
        expression = parse(text)
        return FrontEntry(expression, complexity(expression), mse, 1.0)

    entries = [entry("x + cos(z)/exp(y)", 3e-34), entry("x + exp(-y)*cos(z)", 0.0),
               entry("x", 0.5)]
    # without a floor the longer one is kept for an error lower by rounding
    assert [e.formula for e in pareto_front(entries)] == \
        ["x", "x + cos(z)/exp(y)", "x + exp(-y)*cos(z)"]
    front = pareto_front(entries, floor=1e-24)
    assert [e.formula for e in front] == ["x", "x + cos(z)/exp(y)"]
    same_size = [entry("a*b", 2e-33), entry("b*a", 1e-33)]
    assert [e.formula for e in pareto_front(same_size, floor=1e-24)] == ["a*b"]
    # a drifted number, or a float half, against the snapped value
    # (of one size: a snapped constant part counts as one number)
    snapped = [FrontEntry(parse(text), 7, mse, 1.0) for text, mse in
               [("0.7071067811865476*a/(b - 1)", 1e-33), ("a/(sqrt(2)*(b - 1))", 3e-33)]]
    assert [e.formula for e in pareto_front(snapped, floor=1e-24)] == ["a/(sqrt(2)*(b - 1))"]
    halves = [FrontEntry(parse(text), 7, 1e-33, 1.0) for text in
              ["c*sqrt(b + 0.5*a)", "sqrt(2)*c*sqrt(a + 2*b)/2"]]
    assert [e.formula for e in pareto_front(halves, floor=1e-24)] == \
        ["sqrt(2)*c*sqrt(a + 2*b)/2"]

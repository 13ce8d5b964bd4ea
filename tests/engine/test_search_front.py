"""Fronts that collapsed to the mean: a refit squeezed out by an earlier phase's overrun,
and sign-losing transforms of sign-changing targets."""

from __future__ import annotations

import time

import numpy as np
import pytest

from srh_engine.nodes import Symbol
from srh_engine.search.budget import Budget
from srh_engine.search.explore import explore
from srh_engine.search.operators import resolve_operators
from srh_engine.search.refit import MIN_REFITS, _banded, _round_robin, refit
from srh_engine.search.views import Found, Run, View, target_transforms

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

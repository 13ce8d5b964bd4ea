"""srh_engine.search splits of several-part formulas: the separability test over logged
inputs, the choice of a split's first part by what it leaves, the probe of sub-problems."""

from __future__ import annotations

import time

import numpy as np
import pytest

from srh_engine.nodes import Binary, Number, Symbol
from srh_engine.rendering import to_str
from srh_engine.search import decomposition as dec
from srh_engine.search import explore as ex
from srh_engine.search.budget import Budget, Counter
from srh_engine.search.operators import resolve_operators
from srh_engine.search.views import EXACT_NMSE, Found, Run, View, all_rows_nmse

RNG = np.random.default_rng(5)
U, W = RNG.uniform(1.6, 20.0, (2, 2000))
P, M, A, T, R = RNG.uniform(1.0, 4.0, (5, 2000))


pytestmark = pytest.mark.usefixtures("blas_one_thread")


@pytest.mark.parametrize(("y", "separable"), [
    (1.0 / np.sqrt(1.0 - 1.0 / U**2) - 1.0 / np.sqrt(1.0 - 1.0 / W**2), True),
    (1.0 / np.sqrt(1.0 + (W / U) ** 2), False),
], ids=["two-lorentz-factors", "a-ratio-of-both"])
def test_additive_split_over_logged_inputs(y, separable):
    """A part steep at the low end of a wide range defeats the polynomial surrogate of the
    inputs (no answer), not the one of their logarithms, where the test answers both ways."""
    X = np.column_stack([U, W])
    assert dec.logged_fits_better(X, y)
    assert dec.additive_separable(X, y, [0], logged=True) is separable
    if separable:
        assert not dec.additive_separable(X, y, [0])  # the surrogate fails: no split


def _found(tree, inputs, nmse: float) -> Found:
    names = [chr(ord("a") + k) for k in range(inputs.shape[1])]
    return Found(nmse, tree, View("subset", [Symbol(n) for n in names], inputs), "identity")


def test_a_multiplicative_part_keeps_its_offset():
    """``(B + 1)*g``: the form ``B`` fits the part with an offset, which the remainder needs;
    a lookalike fitting the surrogate's part a little better leaves more of ``B``."""
    B = P
    y = (B + 1.0) * M / (A + M)
    split = dec.Separation("multiplicative", (0,), (1, 2), logged=True)
    first = np.exp(dec.separable_parts(np.column_stack([B, M, A]), np.log(y), (0,),
                                       logged=True)[0])
    lookalike = ("+", ("v", 0), ("cos", ("v", 0)))
    found = [_found(lookalike, B[:, None], 1e-7), _found(("v", 0), B[:, None], 1e-6)]
    second = View("subset", [Symbol("m"), Symbol("a")], np.column_stack([M, A]))
    (expression, rest), *_ = ex._first_parts(found, first, y, second, split)
    assert "cos" not in to_str(expression)
    ratio = rest / (M / (A + M))
    assert np.ptp(ratio) < 1e-5 * np.mean(np.abs(ratio))  # the offset is the surrogate's


def test_an_additive_part_gets_the_real_targets_coefficient():
    """``3*u + h(T, R)``: the coefficient comes from the real target fitted beside a
    surrogate of ``h`` (3 to that surrogate's error), not from the surrogate's part (2.9)."""
    h = np.log(T) + (T + R) * np.sin(np.pi * T)
    y = 3.0 * U + h
    split = dec.Separation("additive", (0,), (1, 2))
    first = 2.9 * U + 0.01 * np.sin(U)  # an approximate part, as a surrogate gives
    lookalike = ("*", ("v", 0), ("cos", ("exp", ("-", ("k", 1.0), ("v", 0)))))
    found = [_found(lookalike, U[:, None], 1e-7), _found(("v", 0), U[:, None], 1e-5)]
    second = View("subset", [Symbol("T"), Symbol("R")], np.column_stack([T, R]))
    (expression, rest), *_ = ex._first_parts(found, first, y, second, split)
    assert "cos" not in to_str(expression)
    coefficient = float(np.mean((y - rest) / U))
    assert abs(coefficient - 3.0) < 1e-3, coefficient


def test_a_sub_problem_is_probed_before_it_is_decomposed(monkeypatch):
    """What a split leaves can be a short sum (``M*P + 1/(A*P)``): explored below the top,
    the probe's sums of small forms find it, before any full search of the view."""
    y = M * P + 1.0 / (A * P)
    binary, unary = resolve_operators(None)
    run = Run(y, binary, unary, 30, 0, columns_by_name={"M": M, "P": P, "A": A})
    view = View("subset", [Symbol("M"), Symbol("P"), Symbol("A")], np.column_stack([M, P, A]))
    largest = []
    search_view = ex.search_view

    def recorded(*args, **kwargs):
        largest.append(kwargs.get("largest"))
        return search_view(*args, **kwargs)

    monkeypatch.setattr(ex, "search_view", recorded)
    with np.errstate(all="ignore"):
        found = ex.explore(run, view, y, Budget(time.monotonic() + 60.0, Counter()), depth=1,
                           factors_tested=True)
    assert ex.exact_on_all_rows(run, found, y)
    assert largest == [ex.PROBE_SIZE]


@pytest.mark.parametrize(("y", "group"), [
    (1.0 / (np.exp(P / M) - 1.0) / (np.exp(A / T) - 1.0), (0, 1)),
    (1.0 / (np.exp(P / M) - np.exp(A / T)), None),
], ids=["two-planck-factors", "one-difference"])
def test_a_split_of_two_inputs_against_the_rest(y, group):
    """``f(p, m) * g(a, t)``: no single input separates, the pair does; the same test says
    no to a function of both pairs at once."""
    X = np.column_stack([P, M, A, T])
    t = np.log(np.abs(y))
    logged = dec.logged_fits_better(X, t)
    assert dec.separable_group(X, t, [(0,), (1,), (2,), (3,)], logged) is None
    assert dec.separable_group(X, t, [(0,), (0, 1), (0, 2)], logged) == group


def test_a_factor_found_for_a_transform_is_inverted():
    """A Lorentz factor is linear once squared and inverted (``1 - 1/u**2``): a form of the
    factor's square, fitted there, gives the factor's values through the inverse."""
    factor = 2.0 / np.sqrt(1.0 - 1.0 / U**2)
    form = ("/", ("k", 1.0), ("-", ("k", 1.0), ("/", ("k", 1.0), ("square", ("v", 0)))))
    item = Found(0.0, form, View("subset", [Symbol("u")], U[:, None]), "square")
    expression, values = ex._fitted_part(item, factor, offset=True)
    assert np.allclose(values, factor, rtol=1e-12, atol=0)
    assert to_str(expression).startswith("sqrt(")


def test_additive_parts_equal_up_to_a_constant_are_one_part():
    """``u`` and ``pi + u/2`` leave the same remainder to search (its search fits a constant):
    the second remainder searched is that of a different form, not a copy of the first."""
    y = 3.0 * U + np.log(T) * R
    split = dec.Separation("additive", (0,), (1, 2))
    first = 3.0 * U
    shifted = ("+", ("k", np.pi), ("/", ("v", 0), ("k", 2.0)))
    other = ("+", ("v", 0), ("sin", ("v", 0)))
    found = [_found(("v", 0), U[:, None], 0.0), _found(shifted, U[:, None], 0.0),
             _found(other, U[:, None], 1e-9)]
    second = View("subset", [Symbol("T"), Symbol("R")], np.column_stack([T, R]))
    parts = ex._first_parts(found, first, y, second, split)
    assert [("sin" in to_str(expression)) for expression, _ in parts] == [False, True]


def test_an_additive_split_is_exact_with_its_coefficient_refitted():
    """The first part's coefficient is the surrogate's (``1 - 1e-7``), so the true rest is
    not exact on the remainder; fitted with the coefficient, the whole is, and the search of
    the split claims it (a plain check on the remainder's error would not try)."""
    y = U + 1.0 / np.sqrt(1.0 - (P / (4.0 * M)) ** 2)
    binary, unary = resolve_operators(None)
    run = Run(y, binary, unary, 30, 0, columns_by_name={"u": U, "p": P, "m": M})
    rest = View("subset", [Symbol("p"), Symbol("m")], np.column_stack([P, M]))
    ratio = ("/", ("v", 0), ("*", ("k", 2.0), ("+", ("v", 1), ("v", 1))))
    lorentz = ("sqrt", ("-", ("k", 1.0), ("square", ratio)))
    remainder = y - (1.0 - 1e-7) * U
    item = Found(all_rows_nmse(lorentz, rest, 1.0 / remainder), lorentz, rest, "inv",
                 (("add", Binary("*", Number(1.0 - 1e-7), Symbol("u"))),))
    assert item.nmse > EXACT_NMSE
    assert not ex.exact_on_all_rows(run, [item], y)
    assert ex.exact_on_all_rows(run, [item], y, gate=ex.PART_NMSE)


@pytest.mark.parametrize(("y", "group"), [
    ((P - 2.0 * M) * A / (A + T), (0, 1)),
    ((P - 2.0 * M) + A / (A + T), None),
    ((P - 2.0 * A) * M / (M + T), (0, 2)),
], ids=["difference-times-ratio", "their-sum", "other-pair"])
def test_a_product_of_both_signs_is_tested_on_the_target_itself(y, group):
    """``(p - 2*m) * a/(a + t)`` changes sign, so ``log|y|`` is undefined at its zeros: the
    rank-one surrogate (a polynomial of the pair times one of the rest) finds the pair, and
    says no to the sum of the same parts."""
    X = np.column_stack([P, M, A, T])
    assert np.any(y > 0) and np.any(y < 0)
    groups = [(0,), (1,), (2,), (3,), (0, 1), (0, 2), (0, 3)]
    assert dec.product_group(X, y, groups) == group
    if group is not None:
        first, second = dec.product_parts(X, y, group)  # surrogates: close, not exact
        assert np.sqrt(np.mean((first * second - y) ** 2)) < 1e-3 * np.std(y)
        difference = X[:, group[0]] - 2.0 * X[:, group[1]]
        away = np.abs(difference) > 0.5
        ratio = first[away] / difference[away]
        assert np.ptp(ratio) < 1e-2 * np.mean(np.abs(ratio))  # the part, up to its scale


def test_a_split_of_a_target_of_both_signs_finds_its_parts():
    """End to end through the split: ``(p - 2*m) * a/(a + t)`` is split, both parts searched,
    and the product is exact."""
    y = (P - 2.0 * M) * A / (A + T)
    binary, unary = resolve_operators(None)
    run = Run(y, binary, unary, 30, 0, columns_by_name={"P": P, "M": M, "A": A, "T": T})
    view = View("subset", [Symbol("P"), Symbol("M"), Symbol("A"), Symbol("T")],
                np.column_stack([P, M, A, T]))
    budget = Budget(time.monotonic() + 60.0, Counter())
    split = ex._split(run, view, y, budget)
    assert split is not None and split.signed and split.kind == "multiplicative"
    with np.errstate(all="ignore"):
        found = ex._search_split(run, view, y, split, budget, 0, factoring=True)
    assert ex.exact_on_all_rows(run, found, y, gate=ex.PART_NMSE)  # as the caller checks it


def test_inputs_the_target_does_not_depend_on_are_left_out():
    """A column the target ignores (``a`` in ``(m - p)*m/(m + 3*p)``) is found by the surrogate
    without its monomials and left out of the search; a small real term is not, nor, at 1 %
    noise, a term above the noise."""
    noise = np.random.default_rng(3).standard_normal(P.size)
    X = np.column_stack([A, P, M, T])
    assert dec.unused_inputs(X, (M - P) * M / (M + 3.0 * P)) == (0, 3)
    assert dec.unused_inputs(X, A + 1e-3 * P + M * T) == ()
    noisy = A * P + M + 0.3 * T
    assert dec.unused_inputs(X, noisy + 0.01 * np.std(noisy) * noise) == ()
    noisy = A * P + M
    assert dec.unused_inputs(X, noisy + 0.01 * np.std(noisy) * noise) == (3,)
    y = (M - P) * M / (M + 3.0 * P)
    binary, unary = resolve_operators(None)
    run = Run(y, binary, unary, 30, 0, columns_by_name={"A": A, "P": P, "M": M, "T": T})
    view = View("subset", [Symbol("A"), Symbol("P"), Symbol("M"), Symbol("T")], X)
    with np.errstate(all="ignore"):
        found = ex._decomposed(run, view, y, Budget(time.monotonic() + 60.0, Counter()), 0,
                               factoring=True)
    assert any("does not depend on ['A', 'T']" in note for note in run.notes)
    assert all({"A", "T"}.isdisjoint(n.name for n in f.view.inputs) for f in found)
    assert ex.exact_on_all_rows(run, found, y)

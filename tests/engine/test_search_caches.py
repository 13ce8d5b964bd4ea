"""The search's shortcuts give what they replace: the surrogate design built from shared
products, the dimension memo of the evolution, its draws, its scores and its constant fits."""

from __future__ import annotations

import random

import numpy as np
import pytest

from srh_engine import check_dimensions
from srh_engine.nodes import Symbol
from srh_engine.search import consistency
from srh_engine.search import decomposition as dec
from srh_engine.search.consistency import TreeDimensions, input_dimensions
from srh_engine.search.enumeration import Enumeration
from srh_engine.search.evolution import (
    Evolution,
    _constants,
    _evaluate_with_constants,
    _linear_nmse,
    _with_constants,
    linear_nmse,
    tune_constants,
    weighted_linear_nmse,
)
from srh_engine.search.operators import evaluate_tree, resolve_operators, size, to_expression
from srh_engine.units import parse_units

RNG = np.random.default_rng(11)


def product_design(Z: np.ndarray, exponents) -> np.ndarray:
    """The design as it was written before the shared products: one np.prod per monomial."""
    return np.column_stack([np.prod([Z[:, i] ** p for i, p in enumerate(powers) if p], axis=0)
                            if any(powers) else np.ones(Z.shape[0]) for powers in exponents])


@pytest.mark.parametrize(("inputs", "degree"), [(1, 8), (3, 7), (5, 4), (7, 3)],
                         ids=["one-input", "three", "five", "seven"])
def test_the_design_is_the_product_of_its_factors_bit_for_bit(inputs, degree):
    Z = dec._scaled(RNG.uniform(-3.0, 5.0, (200, inputs)) * RNG.lognormal(0.0, 2.0, inputs))
    exponents = dec._exponents(inputs, degree)
    assert np.array_equal(dec._design(Z, exponents), product_design(Z, exponents))
    shuffled = [exponents[k] for k in RNG.permutation(len(exponents))]  # no order assumed
    assert np.array_equal(dec._design(Z, shuffled), product_design(Z, shuffled))


UNITS = {"m": parse_units("kg"), "v": parse_units("m/s"), "F": parse_units("N"),
         "x": parse_units("m")}
NAMES = ["m", "v", "F", "x"]
COLUMNS = np.random.default_rng(3).uniform(1.0, 3.0, (24, 4))


def enumerated_trees() -> list:
    binary, unary = resolve_operators(None)
    enumeration = Enumeration(COLUMNS, COLUMNS[:, :1].T, binary, unary)
    for level in range(2, 5):
        enumeration.grow(level, lambda n: False)
    return [enumeration.tree(recipe) for s in range(2, 5)
            for recipe in enumeration.levels[s].recipes]


def test_the_dimension_memo_agrees_with_check_dimensions_and_survives_clearing(monkeypatch):
    dims = input_dimensions([Symbol(n) for n in NAMES], UNITS)
    trees = enumerated_trees()
    truth = [check_dimensions(to_expression(t, [Symbol(n) for n in NAMES]), UNITS).consistent
             for t in trees]
    assert 100 < truth.count(False) < len(truth) - 100  # both answers are exercised
    memo = TreeDimensions(dims)
    assert [memo.consistent(t) for t in trees] == truth
    assert [memo.consistent(t) for t in trees] == truth  # answered from the memo
    monkeypatch.setattr(consistency, "MEMO_LIMIT", 7)
    small = TreeDimensions(dims)
    assert [small.consistent(t) for t in trees] == truth
    assert len(small.memo) <= 7 + max(size(t) for t in trees)  # cleared before a tree


def test_dimension_memos_of_different_inputs_do_not_share_answers():
    tree = ("+", ("v", 0), ("v", 1))
    kg, metre = (tuple(float(e) for e in parse_units(u).exponents) for u in ("kg", "m"))
    assert not TreeDimensions((kg, metre)).consistent(tree)
    assert TreeDimensions((kg, kg)).consistent(tree)
    assert consistency.tree_consistent(tree, (kg, kg))
    assert not consistency.tree_consistent(tree, (kg, metre))


def test_the_evolutions_draws_are_randranges():
    """The tournament calls ``_randbelow(n)`` for ``randrange(n)``: the same numbers."""
    drawn, expected = random.Random(17), random.Random(17)
    for n in [*range(1, 300), 160, 6, 1 << 20]:
        assert drawn._randbelow(n) == expected.randrange(n)


def test_the_scores_with_a_centred_target_are_linear_nmse_bit_for_bit():
    target = RNG.normal(size=256) * 3.0 + 1.0
    var = float(np.var(target))
    centred = target - target.mean()
    for values in [RNG.normal(size=256), target * 2.0 - 1.0, np.full(256, 2.5),
                   np.array([np.inf] * 256), np.float64(3.0), np.exp(RNG.normal(size=256) * 30)]:
        with np.errstate(all="ignore"):
            assert _linear_nmse(values, centred, var) == old_linear_nmse(values, target, var)
            assert linear_nmse(values, target, var) == old_linear_nmse(values, target, var)


@pytest.mark.parametrize("weighted", [False, True], ids=["equal-weights", "weighted"])
def test_a_form_of_huge_values_is_scored_by_its_correlation_not_as_exact(weighted):
    # values near 1e152 against a target of scale 1e4: the spread times the target's energy
    # overflows, and so does r**2 when the two are correlated; the quotient was nan, which
    # max(0.0, ...) made an error of 0 ("exact")
    rng = np.random.default_rng(5)
    target = 1e4 * rng.normal(size=256)
    noise = rng.normal(size=256)
    weights = np.full(256, 1.0 / 256)
    for share, expected in [(0.3, 1.0 - 0.3**2 / (1.0 + 0.3**2)), (1.0, 0.5), (0.0, 1.0)]:
        values = 1e152 * (noise + share * target / 1e4)
        small = 1e-144 * values  # the same form at an ordinary scale: the same score
        score = weighted_linear_nmse(values, target, weights) if weighted else \
            linear_nmse(values, target, float(np.var(target)))
        reference = weighted_linear_nmse(small, target, weights) if weighted else \
            linear_nmse(small, target, float(np.var(target)))
        assert score == pytest.approx(reference, rel=1e-9, abs=1e-12)
        assert score == pytest.approx(expected, abs=0.15)
    with np.errstate(all="ignore"):
        assert linear_nmse(np.full(256, 1e300) * noise, target, float(np.var(target))) == \
            float("inf")


def old_linear_nmse(values, target, target_var):
    """``linear_nmse`` as it was written before the centred target was hoisted."""
    if not isinstance(values, np.ndarray) or values.shape != target.shape:
        return 1.0 if np.isfinite(values).all() else float("inf")
    with np.errstate(all="ignore"):
        centred = values - values.mean()
        spread = float(centred @ centred)
        if not np.isfinite(spread):
            return float("inf")
        if spread <= 1e-300:
            return 1.0
        r = float(centred @ (target - target.mean()))
    return max(0.0, 1.0 - r * r / (spread * target_var * target.size))


def test_population_members_carry_their_sizes_and_scores():
    binary, unary = resolve_operators(None)
    columns = list(COLUMNS.T)
    evolution = Evolution(columns, COLUMNS[:, 0] * COLUMNS[:, 1] ** 2, binary, unary, 15, seed=4)
    evolution.seed_population([])
    evolution.run(lambda evaluated: evaluated >= 600)
    assert len(evolution.population) > 0
    for score, count, tree in evolution.population:
        assert count == size(tree)
        assert score == evolution.fitness(tree)


def test_constants_evaluated_in_place_give_the_rebuilt_trees_values():
    """``tune_constants`` evaluates a tree with new constants without rebuilding it."""
    columns = list(COLUMNS.T)
    trees = [t for t in enumerated_trees() if _constants(t)][::7]
    assert len(trees) > 50
    for tree in trees:
        theta = RNG.normal(size=len(_constants(tree))) * 3.0
        with np.errstate(all="ignore"):
            direct = _evaluate_with_constants(tree, columns, iter(theta))
            rebuilt = evaluate_tree(_with_constants(tree, list(theta)), columns, None)
        assert np.array_equal(np.asarray(direct), np.asarray(rebuilt), equal_nan=True), tree


def test_tuning_more_constants_than_rows_keeps_the_tree():
    # two scaling values and three constants on four rows: MINPACK refuses (TypeError)
    tree = ("+", ("*", ("k", 1.5), ("v", 0)), ("*", ("k", 2.0), ("/", ("v", 1), ("k", 3.0))))
    columns = list(COLUMNS[:4, :2].T)
    assert tune_constants(tree, columns, COLUMNS[:4, 0] + COLUMNS[:4, 1]) == tree
    assert tune_constants(tree, list(COLUMNS[:, :2].T), COLUMNS[:, 0]) is not None

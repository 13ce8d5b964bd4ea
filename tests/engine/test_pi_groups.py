"""Buckingham pi in the search: the reduction, its groups, and answers mapped back."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from srh_engine import check_dimensions, parse, parse_units, to_str
from srh_engine.search import search
from srh_engine.search.pi_groups import reduce_by_units

PENDULUM = (["L", "g", "m"], ["m", "m/s^2", "kg"], "s",
            lambda L, g, m: 2 * np.pi * np.sqrt(L / g))
COULOMB = (["q1", "q2", "eps", "r"], ["C", "C", "F/m", "m"], "N",
           lambda q1, q2, eps, r: q1 * q2 / (4 * np.pi * eps * r**2))
DISTANCE = (["x1", "x2", "y1", "y2"], ["m"] * 4, "m",
            lambda x1, x2, y1, y2: np.sqrt((x2 - x1) ** 2 + (y2 - y1) ** 2))
RELATIVISTIC = (["m", "v", "c"], ["kg", "m/s", "m/s"], "J",
                lambda m, v, c: m * c**2 / np.sqrt(1 - v**2 / c**2))
GAS = (["n", "kb", "T", "V"], ["1", "J/K", "K", "m^3"], "Pa",
       lambda n, kb, T, V: n * kb * T / V)


def data(problem, rows: int = 300, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    names, _, _, truth = problem
    rng = np.random.default_rng(seed)
    X = rng.uniform(1.0, 3.0, (rows, len(names)))
    if problem is RELATIVISTIC:
        X[:, 2] += 3.0  # v < c
    return X, truth(*X.T)


def reduced(problem):
    names, units, target, _ = problem
    X, y = data(problem)
    return reduce_by_units(X, y, names, [parse_units(u) for u in units], parse_units(target))


@pytest.mark.parametrize(("problem", "monomial", "groups"), [
    (PENDULUM, "sqrt(L/g)", []),
    (COULOMB, "q1*q2/(eps*r**2)", ["q2/q1"]),
    (DISTANCE, "x1", ["x2/x1", "y1/x1", "y2/x1"]),
    (RELATIVISTIC, "m*c**2", ["v/c"]),  # v < c on every row: the smaller over the larger
    (GAS, "n*kb*T/V", ["n"]),  # exactly a product of powers: the group is in the monomial
], ids=["pendulum", "coulomb", "distance", "relativistic", "gas"])
def test_the_reduction_has_n_minus_rank_groups(problem, monomial, groups):
    reduction, reason = reduced(problem)
    assert reduction is not None, reason
    assert to_str(reduction.monomial) == monomial
    assert [to_str(group) for group in reduction.groups] == groups
    names, units, target, _ = problem
    dimensions = dict(zip(names, units, strict=True))
    assert check_dimensions(reduction.monomial, dimensions).dimension == parse_units(target)
    for group in reduction.groups:
        assert check_dimensions(group, dimensions).dimension.dimensionless
    X, y = data(problem)
    np.testing.assert_allclose(reduction.monomial_values, reduction.monomial.evaluate(
        {name: X[:, i] for i, name in enumerate(names)}))


def test_a_target_no_monomial_reaches_says_why():
    """Newton's gravity without G: no product of masses and a distance is a force."""
    X = np.random.default_rng(0).uniform(1, 2, (50, 3))
    reduction, reason = reduce_by_units(X, X[:, 0] * X[:, 1] / X[:, 2] ** 2, ["m1", "m2", "r"],
                                        [parse_units(u) for u in ("kg", "kg", "m")],
                                        parse_units("N"))
    assert reduction is None and "a dimensional constant may be missing" in reason


def _fresh_error(problem, formula: str) -> float:
    names, _, _, truth = problem
    X, y = data(problem, rows=500, seed=9)
    predicted = parse(formula).evaluate({name: X[:, i] for i, name in enumerate(names)})
    return float(np.max(np.abs(predicted - y) / np.abs(y)))


@pytest.mark.parametrize("problem", [PENDULUM, COULOMB, GAS], ids=["pendulum", "coulomb",
                                                                     "gas"])
def test_the_answer_mapped_back_is_the_truth(problem):
    names, units, target, _ = problem
    X, y = data(problem)
    result = search(X, y, names, time_budget=60, seed=0, workers=1, max_evaluations=20_000,
                    units=dict(zip(names, units, strict=True)), target_units=target)
    assert any(note.startswith("dimensional analysis") for note in result.notes)
    assert _fresh_error(problem, result.best.formula) < 1e-9, result.best.formula
    assert result.best.complexity <= 12, result.best.formula


def test_inconsistent_formulas_are_dropped_from_the_front():
    """``x + t`` fits a length plus a time exactly; with units it is no answer."""
    rng = np.random.default_rng(1)
    X = rng.uniform(1, 3, (200, 2))
    units = {"x": "m", "t": "s"}
    result = search(X, X[:, 0] + X[:, 1], ["x", "t"], time_budget=60, seed=0, workers=1,
                    max_evaluations=5_000, units=units, target_units="m")
    dropped = [note for note in result.notes if note.startswith("dropped")]
    assert dropped and "dimensionally inconsistent" in dropped[0], result.notes
    # (the enumeration and evolution build no x + t with units: the formulas dropped are
    # the transforms' inverses and the combinations of consistent forms)
    assert "the target in m" in dropped[0] or "combines" in dropped[0]
    for entry in result.front:
        assert check_dimensions(entry.expression, units, "m").consistent, entry.formula
    plain = search(X, X[:, 0] + X[:, 1], ["x", "t"], time_budget=60, seed=0, workers=1,
                   max_evaluations=5_000)
    assert plain.best.mse < 1e-20 and not any(n.startswith("dropped") for n in plain.notes)


@pytest.mark.parametrize(("units", "target", "note"), [
    ({"L": "m", "g": "m/s^2"}, "s", "no units for m"),
    ({"L": "m", "g": "m/s^2", "m": "kg"}, "A", "no product of powers"),
], ids=["missing", "unreachable"])
def test_no_reduction_says_why_and_searches_the_whole_problem(units, target, note):
    names, _, _, _ = PENDULUM
    X, y = data(PENDULUM)
    result = search(X, y, names, time_budget=60, seed=0, workers=1, max_evaluations=5_000,
                    units=units, target_units=target)
    assert any(note in text for text in result.notes), result.notes
    assert result.best.r2 > 1 - 1e-12  # the whole problem was searched


def test_bad_units_are_unit_errors():
    X, y = data(PENDULUM)
    with pytest.raises(ValueError, match="unknown unit 'parsec'"):
        search(X, y, ["L", "g", "m"], time_budget=1, units={"L": "parsec"}, target_units="s")


@pytest.mark.parametrize(("formula", "merged"), [
    ("r**3*dP/mu*(0.5*(1.0/(L/r)))", "0.5*(r**4*dP/(mu*L))"),
    ("0.5*(m*(v*v))", "0.5*(m*v**2)"),
    ("L**0.5/g**0.5*(2/sqrt(m2/m1 + 1))", "2.0*sqrt(L/g)/sqrt(m2/m1 + 1)"),
    ("x*(1/x)", "1"),
], ids=["poiseuille", "kinetic", "inside-a-root-stays", "cancels"])
def test_mapped_back_products_merge_into_one_monomial(formula, merged):
    from srh_engine.search.pi_groups import merged_powers

    result = merged_powers(parse(formula))
    assert to_str(result) == merged
    rng = np.random.default_rng(0)
    values = {name: rng.uniform(1, 2, 20) for name in ("r", "dP", "mu", "L", "m", "v", "g",
                                                       "m1", "m2", "x")}
    np.testing.assert_allclose(np.broadcast_to(result.evaluate(values), (20,)),
                               np.broadcast_to(parse(formula).evaluate(values), (20,)))


def test_a_monomial_off_the_groups_lattice_is_reached():
    """The simplest monomial in the target's units is ``g`` (a rate), half the group
    ``A*g**2/N`` away from the particular solution ``sqrt(N/A)``: it is found by its few
    inputs, not only as a whole multiple of the groups."""
    names = ["N", "A", "g", "x"]
    units = ["kg^-1*s^-1", "kg^-1*s", "s^-1", "s^-1"]
    X = np.random.default_rng(0).uniform(1.0, 3.0, (200, 4))
    y = X[:, 2] + X[:, 3] + X[:, 0] / (X[:, 1] * X[:, 2])
    reduction, reason = reduce_by_units(X, y, names, [parse_units(u) for u in units],
                                        parse_units("1/s"))
    assert reduction is not None, reason
    assert to_str(reduction.monomial) == "g"


def test_a_product_of_powers_of_the_groups_goes_into_the_monomial():
    """When the target is exactly the monomial times powers of the groups, the monomial
    is the whole law and what is left to search is a constant."""
    names = ["a", "b", "c", "d", "t"]
    units = ["m", "m", "m", "m", "s"]
    X = np.random.default_rng(0).uniform(1.0, 3.0, (200, 5))
    a, b, c, d, t = X.T
    y = 3.0 * a**0.5 * b**1.5 * c / (d * t ** (1 / 3))
    reduction, reason = reduce_by_units(X, y, names, [parse_units(u) for u in units],
                                        parse_units("m^2/s^(1/3)"))
    assert reduction is not None, reason
    assert reduction.exponents == (0.5, 1.5, 1, -1, -Fraction(1, 3))
    ratio = y / reduction.monomial_values
    np.testing.assert_allclose(ratio, 3.0, rtol=1e-9)
    X[:, 3] += np.sin(X[:, 0])  # no longer a product of powers: the simplest monomial
    reduction, _ = reduce_by_units(X, y, names, [parse_units(u) for u in units],
                                   parse_units("m^2/s^(1/3)"))
    assert reduction.exponents != (0.5, 1.5, 1, -1, -Fraction(1, 3))


def test_many_dimensionless_inputs_are_reduced_quickly():
    """Nine dimensionless inputs have thousands of small dimensionless products; ranking
    them took seconds of a search's budget as exact rational arithmetic (about 2 s of CPU
    here, now a tenth of that)."""
    import time

    from srh_engine.search.pi_groups import simplest_basis

    n = 12
    matrix = [[Fraction(int(j in (0, 1))) for j in range(n)],
              [Fraction(int(j == 2)) for j in range(n)]]
    started = time.process_time()
    basis = simplest_basis(matrix, n)
    assert time.process_time() - started < 1.0
    assert len(basis) == 10 and basis[0] == tuple(Fraction(int(j == 3)) for j in range(n))
    for vector in basis:
        assert all(sum(r * v for r, v in zip(row, vector, strict=True)) == 0 for row in matrix)


# inputs w, T, p, F, A, Q, r are power factors; q and u meet in a difference
FACTORED = (["w", "T", "p", "F", "A", "Q", "r", "q", "u"],
            ["kg", "s", "m", "kg*m", "m^-1*s", "kg", "m^2", "m*s^-1", "m*s^-1"])


def factored_data(rows: int = 1000, seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    X = np.random.default_rng(seed).uniform(1.0, 5.0, (rows, 9))
    X[:, 7] += 5.0  # q > u
    w, T, p, F, A, Q, r, q, u = X.T
    return X, w ** (1 / 3) * T * p * F * (q - u) / (A * Q * r)


def factored_target() -> str:
    names, units = FACTORED
    exponents = dict(zip(names, (Fraction(1, 3), 1, 1, 1, -1, -1, -1, 0, 0), strict=True))
    dimension = parse_units("m/s")  # q - u
    for name, unit in zip(names, units, strict=True):
        dimension = dimension * parse_units(unit) ** exponents[name]
    return str(dimension)


def test_the_groups_beside_power_factors_are_of_the_other_inputs_only():
    """With the factors in the monomial, the remainder ``q - u`` is reduced over ``q`` and
    ``u``: one group, and ``y / M`` depends on it alone; the groups of all the inputs are
    more (products of the factors' inputs)."""
    from srh_engine.search.pi_groups import reduce_beside_factors

    names, units = FACTORED
    X, y = factored_data()
    dimensions = [parse_units(u) for u in units]
    target = parse_units(factored_target())
    whole, _ = reduce_by_units(X, y, names, dimensions, target)
    factors = {0: 1 / 3, 1: 1.0, 2: 1.0, 3: 1.0, 4: -1.0, 5: -1.0, 6: -1.0}
    beside = reduce_beside_factors(X, y, names, dimensions, target, factors)
    assert beside is not None and len(whole.groups) > 1
    assert [to_str(group) for group in beside.groups] == ["u/q"]
    ratio = y / beside.monomial_values
    np.testing.assert_allclose(ratio, 1 - X[:, 8] / X[:, 7], rtol=1e-9)
    names_units = dict(zip(names, units, strict=True))
    assert check_dimensions(beside.monomial, names_units).dimension == target


def test_factors_the_units_contradict_give_no_reduction():
    """``w`` taken for a factor ``w**1`` (it is ``w**(1/3)``) leaves ``q`` and ``u`` to make
    a remainder in kg**(-2/3)*m/s: no product of speeds is, so there is no reduction (a
    factor is wrong); no factors, or every input a factor, are no reduction either."""
    from srh_engine.search.pi_groups import reduce_beside_factors

    names, units = FACTORED
    X, y = factored_data()
    dimensions = [parse_units(u) for u in units]
    target = parse_units(factored_target())
    wrong = {0: 1.0, 1: 1.0, 2: 1.0, 3: 1.0, 4: -1.0, 5: -1.0, 6: -1.0}
    assert reduce_beside_factors(X, y, names, dimensions, target, wrong) is None
    assert reduce_beside_factors(X, y, names, dimensions, target, {}) is None
    every = {i: 1.0 for i in range(9)}
    assert reduce_beside_factors(X, y, names, dimensions, target, every) is None


def test_the_search_reduces_beside_the_power_factors_when_that_leaves_fewer_groups():
    names, units = FACTORED
    X, y = factored_data()
    result = search(X, y, names, time_budget=60, seed=0, workers=1, max_evaluations=20_000,
                    units=dict(zip(names, units, strict=True)), target_units=factored_target())
    assert any("kept out of the groups" in note for note in result.notes), result.notes
    assert any("function of 1 dimensionless group(s): u/q" in note for note in result.notes)
    fresh, truth = factored_data(rows=300, seed=9)
    predicted = parse(result.best.formula).evaluate(dict(zip(names, fresh.T, strict=True)))
    assert float(np.max(np.abs(predicted - truth) / np.abs(truth))) < 1e-9, result.best.formula


def test_one_group_is_searched_both_ways_up(monkeypatch):
    """Bose's ``mu**3/(exp(mu/sigma) - 1)`` reduces to one group, ``sigma/mu`` by the
    convention; the reduced search gets ``mu/sigma`` beside it (and two groups stay two)."""
    import srh_engine.search.core as core

    seen = []
    monkeypatch.setattr(core, "explore", lambda run, view, *rest, **named: seen.append(
        [to_str(e) for e in view.inputs]) or [])
    X = np.random.default_rng(0).uniform(1.0, 5.0, (300, 2))
    mu, sigma = X.T
    core.search(X, mu**3 / (np.exp(mu / sigma) - 1), ["mu", "sigma"], time_budget=5,
                workers=1, max_evaluations=100, units={"mu": "J", "sigma": "J"},
                target_units="J^3")
    assert seen[0] == ["sigma/mu", "1/(sigma/mu)"]
    seen.clear()
    X3 = np.random.default_rng(0).uniform(1.0, 5.0, (300, 3))
    core.search(X3, X3[:, 0] + X3[:, 1] * X3[:, 2], ["a", "b", "c"], time_budget=5,
                workers=1, max_evaluations=100, units={"a": "m", "b": "m", "c": "1"},
                target_units="m")
    assert len(seen[0]) == 2 and not any(text.startswith("1/") for text in seen[0])


@pytest.mark.parametrize(("formula", "taken"), [
    ("rho**3*M**2*(T**2/M**2 - T/M)", "(T - M)*(rho**3*T)"),
    ("C*B**2*(A*tau**2*nu*P/C - x*tau**2*nu*P/C + tau**2*nu*P)/nu**2",
     "(A - x + C)*(B**2*tau**2*P/nu)"),
    ("D**3*d*v*rho*(1 + (kappa/rho + sqrt(T)/rho))", "(rho + (kappa + sqrt(T)))*(D**3*d*v)"),
    ("x*(y + z)", "(y + z)*x"),  # nothing common: only merged_powers' order
], ids=["difference", "three-terms", "a-term-without-it", "nothing-common"])
def test_powers_common_to_a_sums_terms_join_the_monomial(formula, taken):
    """Mapped back, the monomial multiplies a sum whose every term carries powers of the
    inputs that belong in it (the groups' inputs): they are taken out."""
    from srh_engine.search.pi_groups import common_monomial_out, merged_powers

    result = merged_powers(common_monomial_out(merged_powers(parse(formula))))
    assert to_str(result) == taken
    rng = np.random.default_rng(0)
    values = {name: rng.uniform(1, 2, 20) for name in ("rho", "M", "T", "C", "B", "A", "tau",
                                                       "nu", "P", "x", "D", "d", "v",
                                                       "kappa", "y", "z")}
    np.testing.assert_allclose(np.broadcast_to(result.evaluate(values), (20,)),
                               np.broadcast_to(parse(formula).evaluate(values), (20,)))


def test_the_undivided_search_reuses_the_factors_the_reduction_found(monkeypatch):
    """The units' reduction tests the inputs for power factors; the undivided search
    after it asks the same question of the same arrays and gets the answer kept."""
    from srh_engine.search import decomposition, explore
    from srh_engine.search.budget import Budget, Counter
    from srh_engine.search.views import Run

    X = np.random.default_rng(0).uniform(1.0, 2.0, (50, 2))
    y = X[:, 0] * np.sin(X[:, 1])
    run = Run(y, ("+",), (), 10, 0, known_factors=(X, y, {0: 1.0}))
    calls = []
    monkeypatch.setattr(decomposition, "power_factors",
                        lambda *args: calls.append(args) or {1: 2.0})
    budget = Budget(float("inf"), Counter())
    assert explore._power_factors(run, X, y, budget) == {0: 1.0} and not calls
    assert explore._power_factors(run, X.copy(), y, budget) == {1: 2.0} and len(calls) == 1


@pytest.mark.parametrize(("formula", "name", "rooted"), [
    ("k*sqrt(0.36 + 0.36*V**2/k**2)/E", "k", "sqrt(0.36*k**2 + 0.36*V**2)/E"),
    ("N*sigma*sqrt(0.25 + 0.25*p**2/N**2)", "N", "sigma*sqrt(0.25*N**2 + 0.25*p**2)"),
    ("N*sigma*sqrt(0.25 + 0.25*p**2/N**2)", "p", "N*sigma*sqrt(0.25 + 0.25*p**2/N**2)"),
], ids=["over-a-quantity", "beside-another", "not-in-the-monomial"])
def test_a_monomials_input_goes_into_a_root_of_a_sum(formula, name, rooted):
    """Mapped back, ``M*sqrt(a + b*g**2)`` with the group ``g = V/k``: ``k`` taken into the
    root is the norm a person writes (the values are the same where ``k > 0``)."""
    from srh_engine.search.pi_groups import monomial_into_root

    result = monomial_into_root(parse(formula), name)
    assert to_str(result) == rooted
    rng = np.random.default_rng(0)
    values = {n: rng.uniform(1, 2, 20) for n in ("k", "V", "E", "N", "sigma", "p")}
    np.testing.assert_allclose(np.broadcast_to(result.evaluate(values), (20,)),
                               np.broadcast_to(parse(formula).evaluate(values), (20,)))


def _same_values(result, formula, names):
    rng = np.random.default_rng(0)
    values = {n: rng.uniform(1, 2, 20) for n in names}
    np.testing.assert_allclose(np.broadcast_to(result.evaluate(values), (20,)),
                               np.broadcast_to(parse(formula).evaluate(values), (20,)))


@pytest.mark.parametrize(("formula", "merged"), [
    ("z*exp(sqrt(x**2*n**3/M**2) - 0.5)", "exp(x*n**1.5/M - 0.5)*z"),
    ("V/x**2*sqrt(0.5 + 0.25*((E/V)**2 + (P/V)**2))",
     "sqrt(0.5 + 0.25*(E**2/V**2 + P**2/V**2))*(V/x**2)"),
    ("sqrt(M/g)*t", "sqrt(M)*t/sqrt(g)"),
    ("sqrt(T)", "sqrt(T)"),
    ("sqrt(t**2*k/(t*V))", "sqrt(t*k/V)"),
], ids=["a-group-under-a-root", "a-squared-group", "half-powers-as-roots", "a-root-alone",
        "only-half-powers-one-root"])
def test_roots_and_powers_of_groups_merge_into_the_monomial(formula, merged):
    """Mapped back, a group under a root or raised to a power is a product of powers of the
    inputs like the others: ``sqrt(x**2*n**3/M**2)`` is ``x*n**1.5/M``."""
    from srh_engine.search.pi_groups import merged_powers

    result = merged_powers(parse(formula))
    assert to_str(result) == merged
    _same_values(result, formula, ("z", "x", "n", "M", "V", "E", "P", "g", "t", "T", "k"))


@pytest.mark.parametrize(("formula", "written"), [
    ("(v/c)/(c/v - v/c)", "v**2/(c**2 - v**2)"),
    ("s**2*n/g/(2 + 2*R/g)", "s**2*n/(2.0*g + 2.0*R)"),
    ("V/x**2*(0.06 + 0.05*(E/V))", "(0.06*V + 0.05*E)/x**2"),
], ids=["a-group-both-ways-up", "a-sum-dividing", "a-sum-over-a-monomial"])
def test_powers_common_to_a_dividing_sum_are_taken_out(formula, written):
    """A sum that divides (or is divided) is cleared of its terms' common powers as one
    that multiplies is: the law of ``g`` and ``1/g`` comes back as a person writes it."""
    from srh_engine.search.pi_groups import common_monomial_out, merged_powers

    result = merged_powers(common_monomial_out(merged_powers(parse(formula))))
    assert to_str(result) == written
    _same_values(result, formula, ("v", "c", "s", "n", "g", "R", "V", "x", "E"))


@pytest.mark.parametrize(("formula", "distributed"), [
    ("(1 - (k/V**2 - t*k/V - w/V))*V", "V - (k/V - t*k - w)"),
    ("3.0*(t/(N*I) + 0.5*a/q - 0.5*x/q)*q", "3.0*(t*q/(N*I) + 0.5*a - 0.5*x)"),
    ("V*sqrt(0.5 + (E**2/V**2 + P**2/V**2)*0.25)/x**2",
     "sqrt(0.5 + 0.25*(E**2/V**2 + P**2/V**2))*(V/x**2)"),  # a root: monomial_into_root
], ids=["a-sum-in-other-units", "over-the-terms", "not-into-a-root"])
def test_a_monomial_goes_into_the_sum_it_multiplies(formula, distributed):
    """The target's units make a monomial of a law that is a sum of terms in other units;
    taken back into the sum, the terms are the law's."""
    from srh_engine.search.pi_groups import merged_powers, monomial_into_sum

    result = merged_powers(monomial_into_sum(parse(formula)))
    assert to_str(result) == distributed
    _same_values(result, formula, ("k", "V", "t", "w", "N", "I", "a", "q", "x", "E", "P"))


def test_a_monomial_goes_into_a_root_of_a_sum_scaled_by_a_number():
    from srh_engine.search.pi_groups import monomial_into_root

    formula = "V*sqrt(0.5 + (E**2/V**2 + P**2/V**2)*0.25)/x**2"
    result = monomial_into_root(parse(formula), "V")
    assert to_str(result) == "sqrt(0.5*V**2 + (E**2 + P**2)*0.25)/x**2"
    _same_values(result, formula, ("V", "E", "P", "x"))


def test_the_mapped_back_answer_is_the_smallest_of_the_rewritings():
    """``core._merged`` offers the monomial taken into the sum beside the other rewritings
    and keeps the smallest that gives the same values."""
    from srh_engine import complexity
    from srh_engine.search.core import _merged
    from srh_engine.search.results import FrontEntry

    expression = parse("(1 - (k/V**2 - t*k/V - w/V))*V")
    rng = np.random.default_rng(0)
    values = {n: rng.uniform(1, 2, 20) for n in ("k", "V", "t", "w")}
    entry = _merged(FrontEntry(expression, complexity(expression), 0.0, 1.0), values)
    assert to_str(entry.expression) == "V - (k/V - t*k - w)" and entry.complexity == 11


def test_roots_stay_roots_when_the_merged_exponent_is_no_readable_fraction():
    """``sqrt(sqrt(sqrt(sqrt(R))))*p`` merged would be ``R**0.0625*p``: an exponent the units
    check does not read as a fraction (denominator above 12), and the formula, consistent
    as written, would be dropped as inconsistent."""
    from srh_engine.search.pi_groups import merged_powers

    result = merged_powers(parse("sqrt(sqrt(sqrt(sqrt(R))))*p"))
    assert to_str(result) == "sqrt(R**0.125)*p"
    assert check_dimensions(result, {"R": "kg^16", "p": "kg"}, "kg^2").consistent

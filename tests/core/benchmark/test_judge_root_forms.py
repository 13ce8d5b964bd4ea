"""Roots of sums and powers of exponentials as :func:`srh_engine.readable` writes them,
against truths written as physics writes them: constructed pairs of random positive
monomials, each exact where the answer is real (positive names), and each judged a
symbolic solution by SRBench's rule (SymPy without assumptions) once written.

- a sum of reciprocals under a power, one term added (where the power is real, that term
  is the largest): the truth takes it out, ``m/sqrt(1/v**2 - 1/c**2)`` against
  ``m*v/sqrt(1 - v**2/c**2)``;
- a name outside a root of a sum with a subtracted number, cancelling in a term: the truth
  has it inside, ``sqrt(w**2*d**2/c**2 - pi**2)/d`` against ``sqrt(w**2/c**2 - pi**2/d**2)``.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from srh_core.benchmark import judge
from srh_engine import parse, readable, to_str

NAMES = ("m", "v", "c", "w", "d", "k")
POSITIVE_POINTS = {name: np.random.default_rng(20 + i).uniform(0.2, 4.0, 300)
                   for i, name in enumerate(NAMES)}

def _text(coefficient: str, powers: dict[str, Fraction]) -> str:
    """``coefficient*x**a*y**b/(z**c)`` with exact exponents (``1`` when empty)."""
    def power(name: str, exponent: Fraction) -> str:
        return name if exponent == 1 else f"{name}**({exponent})"

    up = [power(n, e) for n, e in sorted(powers.items()) if e > 0]
    down = [power(n, -e) for n, e in sorted(powers.items()) if e < 0]
    top = "*".join([coefficient, *up] if coefficient != "1" or not up else up) or "1"
    return top if not down else f"{top}/({'*'.join(down)})"


def _scaled(powers: dict[str, Fraction], by: Fraction) -> dict[str, Fraction]:
    return {n: e * by for n, e in powers.items() if e * by != 0}


def _plus(*parts: dict[str, Fraction]) -> dict[str, Fraction]:
    total: dict[str, Fraction] = {}
    for part in parts:
        for name, exponent in part.items():
            total[name] = total.get(name, Fraction(0)) + exponent
    return {n: e for n, e in total.items() if e != 0}


def _reciprocal(names: list[str], exponents: list[int]) -> dict[str, Fraction]:
    return {n: Fraction(-e) for n, e in zip(names, exponents, strict=True)}


_exponents = st.sampled_from([Fraction(1, 2), Fraction(-1, 2), Fraction(3, 2), Fraction(1, 3)])
_coefficients = st.sampled_from(["1", "2", "3", "pi"])


@st.composite
def _reciprocal_sums(draw: st.DrawFn) -> tuple[str, str]:
    """(answer, truth): ``M*(A - B1 [- B2])**p``, A and B reciprocal monomials (A a power
    whose ``p``-th power is one of integral exponent), against ``M*A**p*(1 - B1/A [- B2/A])**p``
    with the monomials multiplied out."""
    names = draw(st.permutations(NAMES))
    count = draw(st.integers(1, 2))
    p = draw(_exponents)
    leading = _reciprocal([names[0]], [p.denominator * draw(st.integers(1, 2))])  # comes out
    others = [_reciprocal([names[1 + i]], [draw(st.integers(1, 3))]) for i in range(count)]
    coefficients = [draw(_coefficients) for _ in others]
    outside = {names[3]: Fraction(draw(st.integers(1, 2)))}
    answer_sum = " - ".join([_text("1", leading)] +
                            [_text(c, o) for c, o in zip(coefficients, others, strict=True)])
    answer = f"{_text('1', outside)}*({answer_sum})**({p})"
    ratios = [_text(c, _plus(o, _scaled(leading, Fraction(-1))))
              for c, o in zip(coefficients, others, strict=True)]
    truth = (f"{_text('1', _plus(outside, _scaled(leading, p)))}*"
             f"(1 - {' - '.join(ratios)})**({p})")
    return answer, truth


def _inside_pair(seed: int) -> tuple[str, str]:
    """(answer, truth): ``x**(-k*p)*(C*A*x**k - n)**p`` against ``(C*A - n/x**k)**p``."""
    rng = np.random.default_rng(seed)
    names = list(rng.permutation(NAMES))
    x = names[0]
    k = Fraction(int(rng.choice([1, 2, -1, -2])))
    term = {names[1]: Fraction(int(rng.integers(1, 3))),
            names[2]: Fraction(-int(rng.integers(1, 3)))}
    number = str(rng.choice(["1", "pi**2", "4"]))
    coefficient = str(rng.choice(["1", "2", "pi"]))
    p = [Fraction(1, 2), Fraction(-1, 2), Fraction(3, 2)][int(rng.integers(0, 3))]
    answer = (f"{_text('1', {x: -k * p})}*"
              f"({_text(coefficient, _plus(term, {x: k}))} - {number})**({p})")
    truth = f"({_text(coefficient, term)} - {number}/({_text('1', {x: k})}))**({p})"
    return answer, truth


def _assert_same_where_real(answer: str, written: str) -> None:
    with np.errstate(all="ignore"):
        before = np.broadcast_to(parse(answer).evaluate(POSITIVE_POINTS), (300,))
        after = np.broadcast_to(parse(written).evaluate(POSITIVE_POINTS), (300,))
    defined = np.isfinite(before)
    assert defined.sum() >= 10, answer
    assert np.allclose(after[defined], before[defined], rtol=1e-9, atol=0.0), (answer, written)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_reciprocal_sums())
def test_a_sum_of_reciprocals_is_written_with_its_leading_term_out(pair: tuple[str, str]
                                                                   ) -> None:
    answer, truth = pair
    written = to_str(readable(parse(answer), NAMES))
    _assert_same_where_real(answer, written)
    verdict = judge.symbolic_solution(written, truth)
    assert verdict.symbolic_solution, (answer, written, truth, verdict)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6))
def test_a_name_beside_a_root_with_a_subtracted_number_goes_in(seed: int) -> None:
    answer, truth = _inside_pair(seed)
    written = to_str(readable(parse(answer), NAMES))
    _assert_same_where_real(answer, written)
    verdict = judge.symbolic_solution(written, truth)
    assert verdict.symbolic_solution, (answer, written, truth, verdict)


def test_the_constructed_answers_are_not_symbolic_as_given() -> None:
    """The judge (no assumptions) does not see either class as the answers are given."""
    for seed in range(5):
        answer, truth = _inside_pair(seed)
        assert not judge.symbolic_solution(answer, truth).symbolic_solution, answer
    answer, truth = "m/sqrt(1/v**2 - 1/c**2)", "m*v/sqrt(1 - v**2/c**2)"
    assert not judge.symbolic_solution(answer, truth).symbolic_solution

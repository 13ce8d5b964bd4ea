"""Answers equal to the truth only for positive variables, judged as written and as
:func:`srh_engine.readable` writes them (the form every run reports): the judge stays
SRBench's (SymPy without assumptions), the written form is what lets it see the equality."""

from __future__ import annotations

import pytest

from srh_core.benchmark import judge
from srh_engine import parse, readable, to_str

# (id, answer as fitted, truth, names positive on the data)
PAIRS = [
    ("half-powers", "gamma**0.5*pr**0.5/rho**0.5", "sqrt(gamma*pr/rho)", ("gamma", "pr", "rho")),
    ("half-powers-negative-exponent", "1.0*gamma**0.5*pr**0.5*rho**-0.5", "sqrt(gamma*pr/rho)",
     ()),
    ("roots-in-a-sum", "I1 + I2 + 2*I1**0.5*I2**0.5*cos(delta)",
     "I1 + I2 + 2*sqrt(I1*I2)*cos(delta)", ()),
    ("float-half-power-in-a-sum", "x + 3*y**0.5", "x + 3*sqrt(y)", ()),
    ("float-three-halves-in-a-sum", "x + d**1.5", "x + d**(3/2)", ()),
    ("power-of-a-quotient-in-a-sum", "(gamma*pr/rho)**0.5 + x", "sqrt(gamma*pr/rho) + x",
     ("gamma", "pr", "rho")),
    ("monomial-mapped-back", "(s*k/r)**-1*(M**2*s/g)**(4/3)*(g*r/(M*v))**(-2/3)*v**(1/3)*g**3*x",
     "M**(10/3)*s**(1/3)*r**(1/3)*v*g*x/k", ("s", "k", "r", "M", "g", "v")),
    ("common-factor-under-root", "mu*a**0.5*A**2*sqrt(a*V + x*a*m)", "a*A**2*mu*sqrt(V + x*m)",
     ("a",)),
    ("sum-of-logs", "F*C**(1/3)*A*(p*log(a) + p*log(sin(a)))", "A*p*C**(1/3)*F*log(a*sin(a))",
     ()),
    ("difference-of-logs", "n*T*(log(V2) - log(V1))", "n*T*log(V2/V1)", ()),
    ("sum-of-reciprocals-under-a-root", "m/sqrt(1/v**2 - 1/c**2)", "m*v/sqrt(1 - v**2/c**2)",
     ("m", "v", "c")),
    ("name-into-a-root-with-a-subtracted-number", "sqrt(omega**2*d**2/c**2 - pi**2)/d",
     "sqrt(omega**2/c**2 - pi**2/d**2)", ("omega", "d", "c")),
    # a root of a sum with a number term stays apart from the roots of names, as truths have it
    ("root-of-a-product-over-a-sum", "sqrt(k/(1 - y**2/n**2))*x",
     "sqrt(k)*x/sqrt(1 - y**2/n**2)", ("k", "x", "y", "n")),
    ("leading-term-cancelling-a-root", "sqrt(r/((r/B - B/r)*B))*x**3", "x**3/sqrt(1 - B**2/r**2)",
     ("r", "B", "x")),
    ("conjugate-roots", "x*r/(N*sqrt(r/N + 1)*sqrt(r/N - 1))", "x/sqrt(1 - N**2/r**2)",
     ("x", "r", "N")),
    # factors beside a root of a sum go in where their names are then written fewer times
    # (exact answers of the units search on Feynman's bonus problems)
    ("root-of-names-into-a-root-of-a-sum", "2*pi*d**(3/2)/(sqrt(G*m1)*sqrt(m2/m1 + 1))",
     "2*pi*d**(3/2)/sqrt(G*(m1 + m2))", ("d", "G", "m1", "m2")),
    ("names-into-a-root-of-a-sum",
     "c*sqrt(8)*sqrt(pi)*sqrt(G*rho*d**2/c**2 - 3*alpha/(8*pi))/(sqrt(3)*d)",
     "sqrt(8*pi*G*rho/3 - alpha*c**2/d**2)", ("c", "d", "G", "rho", "alpha")),
    ("name-into-a-root-with-a-cosine",
     "0.11253953951963826*q/(d*epsilon*sqrt(2*r**2/d**2 - 4*r*cos(alpha)/d + 2))",
     "q/(4*pi*epsilon*sqrt(r**2 + d**2 - 2*r*d*cos(alpha)))",
     ("q", "d", "epsilon", "r", "alpha")),
]


@pytest.mark.parametrize(("answer", "truth", "positive"), [p[1:] for p in PAIRS],
                         ids=[p[0] for p in PAIRS])
def test_readable_answers_are_symbolic_solutions(answer: str, truth: str,
                                                 positive: tuple[str, ...]) -> None:
    written = to_str(readable(parse(answer), positive))
    verdict = judge.symbolic_solution(written, truth)
    assert verdict.symbolic_solution, (written, verdict)


def test_the_judge_itself_is_unchanged() -> None:
    """The fitted forms stay unsolved as written: SymPy needs no assumptions to read the
    written form, and the judge is given none."""
    for _, answer, truth, _ in PAIRS:
        assert not judge.symbolic_solution(answer, truth).symbolic_solution, answer

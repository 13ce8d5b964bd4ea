#!/usr/bin/env python
"""Generate a held-out suite of physics-like problems in the suite JSON format.

Run alone::

    .venv/bin/python scripts/gen_problems.py --count 40 --seed 1 --out heldout.json
    .venv/bin/python scripts/gen_problems.py --random --count 20 --seed 5 --units --out u.json

Each problem is a random formula from a small grammar of forms that recur in
physics, with sensible positive ranges (angles get ranges in radians):

- ``monomial``: a constant times a product of powers (rational exponents);
- ``sum``: a sum or difference of two monomials, optionally times a third;
- ``exponential``: a monomial times exp(+-monomial), or times exp(monomial) - 1;
- ``logarithm``: a monomial times the log of a ratio or of a monomial;
- ``trig``: a monomial times sin/cos of an angle (or of a frequency times a time);
- ``norm``: a monomial times the square root of a sum of two or three squares;
- ``rational``: a monomial over a sum, difference, ``1 + product`` or a harmonic sum;
- ``relativistic``: a monomial over (or times) sqrt(1 - v**2/c**2) with v < c.

``--random`` draws instead from a random grammar, with no list of forms.
Its grammar (``depth`` starts at ``MAX_RANDOM_DEPTH`` = 3)::

    formula  := parts | tree(3)                  parts with probability 0.25
    parts    := tree(1) "*" motif "*" motif ["*" motif]     (or "+" between two
                motifs: longer formulas with several physical parts)
    tree(d)  := leaf                              d = 0, or with probability 0.3
              | motif                             probability 0.15 (d >= 1)
              | tree(d-1) "*" tree(d-1)           product
              | "(" tree(d-1) ("+"|"-") tree(d-1) ")"      sum or difference
              | tree(d-1) "/(" tree(d-1) ")"      ratio
              | f "(" tree(d-1) ")"               f in sin cos log sqrt tanh arctan
              | "exp(-" tree(d-1) "/" var ")"
              | "(" tree(d-1) ")**(" p ")"        p in 2 3 -1 1/2
    leaf     := var | "(" var "-" var ")" | "(" c ")*" var    c in 2 3 1/2 pi 1
    motif    := lorentz | gaussian | distance | bose | sine-ratio | cross-root
              | nested-fraction | inverse
    lorentz  := "1/sqrt(1 - v**2/c**2)" | "sqrt(1 - v**2/c**2)"     v < c
    gaussian := "exp(-x**2/2)/sqrt(2*pi)" | "exp(-(x/s)**2/2)/(sqrt(2*pi)*s)"
              | "exp(-(x - m)**2/(2*s**2))/(sqrt(2*pi)*s)"
    distance := "sqrt((x1 - x2)**2 + (y1 - y2)**2 [+ (z1 - z2)**2])"
    bose     := "1/(exp(a/b) - 1)" | "a**3/(exp(a/b) - 1)"
              | "1/(exp(k*a/b) - 1)" | "a/(exp(k*a/b) - 1)"
    sine-ratio := "(sin(n*t/2)/sin(t/2))**2" | "sin(a)**2/sin(b)**2"
              | "sin(k*a)**2/sin(b)**2"
    cross-root := "sqrt(a**2 + b**2 +- 2*a*b*cos(t))" | "sqrt(a**2 + b**2 + a*b)"
              | "sqrt(a**2 + b**2 +- 2*a*b*cos(k*t))"
    k        := "2*pi" | "1/(2*pi)" | p/q           p, q in 1..5, p/q not 1
                (an inner number: a constant the formula holds inside its function,
                 which no outer scale stands for; about one draw in six of these motifs)
    nested-fraction := "a/(1 + b/(c + d))" | "1/(1/a + 1/b + 1/c)"
              | "(a + b)/(1 + a*b/c**2)"
    inverse  := "arcsin(a/b)" | "arccos(a/b)"  (a < b) | "arcsin(n*sin(t))"  (n < 1)
              | "arctan(a/b)" | "tanh(a*b/c)"

over 1 to 9 variables of the tree (half of the problems have 5 to 9; 1 or 2 under
``parts``) plus the motifs' own (each motif draws fresh variables with ranges that
keep it finite: ``v < c``, angles where the sines do not vanish), at most
``MAX_RANDOM_VARIABLES`` in all; variables a tree did not use multiply it as a random
monomial. Its families are named by what the formula
contains: ``several-parts`` (two or more motifs), else the motif's name, else
``ratio-of-sums``, ``nested``, ``difference``, ``many-variables``, ``function``,
``other``, first match in that order.

``--units`` gives every variable and the target units (over kg, m, s) under which
the formula is dimensionally consistent, numbers taken as pure numbers: the terms of a
sum alike, the arguments of exp/log/sin/cos dimensionless (:func:`draw_units`; each
base dimension a random combination of an integer basis of the solutions), so the
search's use of units can be measured on generated suites (``--methods search-units``).

Every formula is checked on sampled data (finite, not degenerate) and redrawn
otherwise. The output is the format of ``srh_core/problems/feynman_public.json``
(``suite``, ``source``, ``syntax``, ``problems`` with ``id``, ``name``,
``output``, ``formula`` and ``variables``), so ``load_suite(path)`` and the
benchmark scripts read it unchanged. The same seed gives the same file.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from srh_core.problems import Problem  # noqa: E402

DEFAULT_COUNT = 40
MAX_DRAWS = 50
CHECK_SAMPLES = 2_000
MAX_DYNAMIC_RANGE = 1e8
"""Largest max|y| / median|y| accepted: beyond it the problem is degenerate."""

POSITIVE_NAMES = ("m", "v", "r", "q", "E", "B", "T", "p", "k", "L", "R", "I", "n", "d", "a",
                  "h", "g", "F", "P", "V", "x", "y", "z", "s", "w", "u", "rho", "mu", "nu",
                  "kappa", "sigma", "lam", "tau", "eps", "M", "Q", "N", "A", "C", "D")
ANGLE_NAMES = ("theta", "phi", "psi", "beta")
OUTPUT_NAMES = ("f", "Y", "out", "res", "G", "W", "U", "K", "J", "S", "H", "Z")
CONSTANTS = ("1", "1", "1", "2", "1/2", "3/2", "3", "1/3", "4", "pi", "2*pi", "1/(4*pi)",
             "1/(2*pi)", "3/5")
EXPONENTS = ("1", "1", "1", "1", "2", "2", "-1", "-1", "-2", "3", "1/2", "-1/2", "3/2", "1/3")
RANGES = ((1.0, 5.0), (1.0, 5.0), (1.0, 3.0), (0.5, 2.0), (1.0, 10.0), (2.0, 4.0))
ANGLE_RANGES = ((0.0, 2.0 * np.pi), (1.0, 3.0), (0.0, 5.0), (0.5, 1.5))


@dataclass(frozen=True, slots=True)
class Draft:
    """A drawn formula and the ranges of its variables."""

    family: str
    formula: str
    variables: tuple[tuple[str, float, float], ...]


class Namer:
    """Hands out distinct variable names and their ranges for one problem."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.used: dict[str, tuple[float, float]] = {}

    def positive(self, low: float | None = None, high: float | None = None) -> str:
        free = [n for n in POSITIVE_NAMES if n not in self.used]
        name = str(self.rng.choice(free))
        span = RANGES[int(self.rng.integers(len(RANGES)))]
        self.used[name] = (span[0] if low is None else low, span[1] if high is None else high)
        return name

    def angle(self) -> str:
        free = [n for n in ANGLE_NAMES if n not in self.used]
        name = str(self.rng.choice(free))
        self.used[name] = tuple(float(v) for v in
                                ANGLE_RANGES[int(self.rng.integers(len(ANGLE_RANGES)))])
        return name

    def variables(self) -> tuple[tuple[str, float, float], ...]:
        return tuple((name, round(low, 6), round(high, 6))
                     for name, (low, high) in self.used.items())


def _power(name: str, exponent: str) -> str:
    if exponent == "1":
        return name
    return f"{name}**{exponent}" if "/" not in exponent and not exponent.startswith("-") \
        else f"{name}**({exponent})"


def monomial(rng: np.random.Generator, namer: Namer, n_vars: int, *,
             constant: bool = True) -> str:
    """``c * x1**a1 * ...`` with exponents from EXPONENTS (at least one variable)."""
    factors = [_power(namer.positive(), str(rng.choice(EXPONENTS))) for _ in range(n_vars)]
    text = "*".join(factors)
    value = str(rng.choice(CONSTANTS)) if constant else "1"
    if value == "1":
        return text
    return f"({value})*{text}" if "/" in value else f"{value}*{text}"


def _count(rng: np.random.Generator, low: int, high: int) -> int:
    return int(rng.integers(low, high + 1))


def family_monomial(rng: np.random.Generator, namer: Namer) -> str:
    return monomial(rng, namer, _count(rng, 1, 5))


def family_sum(rng: np.random.Generator, namer: Namer) -> str:
    first = monomial(rng, namer, _count(rng, 1, 2))
    second = monomial(rng, namer, _count(rng, 1, 2))
    sign = str(rng.choice(["+", "+", "-"]))
    inner = f"({first} {sign} {second})"
    return f"{monomial(rng, namer, 1, constant=False)}*{inner}" if rng.random() < 0.5 else inner


def family_exponential(rng: np.random.Generator, namer: Namer) -> str:
    scale = monomial(rng, namer, _count(rng, 1, 2))
    argument = monomial(rng, namer, _count(rng, 1, 3), constant=False)
    kind = int(rng.integers(3))
    if kind == 0:
        return f"{scale}*exp(-{argument})"
    if kind == 1:
        return f"{scale}*exp({argument}/{namer.positive(4.0, 10.0)})"
    return f"{scale}*(exp({argument}/{namer.positive(3.0, 8.0)}) - 1)"


def family_logarithm(rng: np.random.Generator, namer: Namer) -> str:
    scale = monomial(rng, namer, _count(rng, 1, 2))
    if rng.random() < 0.5:
        top, bottom = namer.positive(5.0, 10.0), namer.positive(1.0, 4.0)
        return f"{scale}*log({top}/{bottom})"
    return f"{scale}*log({monomial(rng, namer, _count(rng, 1, 2), constant=False)})"


def family_trig(rng: np.random.Generator, namer: Namer) -> str:
    scale = monomial(rng, namer, _count(rng, 1, 3))
    trig = str(rng.choice(["sin", "cos"]))
    if rng.random() < 0.7:
        argument = namer.angle()
    else:
        argument = f"{namer.positive(1.0, 3.0)}*{namer.positive(0.0, 4.0)}"
    return f"{scale}*{trig}({argument})" + ("**2" if rng.random() < 0.2 else "")


def family_norm(rng: np.random.Generator, namer: Namer) -> str:
    squares = [f"{namer.positive()}**2" for _ in range(_count(rng, 2, 3))]
    norm = f"sqrt({' + '.join(squares)})"
    if rng.random() < 0.3:
        return f"{monomial(rng, namer, 1)}/{norm}"
    return f"{monomial(rng, namer, _count(rng, 1, 2))}*{norm}"


def family_rational(rng: np.random.Generator, namer: Namer) -> str:
    scale = monomial(rng, namer, _count(rng, 1, 2))
    kind = int(rng.integers(4))
    if kind == 0:
        return f"{scale}/({namer.positive()} + {namer.positive()})"
    if kind == 1:
        big, small = namer.positive(3.0, 5.0), namer.positive(1.0, 2.0)
        return f"{scale}/({big}**2 - {small}**2)"
    if kind == 2:
        return f"{scale}/(1 + {namer.positive()}*{namer.positive()})"
    first, second = namer.positive(), namer.positive()
    return f"{scale}/(1/{first} + 1/{second})"


def family_relativistic(rng: np.random.Generator, namer: Namer) -> str:
    scale = monomial(rng, namer, _count(rng, 1, 2))
    v, c = namer.positive(1.0, 2.0), namer.positive(3.0, 10.0)
    root = f"sqrt(1 - {v}**2/{c}**2)"
    return f"{scale}/{root}" if rng.random() < 0.7 else f"{scale}*{root}"


FAMILIES: dict[str, Callable[[np.random.Generator, Namer], str]] = {
    "monomial": family_monomial, "sum": family_sum, "exponential": family_exponential,
    "logarithm": family_logarithm, "trig": family_trig, "norm": family_norm,
    "rational": family_rational, "relativistic": family_relativistic,
}


# -------------------------------------------------------------- random grammar
RANDOM_FUNCTIONS = ("sin", "cos", "exp", "log", "sqrt", "tanh", "arctan")
RANDOM_POWERS = ("2", "3", "-1", "1/2")
RANDOM_CONSTANTS = ("2", "3", "1/2", "pi", "1")
MAX_RANDOM_DEPTH = 3
MIN_RANDOM_COMPLEXITY = 7
MAX_RANDOM_VARIABLES = 10


MOTIF_SHARE = 0.15
"""Probability that an inner node of a random tree is a motif."""
PARTS_SHARE = 0.25
"""Probability that a random formula is a product (or sum) of two or three motifs."""


def motif_lorentz(namer: Namer, rng: np.random.Generator) -> str:
    v, c = namer.positive(0.5, 2.0), namer.positive(3.0, 10.0)
    root = f"sqrt(1 - {v}**2/{c}**2)"
    return f"1/{root}" if rng.random() < 0.7 else root


def motif_gaussian(namer: Namer, rng: np.random.Generator) -> str:
    kind = int(rng.integers(3))
    if kind == 0:
        x = namer.positive(-3.0, 3.0)
        return f"exp(-{x}**2/2)/sqrt(2*pi)"
    x, sigma = namer.positive(-3.0, 3.0), namer.positive(1.0, 3.0)
    if kind == 1:
        return f"exp(-({x}/{sigma})**2/2)/(sqrt(2*pi)*{sigma})"
    mean = namer.positive(-1.0, 1.0)
    return f"exp(-({x} - {mean})**2/(2*{sigma}**2))/(sqrt(2*pi)*{sigma})"


def motif_distance(namer: Namer, rng: np.random.Generator) -> str:
    axes = int(rng.integers(2, 4))
    squares = [f"({namer.positive()} - {namer.positive()})**2" for _ in range(axes)]
    return f"sqrt({' + '.join(squares)})"


INNER_SHARE = 0.15
"""Of the draws of a motif with a function (bose, sine-ratio, cross-root): an inner number
``k`` in its function's argument. The variant is chosen by the draw that chose between
the motif's forms before (a share of its range), so a seed whose motifs draw no inner
number gives the same file as before the variants existed."""


def _inner_number(rng: np.random.Generator) -> str:
    """``k`` of the grammar: 2*pi, 1/(2*pi) or a simple ratio p/q (not 1)."""
    roll = rng.random()
    if roll < 0.3:
        return "(2*pi)"
    if roll < 0.6:
        return "(1/(2*pi))"
    while True:
        p, q = (int(v) for v in rng.integers(1, 6, size=2))
        if p != q:
            ratio = Fraction(p, q)
            return f"{ratio.numerator}" if ratio.denominator == 1 else f"({ratio})"


def motif_bose(namer: Namer, rng: np.random.Generator) -> str:
    energy, temperature = namer.positive(1.0, 5.0), namer.positive(1.0, 3.0)
    roll = rng.random()
    if 0.4 <= roll < 0.4 + INNER_SHARE:
        occupation = f"(exp({_inner_number(rng)}*{energy}/{temperature}) - 1)"
        return f"{energy}/{occupation}" if rng.random() < 0.5 else f"1/{occupation}"
    occupation = f"(exp({energy}/{temperature}) - 1)"
    return f"{energy}**3/{occupation}" if roll < 0.4 else f"1/{occupation}"


def motif_sine_ratio(namer: Namer, rng: np.random.Generator) -> str:
    roll = rng.random()
    if roll < 0.6:
        n, angle = namer.positive(1.0, 4.0), namer.positive(0.5, 3.0)
        return f"(sin({n}*{angle}/2)/sin({angle}/2))**2"
    top = namer.positive(0.3, 3.0)
    if roll < 0.6 + INNER_SHARE:
        top = f"{_inner_number(rng)}*{top}"
    return f"sin({top})**2/sin({namer.positive(0.5, 2.5)})**2"


def motif_cross_root(namer: Namer, rng: np.random.Generator) -> str:
    a, b = namer.positive(), namer.positive()
    roll = rng.random()
    if roll < 0.7:
        sign = str(rng.choice(["+", "-"]))
        angle = namer.positive(0.0, 3.0)
        if roll < INNER_SHARE:
            angle = f"{_inner_number(rng)}*{angle}"
        return f"sqrt({a}**2 + {b}**2 {sign} 2*{a}*{b}*cos({angle}))"
    return f"sqrt({a}**2 + {b}**2 + {a}*{b})"


def motif_nested_fraction(namer: Namer, rng: np.random.Generator) -> str:
    kind = int(rng.integers(3))
    if kind == 0:
        a, b, c, d = (namer.positive() for _ in range(4))
        return f"{a}/(1 + {b}/({c} + {d}))"
    if kind == 1:
        a, b, c = (namer.positive() for _ in range(3))
        return f"1/(1/{a} + 1/{b} + 1/{c})"
    u, v, c = namer.positive(0.5, 2.0), namer.positive(0.5, 2.0), namer.positive(3.0, 10.0)
    return f"({u} + {v})/(1 + {u}*{v}/{c}**2)"


def motif_inverse(namer: Namer, rng: np.random.Generator) -> str:
    kind = int(rng.integers(4))
    if kind == 0:
        a, b = namer.positive(0.5, 2.0), namer.positive(3.0, 10.0)
        return f"{rng.choice(['arcsin', 'arccos'])}({a}/{b})"
    if kind == 1:
        n, angle = namer.positive(0.1, 0.9), namer.positive(0.2, 3.0)
        return f"arcsin({n}*sin({angle}))"
    if kind == 2:
        return f"arctan({namer.positive()}/{namer.positive()})"
    a, b, c = namer.positive(), namer.positive(), namer.positive()
    return f"tanh({a}*{b}/{c})"


MOTIFS: dict[str, Callable[[Namer, np.random.Generator], str]] = {
    "lorentz": motif_lorentz, "gaussian": motif_gaussian, "distance": motif_distance,
    "bose": motif_bose, "sine-ratio": motif_sine_ratio, "cross-root": motif_cross_root,
    "nested-fraction": motif_nested_fraction, "inverse": motif_inverse,
}


class RandomTree:
    """Draws one random formula over ``n_vars`` variables (text the engine parses)."""

    def __init__(self, rng: np.random.Generator, namer: Namer, n_vars: int,
                 parts: bool = False) -> None:
        self.rng, self.namer, self.parts = rng, namer, parts
        self.names = [namer.positive() for _ in range(n_vars)]
        self.used: set[str] = set()
        self.kinds: set[str] = set()
        self.motifs: list[str] = []

    def motif(self) -> str:
        name = str(self.rng.choice(list(MOTIFS)))
        before = set(self.namer.used)
        text = MOTIFS[name](self.namer, self.rng)
        fresh = [n for n in self.namer.used if n not in before]
        self.names += fresh
        self.used.update(fresh)
        self.motifs.append(name)
        return f"({text})"

    def variable(self) -> str:
        fresh = [n for n in self.names if n not in self.used]
        pool = fresh if fresh and self.rng.random() < 0.7 else self.names
        name = str(self.rng.choice(pool))
        self.used.add(name)
        return name

    def leaf(self) -> str:
        roll = self.rng.random()
        if roll < 0.15 and len(self.names) >= 2:
            first, second = self.variable(), self.variable()
            if first != second:
                self.kinds.add("difference")
                return f"({first} - {second})"
        if roll < 0.25:
            return f"({self.rng.choice(RANDOM_CONSTANTS)})*{self.variable()}"
        return self.variable()

    def tree(self, depth: int) -> str:
        if depth <= 0 or (depth < MAX_RANDOM_DEPTH and self.rng.random() < 0.3):
            return self.leaf()
        if self.rng.random() < MOTIF_SHARE:
            return self.motif()
        kind = str(self.rng.choice(["product", "sum", "ratio", "function", "power"],
                                   p=[0.25, 0.25, 0.2, 0.18, 0.12]))
        if kind == "product":
            return f"{self.tree(depth - 1)}*{self.tree(depth - 1)}"
        if kind == "sum":
            sign = str(self.rng.choice(["+", "+", "-"]))
            self.kinds.add("sum")
            return f"({self.tree(depth - 1)} {sign} {self.tree(depth - 1)})"
        if kind == "ratio":
            top, bottom = self.tree(depth - 1), self.tree(depth - 1)
            if " + " in bottom or " - " in bottom:
                self.kinds.add("ratio-of-sums")
            return f"{top}/({bottom})"
        if kind == "function":
            function = str(self.rng.choice(RANDOM_FUNCTIONS))
            inner = self.tree(depth - 1)
            self.kinds.add("function")
            if "(" in inner and any(f"{f}(" in inner for f in RANDOM_FUNCTIONS):
                self.kinds.add("nested")
            if function == "exp":
                return f"exp(-{inner}/{self.variable()})"
            return f"{function}({inner})"
        return f"({self.tree(depth - 1)})**({self.rng.choice(RANDOM_POWERS)})"

    def formula(self) -> str:
        if self.parts:
            parts = [self.motif() for _ in range(int(self.rng.integers(2, 4)))]
            joined = f"({parts[0]} + {parts[1]})" if len(parts) == 2 and \
                self.rng.random() < 0.3 else "*".join(parts)
            text = f"{self.tree(1)}*{joined}"
        else:
            text = self.tree(MAX_RANDOM_DEPTH)
        for name in self.names:  # unused variables enter as a monomial prefactor
            if name not in self.used:
                text = f"{_power(name, str(self.rng.choice(EXPONENTS)))}*{text}"
        return text

    def family(self) -> str:
        if len(self.motifs) >= 2:
            return "several-parts"
        if self.motifs:
            return self.motifs[0]
        for kind in ("ratio-of-sums", "nested", "difference"):
            if kind in self.kinds:
                return kind
        if len(self.names) >= 5:
            return "many-variables"
        return "function" if "function" in self.kinds else "other"

    def interesting(self, formula: str) -> bool:
        """Structure beyond a monomial, and no part that cancels to a constant."""
        from srh_engine import canonical_key, complexity, parse

        structural = self.motifs or self.kinds & {"sum", "function", "difference",
                                                  "ratio-of-sums"}
        expression = parse(formula)
        return bool(structural) and complexity(expression) >= MIN_RANDOM_COMPLEXITY and \
            all(name in canonical_key(expression) for name in self.names)


def draw_random(rng: np.random.Generator) -> Draft:
    """One checked formula of the random grammar."""
    for _ in range(MAX_DRAWS):
        parts = rng.random() < PARTS_SHARE
        if parts:  # the motifs bring their own variables
            n_vars = int(rng.integers(1, 3))
        else:
            n_vars = int(rng.integers(5, 10)) if rng.random() < 0.5 else int(rng.integers(1, 5))
        namer = Namer(rng)
        grower = RandomTree(rng, namer, n_vars, parts)
        try:
            formula = grower.formula()
        except ValueError:  # the names ran out
            continue
        draft = Draft(grower.family(), formula, namer.variables())
        if len(draft.variables) <= MAX_RANDOM_VARIABLES and grower.interesting(formula) and \
                acceptable(draft):
            return draft
    raise RuntimeError(f"could not draw an acceptable random formula in {MAX_DRAWS} tries")


def generate_random(count: int, seed: int) -> dict[str, Any]:
    """The suite document of ``count`` formulas of the random grammar."""
    rng = np.random.default_rng([seed, 12])
    problems = []
    for index in range(count):
        draft = draw_random(rng)
        used = {name for name, _, _ in draft.variables}
        output = next(str(n) for n in rng.permutation(OUTPUT_NAMES) if n not in used)
        problems.append(_entry(draft, f"{draft.family}-{index + 1:03d}", output))
    return {"suite": f"random-seed{seed}",
            "source": f"scripts/gen_problems.py --random --count {count} --seed {seed}",
            "syntax": "numpy names; ln is the natural logarithm", "problems": problems}


def draw(rng: np.random.Generator, family: str) -> Draft:
    """One checked formula of ``family``; redrawn until it is finite and not degenerate."""
    for _ in range(MAX_DRAWS):
        namer = Namer(rng)
        formula = FAMILIES[family](rng, namer)
        draft = Draft(family, formula, namer.variables())
        if acceptable(draft):
            return draft
    raise RuntimeError(f"could not draw an acceptable {family} formula in {MAX_DRAWS} tries")


def acceptable(draft: Draft) -> bool:
    """Finite everywhere on the ranges, and not dominated by a few extreme values."""
    problem = Problem.from_dict(_entry(draft, "check", "y"))
    try:
        _, y = problem.sample(CHECK_SAMPLES, seed=0)
    except Exception:  # noqa: BLE001 - any failure means "draw again"
        return False
    magnitude = np.abs(y)
    if not np.all(np.isfinite(y)) or np.median(magnitude) <= 0 or \
            np.std(y) <= 1e-6 * float(np.mean(magnitude)):
        return False
    return float(magnitude.max() / np.median(magnitude)) < MAX_DYNAMIC_RANGE


def _entry(draft: Draft, problem_id: str, output: str) -> dict[str, Any]:
    return {"id": problem_id, "name": f"heldout-{problem_id}", "output": output,
            "formula": draft.formula, "family": draft.family,
            "variables": [{"name": n, "low": lo, "high": hi} for n, lo, hi in draft.variables]}


def generate(count: int, seed: int) -> dict[str, Any]:
    """The suite document: ``count`` problems cycling through the families."""
    rng = np.random.default_rng(seed)
    families = list(FAMILIES)
    problems = []
    for index in range(count):
        family = families[index % len(families)]
        draft = draw(rng, family)
        used = {name for name, _, _ in draft.variables}
        output = next(str(n) for n in rng.permutation(OUTPUT_NAMES) if n not in used)
        problems.append(_entry(draft, f"{family}-{index + 1:03d}", output))
    return {"suite": f"heldout-seed{seed}",
            "source": f"scripts/gen_problems.py --count {count} --seed {seed}",
            "syntax": "numpy names; ln is the natural logarithm", "problems": problems}


# ------------------------------------------------------------------------ units
UNIT_BASES = ("kg", "m", "s")
"""Base dimensions drawn for ``--units``."""


def _linear_dimension(node: Any, names: list[str], rows: list[Fraction]) -> list[Fraction]:
    """The dimension of ``node`` as a linear form in the variables' unknown exponents (one
    base dimension); the rules' constraints appended to ``rows`` (each a form that is 0)."""
    from srh_engine.nodes import Binary, Function, Number, Symbol, Unary
    from srh_engine.transform import fold_constants

    zero = [Fraction(0)] * len(names)
    if isinstance(node, Symbol):
        return [Fraction(int(name == node.name)) for name in names]
    if isinstance(node, Unary):
        return _linear_dimension(node.operand, names, rows)
    if isinstance(node, Binary):
        left = _linear_dimension(node.left, names, rows)
        if node.operator == "**":
            power = fold_constants(node.right)
            if isinstance(power, Number):
                return [Fraction(power.value).limit_denominator(12) * e for e in left]
            rows += [left, _linear_dimension(node.right, names, rows)]
            return zero
        right = _linear_dimension(node.right, names, rows)
        if node.operator in ("+", "-"):
            rows.append([a - b for a, b in zip(left, right, strict=True)])
            return left
        sign = 1 if node.operator == "*" else -1
        return [a + sign * b for a, b in zip(left, right, strict=True)]
    if isinstance(node, Function):
        inner = _linear_dimension(node.arguments[0], names, rows)
        if node.name == "sqrt":
            return [e / 2 for e in inner]
        if node.name == "abs":
            return inner
        rows.append(inner)  # exp, log, sin, cos...: a dimensionless argument
        return zero
    return zero  # numbers are pure numbers


def draw_units(formula: str, names: list[str], rng: np.random.Generator
               ) -> tuple[dict[str, str], str]:
    """Units of the variables under which ``formula`` is dimensionally consistent (numbers
    taken as pure numbers), and the target's: for each of ``UNIT_BASES``, a random
    combination (coefficients -1, 0, 1) of an integer basis of the solutions of the
    formula's constraints (like terms of a sum, dimensionless arguments of functions)."""
    import sympy

    from srh_engine import parse
    from srh_engine.units import BASE_DIMENSIONS, Dimension

    rows: list[list[Fraction]] = []
    root = _linear_dimension(parse(formula), names, rows)
    matrix = sympy.Matrix(rows) if rows else sympy.zeros(1, len(names))
    basis = []
    for vector in matrix.nullspace():
        scale = sympy.ilcm(1, *[sympy.fraction(v)[1] for v in vector])  # 1: one-input formulas
        basis.append([Fraction(int(v * scale)) for v in vector])
    exponents = {name: [Fraction(0)] * len(BASE_DIMENSIONS) for name in names}
    target = [Fraction(0)] * len(BASE_DIMENSIONS)
    for base in UNIT_BASES:
        column = BASE_DIMENSIONS.index(base)
        weights = rng.integers(-1, 2, size=len(basis))
        solution = [sum((int(w) * b[k] for w, b in zip(weights, basis, strict=True)),
                        Fraction(0)) for k in range(len(names))]
        for name, value in zip(names, solution, strict=True):
            exponents[name][column] = value
        target[column] = sum((r * v for r, v in zip(root, solution, strict=True)), Fraction(0))
    units = {name: str(Dimension(tuple(e))) for name, e in exponents.items()}
    return units, str(Dimension(tuple(target)))


def with_units(document: dict[str, Any], seed: int) -> dict[str, Any]:
    """``document`` with consistent units drawn for every problem (:func:`draw_units`)."""
    rng = np.random.default_rng([seed, 31])
    for problem in document["problems"]:
        names = [v["name"] for v in problem["variables"]]
        units, target = draw_units(problem["formula"], names, rng)
        for variable in problem["variables"]:
            variable["units"] = units[variable["name"]]
        problem["output_units"] = target
    document["source"] += " --units"
    return document


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=DEFAULT_COUNT, help="problems to generate")
    parser.add_argument("--seed", type=int, default=1, help="seed of the generator")
    parser.add_argument("--out", default="-", help="output file (default: stdout)")
    parser.add_argument("--random", action="store_true",
                        help="draw from the random grammar instead of the family forms")
    parser.add_argument("--units", action="store_true",
                        help="give every variable and the target units under which the "
                             "formula is dimensionally consistent (drawn at random)")
    args = parser.parse_args(argv)
    build = generate_random if args.random else generate
    document = build(args.count, args.seed)
    if args.units:
        document = with_units(document, args.seed)
    text = json.dumps(document, indent=1)
    if args.out == "-":
        print(text)
    else:
        Path(args.out).write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""constant_fit: replace a formula's numbers by nearby simple constants (3.14159 -> pi).

Candidate set of one number v (each within ``NEAR_RELATIVE_TOLERANCE`` of v,
the ``MAX_CHOICES_PER_CONSTANT`` nearest kept): the nearest integer; fractions
p/q with q <= 12 and |p| <= 32; pi, e, sqrt(n) for n in 2..10 (not 4 or 9),
sqrt(pi), sqrt(2*pi) and their reciprocals (the Gaussian's 1/sqrt(2*pi)), each
times -2, -1, -1/2, 1/2, 1 or 2; and rational multiples p/q * pi**k for k in
-2..2 (k != 0), q <= 32 and |p| <= 32 (1/(4*pi), 3/(8*pi), 2*pi**2...).
Numbers that already are simple (integers, pi, e, short fractions) are left
alone.

Search: every combination of "keep" or a choice per number when there are at
most ``MAX_EXHAUSTIVE_COMBINATIONS``; else each number is snapped alone (each
choice), then the best snaps are combined cumulatively, best R2 first, which
costs about 4 refits per number. Kept numbers are refitted on the training
split each time. Scored by R2 on the validation split when there is one,
else on train (subsampled to ``MAX_SEARCH_ROWS``).

Choice of the result: among combinations whose unexplained variance
``1 - R2`` is within ``SIMPLIFY_RTOL`` (relative) plus ``SIMPLIFY_ATOL`` of the
best one found, the one leaving fewest numbers unchanged (then best R2).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

import srh_engine as engine
from srh_core.errors import DataError, ToolArgumentError
from srh_core.evaluator.default import observed_data
from srh_core.evaluator.metrics import calc_R2
from srh_core.evaluator.splits import row_aligned_names
from srh_core.ranking import front_indices
from srh_core.tools.base import BaseTool
from srh_core.tools.diagnostics import number_text
from srh_core.tools.formula import DataTerm, FormulaTool, display_formula, formula_text

NEAR_RELATIVE_TOLERANCE = 0.05
MAX_CHOICES_PER_CONSTANT = 3
MAX_CONSTANTS = 12
MAX_EXHAUSTIVE_COMBINATIONS = 128
MAX_SEARCH_ROWS = 1_000
MAX_DENOMINATOR = 12
MAX_NUMERATOR = 32
SIMPLIFY_RTOL = 0.01
SIMPLIFY_ATOL = 1e-12
EQ_MATCH_ATOL = 1e-8
"""With use_eq_as_y the original has no error at all: accept 1 - R2 up to this instead."""
_PI = engine.Number(math.pi)
_NAMED: dict[str, tuple[float, engine.Expression]] = {
    "pi": (math.pi, _PI), "e": (math.e, engine.Number(math.e)),
    **{f"sqrt({n})": (math.sqrt(n), engine.sqrt(engine.Number(n)))
       for n in (2, 3, 5, 6, 7, 8, 10)},
    "sqrt(pi)": (math.sqrt(math.pi), engine.sqrt(_PI)),
    "sqrt(2*pi)": (math.sqrt(2 * math.pi), engine.sqrt(engine.Number(2) * _PI)),
    "1/sqrt(pi)": (1 / math.sqrt(math.pi), engine.Number(1) / engine.sqrt(_PI)),
    "1/sqrt(2*pi)": (1 / math.sqrt(2 * math.pi),
                     engine.Number(1) / engine.sqrt(engine.Number(2) * _PI)),
}
"""Named constants: label -> (value, expression)."""

PI_POWERS = (-2, -1, 1, 2)
"""Powers k of the rational multiples p/q * pi**k offered."""

MAX_PI_DENOMINATOR = 32
"""Largest q of a multiple p/q * pi**k (3/(20*pi) needs 20)."""
_FACTORS = (1.0, -1.0, 0.5, -0.5, 2.0, -2.0)
_SHORT_DENOMINATORS = frozenset({2, 4, 5, 8, 10})
KEEP = None


@dataclass(frozen=True, slots=True)
class Choice:
    """A simple constant: its label, value and expression."""

    label: str
    value: float
    expression: engine.Expression


@dataclass(frozen=True, slots=True)
class Trial:
    """One evaluated combination (``KEEP`` or a Choice per number)."""

    picks: tuple[Choice | None, ...]
    expression: engine.Expression
    r2: float

    @property
    def n_unchanged(self) -> int:
        return sum(pick is KEEP for pick in self.picks)


def is_simple(value: float) -> bool:
    """Integers, pi, e and fractions with a denominator up to 12 need no snapping."""
    if float(value).is_integer() or abs(value) in (math.pi, math.e):
        return True
    return float(Fraction(value).limit_denominator(MAX_DENOMINATOR)) == value


def nearby_choices(value: float) -> list[Choice]:
    """The simple constants within the relative tolerance of ``value``, nearest first."""
    found: dict[float, Choice] = {}
    for choice in _all_choices(value):
        distance = abs(choice.value - value) / abs(value)
        if distance <= NEAR_RELATIVE_TOLERANCE and choice.value not in found:
            found[choice.value] = choice
    ranked = sorted(found.values(), key=lambda c: (abs(c.value - value), len(c.label)))
    return ranked[:MAX_CHOICES_PER_CONSTANT]


def _all_choices(value: float) -> Iterator[Choice]:
    yield Choice(str(round(value)), float(round(value)), engine.Number(round(value)))
    for q in range(2, MAX_DENOMINATOR + 1):
        p = round(value * q)
        if 0 < abs(p) <= MAX_NUMERATOR and math.gcd(p, q) == 1:
            yield Choice(f"{p}/{q}", p / q, _fraction(p, q))
    for label, (base, expression) in _NAMED.items():
        for factor in _FACTORS:
            yield Choice(_named_label(label, factor), factor * base, _named(expression, factor))
    for power in PI_POWERS:
        yield from _pi_multiples(value, power)


def _pi_multiples(value: float, power: int) -> Iterator[Choice]:
    """The nearest p/q * pi**power for each denominator q (coprime, |p| bounded)."""
    base = math.pi ** power
    for q in range(1, MAX_PI_DENOMINATOR + 1):
        p = round(value * q / base)
        if 0 < abs(p) <= MAX_NUMERATOR and math.gcd(p, q) == 1:
            yield Choice(_pi_label(p, q, power), p / q * base, _pi_expression(p, q, power))


def _pi_label(p: int, q: int, power: int) -> str:
    pi = "pi" if abs(power) == 1 else "pi**2"
    if power > 0:
        scale = {1: "", -1: "-"}.get(p, f"{p}*")
        return f"{scale}{pi}" + (f"/{q}" if q != 1 else "")
    return f"{p}/" + (f"({q}*{pi})" if q != 1 else pi)


def _pi_expression(p: int, q: int, power: int) -> engine.Expression:
    pi: engine.Expression = _PI if abs(power) == 1 else _PI ** engine.Number(2)
    if power > 0:
        top = pi if p == 1 else (-pi if p == -1 else engine.Number(p) * pi)
        return top if q == 1 else engine.Binary("/", top, engine.Number(q))
    bottom = pi if q == 1 else engine.Number(q) * pi
    return engine.Binary("/", engine.Number(p), bottom)


def _fraction(p: int, q: int) -> engine.Expression:
    if q in _SHORT_DENOMINATORS:  # exact short decimal: one node instead of three
        return engine.Number(p / q)
    return engine.Binary("/", engine.Number(p), engine.Number(q))


def _named_label(label: str, factor: float) -> str:
    sign = "-" if factor < 0 else ""
    scale = {1.0: "", 0.5: "/2", 2.0: "2*"}[abs(factor)]
    return f"{sign}2*{label}" if scale == "2*" else f"{sign}{label}{scale}"


def _named(expression: engine.Expression, factor: float) -> engine.Expression:
    if isinstance(expression, engine.Number):
        core: engine.Expression = engine.Number(math.copysign(expression.value, factor))
    else:
        core = -expression if factor < 0 else expression
    if abs(factor) == 0.5:
        return engine.Binary("/", core, engine.Number(2))
    if abs(factor) == 2.0:
        return engine.Binary("*", engine.Number(2), core)
    return core


def substitute(expression: engine.Expression,
               replacements: dict[int, engine.Expression]) -> engine.Expression:
    """Replace the Numbers at the given preorder positions (position among Numbers)."""
    counter = itertools.count()

    def visit(node: engine.Expression) -> engine.Expression:
        if isinstance(node, engine.Number):
            return replacements.get(next(counter), node)
        children = tuple(visit(child) for child in node.operands)
        return node.with_operands(children) if children else node

    return visit(expression)


@BaseTool.register("constant_fit")
class ConstantFitTool(FormulaTool):
    """Snap a formula's numbers to nearby simple constants when the fit stays as good."""

    def execute(self, eq: str, y: str | None = None, use_eq_as_y: bool = False) -> dict[str, Any]:
        """Replace numbers in a formula by nearby simple constants: 3.14159 -> pi, 0.49999 -> 1/2.

        Use it on a good fitted formula to recover exact constants. Each
        number is compared with integers, fractions p/q (q <= 12), pi, e,
        sqrt(2)..sqrt(10) and their halves, doubles and negatives within 5%;
        the numbers left unchanged are refitted. Reports the Pareto front of
        R2 (validation when it exists, else train) against the count of
        numbers left unchanged; the simplest formula as good as the best
        (within 1% of its unexplained variance) is the result.

        Args:
            eq: The formula whose numbers to simplify, e.g. "3.1416*x**2 + 0.49999*x".
            y: Target variable or expression to score against. Default: the target.
            use_eq_as_y: Without y, compare the simplified formulas with the original eq
                itself instead of the target (the result is still scored on the target).
        """
        original = self._inlined(self.parse_text(eq, "eq", allow_parameters=True))
        numbers = [n.value for n in original.iter_preorder() if isinstance(n, engine.Number)]
        positions = [i for i, v in enumerate(numbers) if not is_simple(v)]
        if not positions:
            raise ToolArgumentError("The 'eq' parameter has no number to simplify (its numbers "
                                    "are already integers, pi, e or short fractions).",
                                    parameter="eq")
        if len(positions) > MAX_CONSTANTS:
            raise ToolArgumentError(f"The 'eq' parameter has {len(positions)} numbers to "
                                    f"simplify; at most {MAX_CONSTANTS} are allowed.",
                                    parameter="eq")
        target = self.target_term(y)
        reference = DataTerm(formula_text(original), original) if use_eq_as_y and y is None \
            else target
        choices = [nearby_choices(numbers[i]) for i in positions]
        trials = self._search(original, positions, choices, reference)
        best = _chosen(trials, EQ_MATCH_ATOL if reference is not target else SIMPLIFY_ATOL)
        front = _pareto(trials)
        details = {"parameters": {
            "replacements": {repr(numbers[i]): p.label
                             for i, p in zip(positions, best.picks, strict=True) if p},
            "pareto_front": [_summary(t, t is best) for t in front],
            "candidates": {repr(numbers[i]): [c.label for c in options]
                           for i, options in zip(positions, choices, strict=True)},
            "n_combinations": len(trials), "compared_with": reference.text}}
        result = self.evaluate_formula(best.expression, target, details=details)
        others = [self.score_formula(t.expression, target, show_diagnostics=False)
                  for t in front if t is not best]
        if others:
            result["all_formulas"] = [*result.get("all_formulas", []), *others]
        return result

    @classmethod
    def summary_lines(cls, result: Mapping[str, Any]) -> list[str]:
        """Replacements made and the Pareto front (numbers left unchanged vs R2)."""
        parameters = result.get("parameters") or {}
        replaced = ", ".join(f"{old} -> {new}" for old, new in
                             (parameters.get("replacements") or {}).items()) or "none"
        lines = [f"replaced: {replaced} ({parameters.get('n_combinations')} combinations scored "
                 f"against {parameters.get('compared_with')})",
                 "Pareto front (numbers left unchanged | R2 | formula):"]
        lines += [f"  {item['n_unchanged']} | {number_text(item['r2'], 10)} | "
                  f"{display_formula(item)}{'  <- result' if item['chosen'] else ''}"
                  for item in (parameters.get("pareto_front") or [])[:8]]
        return lines

    def _inlined(self, expression: engine.Expression) -> engine.Expression:
        """Bound parameters become numbers; unbound ones are an error."""
        if engine.unbound_parameters(expression):
            raise ToolArgumentError("The 'eq' parameter has parameters without values; fit "
                                    "them first (evaluate_formula with fit=true).",
                                    parameter="eq")
        return engine.parse(formula_text(expression))

    def _search(self, original: engine.Expression, positions: list[int],
                choices: list[list[Choice]], reference: DataTerm) -> list[Trial]:
        views = self._search_views()
        evaluate = _Scorer(self, original, positions, reference, views)
        options = [[KEEP, *c] for c in choices]
        if math.prod(len(o) for o in options) <= MAX_EXHAUSTIVE_COMBINATIONS:
            return [t for picks in itertools.product(*options)
                    if (t := evaluate(tuple(picks))) is not None]
        return _greedy(evaluate, choices)

    def _search_views(self) -> tuple[Any, Any]:
        """Train view (fits) and scoring view, both at most MAX_SEARCH_ROWS rows."""
        context = self.require_context()
        train, validation = context.train_split, context.validation_split
        return _subsampled(train), _subsampled(validation if validation is not None else train)


class _Scorer:
    """Builds, refits and scores one combination of picks."""

    def __init__(self, tool: ConstantFitTool, original: engine.Expression,
                 positions: Sequence[int], reference: DataTerm, views: tuple[Any, Any]) -> None:
        self.tool, self.original, self.positions = tool, original, positions
        self.reference, (self.train, self.scoring) = reference, views
        self.values = [n.value for n in original.iter_preorder() if isinstance(n, engine.Number)]

    def __call__(self, picks: tuple[Choice | None, ...]) -> Trial | None:
        self.tool.check_cancelled()
        kept = {p: engine.Parameter(f"_k{j}", self.values[p])
                for j, (p, pick) in enumerate(zip(self.positions, picks, strict=True))
                if pick is KEEP}
        snapped = {p: pick.expression for p, pick in zip(self.positions, picks, strict=True)
                   if pick is not KEEP}
        expression = substitute(self.original, kept | snapped)
        try:
            if kept and snapped:
                expression = self.train.evaluator.fit(expression, self.reference.expression,
                                                      self.train)
            expression = engine.parse(formula_text(expression))
            values, target = observed_data(expression, self.reference.expression, self.scoring)
            r2 = calc_R2(target, engine.evaluate(expression, values))
        except (DataError, engine.EngineError):
            return None
        return Trial(picks, expression, r2) if math.isfinite(r2) else None


def _greedy(evaluate: _Scorer, choices: list[list[Choice]]) -> list[Trial]:
    """Each number snapped alone (every choice), then cumulatively in order of those R2s."""
    keep: tuple[Choice | None, ...] = (KEEP,) * len(choices)
    trials = [t for t in [evaluate(keep)] if t is not None]
    best: dict[int, Trial] = {}
    for i, options in enumerate(choices):
        for choice in options:
            trial = evaluate(keep[:i] + (choice,) + keep[i + 1:])
            if trial is not None:
                trials.append(trial)
                if i not in best or trial.r2 > best[i].r2:
                    best[i] = trial
    picks = list(keep)
    for rank, i in enumerate(sorted(best, key=lambda i: -best[i].r2)):
        picks[i] = best[i].picks[i]
        if rank and (trial := evaluate(tuple(picks))) is not None:
            trials.append(trial)
    return trials


def _subsampled(view: Any) -> Any:
    n = view.n_samples
    if n <= MAX_SEARCH_ROWS:
        return view
    rows = np.unique(np.linspace(0, n - 1, MAX_SEARCH_ROWS).round().astype(int))
    aligned = set(row_aligned_names(view))
    return view.with_data({name: value[rows] if name in aligned else value
                           for name, value in view.data.items()})


def _chosen(trials: list[Trial], atol: float) -> Trial:
    if not trials:
        raise DataError("No combination of constants gives a finite R2 on the data.")
    best = max(t.r2 for t in trials)
    allowed = (1.0 - best) * (1.0 + SIMPLIFY_RTOL) + atol
    good = [t for t in trials if 1.0 - t.r2 <= allowed]
    return min(good, key=lambda t: (t.n_unchanged, -t.r2))


def _pareto(trials: list[Trial]) -> list[Trial]:
    """The front of R2 against the count of unchanged numbers, fewest unchanged first."""
    ordered = sorted(trials, key=lambda t: (-t.r2, t.n_unchanged))  # stable: first of ties
    return [ordered[i] for i in reversed(front_indices(ordered, lambda t: t.n_unchanged))]


def _summary(trial: Trial, chosen: bool) -> dict[str, Any]:
    return {"formula": formula_text(trial.expression), "n_unchanged": trial.n_unchanged,
            "r2": trial.r2, "chosen": chosen}

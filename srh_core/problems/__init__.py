"""Built-in problem suites, kept as data, and the SRBench-style protocol.

A suite file (JSON) lists problems: an output name, a formula in numpy
syntax (``ln`` is the natural logarithm) and a uniform range per variable.
:meth:`Problem.sample` draws the search data; :meth:`Problem.judge` scores a
formula on fresh, independently seeded points. Nothing in the code may
special-case a problem: the suite is data.

Protocol:
- every variable i.i.d. from U[low, high] with a seeded generator
  (search data: ``default_rng([seed, 0])``; judging data: ``[seed, 1]``);
- optional noise N(0, sigma * sqrt(mean(y^2))) on the target only;
- solved (exact): on 1,000 fresh points, max |f(x) - y| / max(|y|, tiny) < 1e-6,
  judged against the noise-free target; R^2 on the same points is reported.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from srh_core.errors import ConfigurationError, did_you_mean

SOLVED_TOLERANCE = 1e-6
TINY = 1e-300
DEFAULT_SAMPLES = 2_000
JUDGE_SAMPLES = 1_000
BUILTIN_SUITE = "feynman_public.json"


@dataclass(frozen=True, slots=True)
class VariableRange:
    name: str
    low: float
    high: float


@dataclass(frozen=True, slots=True)
class Judgement:
    """How a formula did on fresh points."""

    solved: bool
    max_relative_error: float
    r2: float

    def to_dict(self) -> dict[str, Any]:
        return {"solved": self.solved, "max_relative_error": _finite(self.max_relative_error),
                "r2": _finite(self.r2)}


def _finite(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None


@dataclass(frozen=True, slots=True)
class Problem:
    """One problem of a suite: ground-truth formula and variable ranges."""

    name: str
    id: str
    output: str
    formula: str
    variables: tuple[VariableRange, ...]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Problem:
        try:
            variables = tuple(VariableRange(str(v["name"]), float(v["low"]), float(v["high"]))
                              for v in data["variables"])
            return cls(name=str(data.get("name") or data["id"]), id=str(data["id"]),
                       output=str(data["output"]), formula=str(data["formula"]),
                       variables=variables)
        except (KeyError, TypeError, ValueError) as error:
            raise ConfigurationError(f"Malformed problem entry {data!r:.120}: {error!r}") from None

    @property
    def feature_names(self) -> list[str]:
        return [variable.name for variable in self.variables]

    def expression(self) -> Any:
        from srh_engine import parse

        return parse(self.formula)

    def sample_inputs(self, n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
        return {v.name: rng.uniform(v.low, v.high, size=n) for v in self.variables}

    def sample(self, n: int = DEFAULT_SAMPLES, seed: int = 0, noise: float = 0.0
               ) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """Search data: features and (optionally noisy) target."""
        rng = np.random.default_rng([seed, 0])
        X = self.sample_inputs(n, rng)
        y = np.asarray(self.expression().evaluate(X), dtype=float)
        if noise > 0:
            y = y + rng.normal(0.0, noise * np.sqrt(np.mean(y**2)), size=y.shape)
        return X, y

    def judge(self, formula: str, seed: int = 0, n: int = JUDGE_SAMPLES) -> Judgement:
        """Score ``formula`` on fresh points against the noise-free target."""
        from srh_engine import EngineError, parse

        X = self.sample_inputs(n, np.random.default_rng([seed, 1]))
        truth = np.asarray(self.expression().evaluate(X), dtype=float)
        try:
            with np.errstate(all="ignore"):
                predicted = np.broadcast_to(parse(formula).evaluate(X), truth.shape)
        except EngineError:
            return Judgement(False, float("inf"), float("-inf"))
        return _judgement(truth, np.asarray(predicted, dtype=float))


def _judgement(truth: np.ndarray, predicted: np.ndarray) -> Judgement:
    with np.errstate(all="ignore"):
        relative = np.abs(predicted - truth) / np.maximum(np.abs(truth), TINY)
        worst = float(np.max(relative)) if np.all(np.isfinite(relative)) else float("inf")
        residual = float(np.sum((truth - predicted) ** 2))
        total = float(np.sum((truth - truth.mean()) ** 2))
    r2 = 1.0 - residual / total if total > 0 and np.isfinite(residual) else float("-inf")
    return Judgement(bool(worst < SOLVED_TOLERANCE), worst, r2)


@dataclass(frozen=True, slots=True)
class Suite:
    name: str
    problems: tuple[Problem, ...]

    def names(self) -> list[str]:
        return [problem.name for problem in self.problems]

    def get(self, name: str) -> Problem:
        """Find a problem by name ("feynman-I.6.2a") or id ("I.6.2a").

        Raises:
            ConfigurationError: No problem has that name, with a suggestion.
        """
        for problem in self.problems:
            if name in (problem.name, problem.id):
                return problem
        choices = self.names() + [problem.id for problem in self.problems]
        raise ConfigurationError(f"Unknown problem {name!r} in suite {self.name!r}."
                                 f"{did_you_mean(name, choices)} `srh problems` lists them.",
                                 setting="problem")

    def select(self, names: Sequence[str] | None) -> list[Problem]:
        return list(self.problems) if not names else [self.get(name) for name in names]


def load_suite(path: str | Path | None = None) -> Suite:
    """Load a suite file; the packaged Feynman subset when ``path`` is None."""
    if path is None:
        text = resources.files(__package__).joinpath(BUILTIN_SUITE).read_text(encoding="utf-8")
    else:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as error:
            raise ConfigurationError(f"Cannot read suite file {path}: {error}") from error
    try:
        document = json.loads(text)
        problems = tuple(Problem.from_dict(entry) for entry in document["problems"])
    except (ValueError, KeyError, TypeError) as error:
        raise ConfigurationError(f"Suite file {path or BUILTIN_SUITE} is malformed: {error!r}"
                                 ) from None
    return Suite(name=str(document.get("suite", Path(str(path or BUILTIN_SUITE)).stem)),
                 problems=problems)

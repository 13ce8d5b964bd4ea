"""Built-in problem suites, kept as data, and the SRBench-style protocol.

A suite file (JSON) lists problems: an output name, a formula in numpy
syntax (``ln`` is the natural logarithm) and a uniform range per variable.
:meth:`Problem.sample` draws the search data; :meth:`Problem.judge` scores a
formula on fresh, independently seeded points. Nothing in the code may
special-case a problem: the suite is data.

Built-in suites (``load_suite(name)``): ``feynman-public`` (the default), 40
of the AI Feynman equations; ``feynman``, all 100 AI Feynman equations and
the 20 bonus ones, with every variable's quantity and SI units (SRBench's
three excluded problems carry ``excluded``); ``lsr-transform``, LLM-SRBench's
transformed Feynman problems (:mod:`.transform`, with an out-of-domain set);
``strogatz``, SRBench's 14 Strogatz ODE problems as trajectories
(:mod:`.dynamics`); ``network``, network dynamics on random graphs
(:mod:`.network`). ``scripts/build_benchmark_suites.py`` writes the Feynman
and LSR-Transform files from their public sources. An entry's ``kind``
(``"formula"`` default, ``"ode"``, ``"network"``, ``"transform"``) picks its
class; every class has the same interface
(``name``, ``id``, ``output``, ``formula``, ``feature_names``, ``sample``,
``judge``). Units: a formula or transform problem's ``si_units()`` gives the
units its suite lists, as SI text; a suite's top-level ``unit_symbols`` says
which unit names it reads differently (the Feynman files: ``{"T": "K"}``, AI
Feynman's tables writing a temperature as T). A problem name unknown to the
default suite is looked up in the other built-in suites, so ``srh run
--problem strogatz-lv1`` needs no ``--suite``.

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
from srh_core.input_limits import MAX_JSON_BYTES, read_limited_text
from srh_core.json_limits import depth_problem

SOLVED_TOLERANCE = 1e-6
#: Deepest nesting of arrays and objects in a suite file (the format needs 4).
MAX_SUITE_DEPTH = 32
TINY = 1e-300
DEFAULT_SAMPLES = 2_000
JUDGE_SAMPLES = 1_000
BUILTIN_SUITE = "feynman_public.json"
DEFAULT_SUITE = "feynman-public"
BUILTIN_SUITES = {DEFAULT_SUITE: BUILTIN_SUITE, "feynman": "feynman.json",
                  "lsr-transform": "lsr_transform.json", "strogatz": "strogatz.json",
                  "network": "network.json"}
"""Built-in suite name -> packaged file (the default first)."""


@dataclass(frozen=True, slots=True)
class VariableRange:
    name: str
    low: float
    high: float
    quantity: str | None = None
    """What the variable measures ("Velocity"), when the suite says."""
    units: str | None = None
    """Its SI units ("m^1 * s^(-1)"; "1" for dimensionless), when the suite says."""

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> VariableRange:
        return cls(str(data["name"]), float(data["low"]), float(data["high"]),
                   _optional(data.get("quantity")), _optional(data.get("units")))


def _optional(value: Any) -> str | None:
    return None if value is None else str(value)


@dataclass(frozen=True, slots=True)
class Judgement:
    """How a formula did on fresh points (and, for derivative formulas, in a rollout).

    Attributes:
        solved: Whether it meets the suite's bar.
        max_relative_error: Worst error on fresh points (pointwise relative for
            formula problems, relative to the target's scale for dynamics).
        r2: R^2 on the fresh points.
        rollout_error: Relative RMSE of the trajectory rollout (dynamics
            problems; None when not applicable or when the rollout failed).
    """

    solved: bool
    max_relative_error: float
    r2: float
    rollout_error: float | None = None

    def to_dict(self) -> dict[str, Any]:
        entry = {"solved": self.solved, "max_relative_error": _finite(self.max_relative_error),
                 "r2": _finite(self.r2)}
        if self.rollout_error is not None:
            entry["rollout_error"] = _finite(self.rollout_error)
        return entry


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
    output_units: str | None = None
    output_quantity: str | None = None
    title: str | None = None
    excluded: str | None = None
    """Why a benchmark leaves it out of its published figures (SRBench's three), else None."""
    unit_symbols: tuple[tuple[str, str], ...] = ()
    """Unit names its suite reads differently (AI Feynman's ``T`` is a temperature)."""

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Problem:
        try:
            variables = tuple(VariableRange.from_dict(v) for v in data["variables"])
            units = data.get("output_units")
            units = units if isinstance(units, Mapping) else {"units": units}
            return cls(name=str(data.get("name") or data["id"]), id=str(data["id"]),
                       output=str(data["output"]), formula=str(data["formula"]),
                       variables=variables,
                       output_units=_optional(units.get("units")),
                       output_quantity=_optional(units.get("quantity")),
                       title=_optional(data.get("title")), excluded=_optional(data.get("excluded")),
                       unit_symbols=unit_symbols(data))
        except (KeyError, TypeError, ValueError) as error:
            raise ConfigurationError(f"Malformed problem entry {data!r:.120}: {error!r}") from None

    @property
    def feature_names(self) -> list[str]:
        return [variable.name for variable in self.variables]

    def si_units(self) -> dict[str, str]:
        """The units the suite gives, as SI text by name (inputs and output); {} for none.

        Raises:
            ConfigurationError: A unit the suite gives does not parse.
        """
        given = {v.name: v.units for v in self.variables if v.units is not None}
        if self.output_units is not None:
            given[self.output] = self.output_units
        return canonical_units(given, self.unit_symbols, self.name)

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
        X = self.sample_inputs(n, np.random.default_rng([seed, 1]))
        return judged(formula, X, np.asarray(self.expression().evaluate(X), dtype=float))


def judged(formula: str, X: Mapping[str, np.ndarray], truth: np.ndarray) -> Judgement:
    """``formula`` on ``X`` against ``truth`` (unparseable: not solved, infinite error)."""
    from srh_engine import EngineError, parse

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


def unit_symbols(data: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """An entry's ``unit_symbols`` (name -> unit text) as sorted pairs."""
    symbols = data.get("unit_symbols") or {}
    return tuple(sorted((str(k), str(v)) for k, v in dict(symbols).items()))


def canonical_units(given: Mapping[str, str], symbols: tuple[tuple[str, str], ...],
                    problem: str) -> dict[str, str]:
    """Unit text by name, read with the suite's ``symbols`` and written back as SI text."""
    from srh_engine import UnitError, parse_units

    try:
        return {name: str(parse_units(text, dict(symbols))) for name, text in given.items()}
    except UnitError as error:
        raise ConfigurationError(f"Problem {problem}: {error}", setting="units") from None


def problem_from_dict(data: Mapping[str, Any]) -> Any:
    """A problem of the class its ``kind`` names (formula, ode or network)."""
    kind = data.get("kind", "formula") if isinstance(data, Mapping) else "formula"
    try:
        if kind == "ode":
            from srh_core.problems.dynamics import OdeProblem

            return OdeProblem.from_dict(data)
        if kind == "network":
            from srh_core.problems.network import NetworkProblem

            return NetworkProblem.from_dict(data)
        if kind == "transform":
            from srh_core.problems.transform import TransformProblem

            return TransformProblem.from_dict(data)
    except (KeyError, TypeError, ValueError) as error:
        raise ConfigurationError(f"Malformed {kind} problem entry {data!r:.120}: {error!r}"
                                 ) from None
    if kind != "formula":
        raise ConfigurationError(f"Unknown problem kind {kind!r}; expected formula, ode, "
                                 "network or transform.")
    return Problem.from_dict(data)


@dataclass(frozen=True, slots=True)
class Suite:
    name: str
    problems: tuple[Any, ...]
    builtin: str | None = None
    """The built-in suite's key ("feynman"...), None for a suite file."""

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
        if self.builtin is not None:
            for other in BUILTIN_SUITES:
                if other != self.builtin and (found := _builtin(other).find(name)) is not None:
                    return found
        choices = self.names() + [problem.id for problem in self.problems]
        raise ConfigurationError(f"Unknown problem {name!r} in suite {self.name!r}."
                                 f"{did_you_mean(name, choices)} `srh problems` lists them.",
                                 setting="problem")

    def find(self, name: str) -> Any:
        """The problem named ``name`` (or with that id) in this suite only, else None."""
        return next((p for p in self.problems if name in (p.name, p.id)), None)

    def select(self, names: Sequence[str] | None) -> list[Any]:
        return list(self.problems) if not names else [self.get(name) for name in names]


def _builtin(name: str) -> Suite:
    file = BUILTIN_SUITES[name]
    text = resources.files(__package__).joinpath(file).read_text(encoding="utf-8")
    suite = _parse_suite(text, file)
    return Suite(name=suite.name, problems=suite.problems, builtin=name)


def _parse_suite(text: str, origin: str) -> Suite:
    if problem := depth_problem(text, MAX_SUITE_DEPTH, f"Suite file {origin}"):
        raise ConfigurationError(problem, setting="suite")
    try:
        document = json.loads(text)
        symbols = document.get("unit_symbols")
        problems = tuple(problem_from_dict(
            {"unit_symbols": symbols, **entry} if symbols and isinstance(entry, Mapping)
            else entry) for entry in document["problems"])
    except (ValueError, KeyError, TypeError) as error:
        raise ConfigurationError(f"Suite file {origin} is malformed: {error!r}") from None
    return Suite(name=str(document.get("suite", Path(origin).stem)), problems=problems)


def load_suite(path: str | Path | None = None) -> Suite:
    """Load a suite: a JSON file, a built-in suite name, or the Feynman subset (None).

    A path that is not a file but whose name is a built-in suite's
    (``strogatz``, ``network``, ``feynman``) loads that suite, so sweep files
    may say ``suite = "strogatz"``.

    Raises:
        ConfigurationError: The file cannot be read, nests deeper than
            ``MAX_SUITE_DEPTH`` or is not a valid suite.
        InputTooLargeError: The file is larger than ``MAX_JSON_BYTES``.
    """
    if path is None:
        return _builtin(DEFAULT_SUITE)
    if str(path) in BUILTIN_SUITES or (not Path(path).is_file()
                                       and Path(path).name in BUILTIN_SUITES):
        return _builtin(Path(path).name)
    try:
        text = read_limited_text(path, "suite file", MAX_JSON_BYTES)
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigurationError(f"Cannot read suite file {path}: {error}") from error
    return _parse_suite(text, str(path))

"""The formula problem and the SRBench-style protocol it is judged by (see
:mod:`srh_core.problems`): :class:`Problem`, :class:`VariableRange`, :class:`Judgement`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from srh_core.errors import ConfigurationError
from srh_engine import EngineError, UnitError, parse, parse_units

SOLVED_TOLERANCE = 1e-6
TINY = 1e-300
DEFAULT_SAMPLES = 2_000
JUDGE_SAMPLES = 1_000


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
        """The problem of a suite entry (:meth:`check` tells whether it can be sampled).

        Raises:
            ConfigurationError: A missing or malformed field.
        """
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

    def check(self) -> None:
        """Raise ConfigurationError, naming the problem, when its formula cannot be sampled:
        it does not parse, names what is not a variable, or a range is empty."""
        try:
            names = set(self.expression().symbols())
        except EngineError as error:
            raise ConfigurationError(f"Problem {self.name}: its formula {self.formula!r} does "
                                     f"not parse: {error}") from None
        unknown = sorted(names - set(self.feature_names))
        if unknown:
            raise ConfigurationError(f"Problem {self.name}: its formula names {unknown}, which "
                                     f"are not among its variables {self.feature_names}.")
        for variable in self.variables:
            if not variable.low <= variable.high:
                raise ConfigurationError(f"Problem {self.name}: variable {variable.name} has "
                                         f"the range [{variable.low:g}, {variable.high:g}]; "
                                         "low must not exceed high.")

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
    try:
        return {name: str(parse_units(text, dict(symbols))) for name, text in given.items()}
    except UnitError as error:
        raise ConfigurationError(f"Problem {problem}: {error}", setting="units") from None

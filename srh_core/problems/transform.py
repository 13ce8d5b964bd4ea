"""LSR-Transform problems: a Feynman equation solved for one of its inputs.

A problem of kind ``"transform"`` holds the original equation ``y = f(x)``
(``source``: its formula, output and variable ranges), the variable ``xi``
it was solved for (the problem's ``output``) and the solved form
``xi = g(y, x\\i)`` (the problem's ``formula``, over ``inputs``). Data is made
the way LLM-SRBench makes it: the original variables are drawn i.i.d. from
their ranges, ``y`` is computed, and a point is kept only where ``g`` is
real, finite and gives back the drawn ``xi`` (relative error below
``AGREEMENT``), so the solved branch and the original relation agree on
every point. The target is ``g`` on the kept points.

In-domain data (search and judging) draws ``xi`` from the lower
``1 - ood_fraction`` of its range; :meth:`TransformProblem.sample_ood` draws
it from the top ``ood_fraction`` (the out-of-domain set). Seeds follow the
suite protocol: search ``[seed, 0]``, judging ``[seed, 1]``, OOD ``[seed, 5]``.
The solved forms are data, written by ``scripts/build_benchmark_suites.py``;
nothing here calls SymPy.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from srh_core.errors import ConfigurationError
from srh_core.problems.formula import (
    DEFAULT_SAMPLES,
    JUDGE_SAMPLES,
    Judgement,
    Problem,
    VariableRange,
    _optional,
    canonical_units,
    judged,
)
from srh_engine import parse

#: A point is kept when g(y, x\\i) gives back x_i to this relative error.
AGREEMENT = 1e-6
#: Most batches drawn to collect the points asked for.
MAX_BATCHES = 64
OOD_SEED = 5


@dataclass(frozen=True, slots=True)
class TransformProblem:
    """A solved form of a suite equation (see the module docstring)."""

    name: str
    id: str
    output: str
    formula: str
    source: Problem
    inputs: tuple[str, ...]
    ood_fraction: float = 0.1
    units: Mapping[str, str] | None = None
    output_units: str | None = None
    excluded: str | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TransformProblem:
        source = Problem.from_dict({"name": data["source"]["id"], **data["source"],
                                    "unit_symbols": data.get("unit_symbols")})
        inputs = tuple(str(name) for name in data["inputs"])
        known = set(source.feature_names) | {source.output}
        output = str(data["output"])
        if output not in source.feature_names or not set(inputs) <= known or output in inputs:
            raise ValueError(f"inputs {inputs} and output {output!r} are not the source's "
                             f"variables {sorted(known)}")
        fraction = float(data.get("ood_fraction", 0.1))
        if not 0 < fraction < 1:
            raise ValueError(f"ood_fraction {fraction} is not in (0, 1)")
        units = data.get("units")
        return cls(name=str(data.get("name") or data["id"]), id=str(data["id"]), output=output,
                   formula=str(data["formula"]), source=source, inputs=inputs,
                   ood_fraction=fraction,
                   units={str(k): str(v) for k, v in units.items()} if units else None,
                   output_units=_optional(data.get("output_units")),
                   excluded=_optional(data.get("excluded")))

    @property
    def feature_names(self) -> list[str]:
        return list(self.inputs)

    def si_units(self) -> dict[str, str]:
        """Units of the inputs and the solved variable, as SI text by name; {} for none."""
        given = {name: text for name, text in (self.units or {}).items()
                 if name in (*self.inputs, self.output)}
        if self.output_units is not None:
            given[self.output] = self.output_units
        return canonical_units(given, self.source.unit_symbols, self.name)

    @property
    def variables(self) -> tuple[VariableRange, ...]:
        """The inputs' ranges: a source variable's own, the source output's as sampled."""
        ranges = {v.name: v for v in self.source.variables}
        return tuple(ranges.get(name) or VariableRange(name, float("nan"), float("nan"),
                                                       self.source.output_quantity,
                                                       self.source.output_units)
                     for name in self.inputs)

    def expression(self) -> Any:
        return parse(self.formula)

    def _slice(self, ood: bool) -> tuple[float, float]:
        solved = next(v for v in self.source.variables if v.name == self.output)
        cut = solved.low + (1 - self.ood_fraction) * (solved.high - solved.low)
        return (cut, solved.high) if ood else (solved.low, cut)

    def _draw(self, n: int, rng: np.random.Generator, ood: bool
              ) -> tuple[dict[str, np.ndarray], np.ndarray, float]:
        """``n`` kept points (inputs, target) and the share of drawn points kept."""
        low, high = self._slice(ood)
        source, solved = self.source.expression(), self.expression()
        kept_X: list[dict[str, np.ndarray]] = []
        kept_y: list[np.ndarray] = []
        have = drawn = 0
        for _ in range(MAX_BATCHES):
            batch = max(n - have, 16) * 2
            values = self.source.sample_inputs(batch, rng)
            values[self.output] = rng.uniform(low, high, size=batch)
            drawn += batch
            with np.errstate(all="ignore"):
                values[self.source.output] = np.broadcast_to(
                    np.asarray(source.evaluate(values), dtype=float), (batch,))
                inputs = {name: values[name] for name in self.inputs}
                target = np.broadcast_to(np.asarray(solved.evaluate(inputs), dtype=float),
                                         (batch,))
                truth = values[self.output]
                keep = (np.isfinite(target) & np.isfinite(values[self.source.output])
                        & (np.abs(target - truth) <= AGREEMENT * np.maximum(np.abs(truth), 1.0)))
            kept_X.append({name: column[keep] for name, column in inputs.items()})
            kept_y.append(target[keep])
            have += int(keep.sum())
            if have >= n:
                break
        if have < n:
            raise ConfigurationError(
                f"Problem {self.name}: only {have} of {drawn} drawn points are valid for "
                f"the solved form; {n} were asked for.")
        X = {name: np.concatenate([part[name] for part in kept_X])[:n] for name in self.inputs}
        return X, np.concatenate(kept_y)[:n], have / drawn

    def acceptance(self, n: int = 2000, seed: int = 0) -> float:
        """The share of drawn points the solved form keeps (0 when too few are)."""
        try:
            return self._draw(n, np.random.default_rng([seed, 0]), ood=False)[2]
        except ConfigurationError:
            return 0.0

    def sample(self, n: int = DEFAULT_SAMPLES, seed: int = 0, noise: float = 0.0
               ) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """In-domain search data: inputs and (optionally noisy) target."""
        rng = np.random.default_rng([seed, 0])
        X, y, _ = self._draw(n, rng, ood=False)
        if noise > 0:
            y = y + rng.normal(0.0, noise * np.sqrt(np.mean(y**2)), size=y.shape)
        return X, y

    def sample_ood(self, n: int = JUDGE_SAMPLES, seed: int = 0
                   ) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """Out-of-domain data: the solved variable from the top of its range."""
        X, y, _ = self._draw(n, np.random.default_rng([seed, OOD_SEED]), ood=True)
        return X, y

    def judge(self, formula: str, seed: int = 0, n: int = JUDGE_SAMPLES) -> Judgement:
        """Score ``formula`` on fresh in-domain points against the noise-free target."""
        X, truth, _ = self._draw(n, np.random.default_rng([seed, 1]), ood=False)
        return judged(formula, X, truth)

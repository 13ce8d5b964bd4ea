"""ODE problems (SRBench's Strogatz set): one derivative of a 2-state system per problem.

Each problem is ``d state/dt = formula(states)`` for one state of a system
such as Lotka-Volterra; its data are trajectories of the *whole* system,
integrated with ``solve_ivp`` from seeded initial conditions:

- ``trajectories`` initial conditions drawn i.i.d. from the per-state ranges
  (search data: ``default_rng([seed, 0])``; judging data: ``[seed, 1]``), each
  integrated over ``[0, t_end]`` and sampled on an even grid;
- a trajectory that leaves the problem's ``domain`` or blows up is replaced by
  a fresh draw from the same generator (deterministic);
- features: every state and the time ``t``; target: the exact derivative of
  this problem's state at each sample (as SRBench provides), optionally with
  relative noise.

Judging (both are reported; *solved* needs both):

- fresh-point error: on fresh trajectories, ``max |f - y| / max |y|`` (the
  error relative to the derivative's scale, since derivatives cross zero),
  below ``SOLVED_TOLERANCE``;
- rollout error: the problem's state integrated with ``f`` (the other states
  observed) from each fresh initial condition, RMSE relative to the state's
  standard deviation, below ``ROLLOUT_TOLERANCE`` (a rollout that blows up
  fails).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from srh_core.context.structured import StructuredData
from srh_core.errors import ConfigurationError
from srh_core.evaluator.dynamics import (
    RolloutError,
    SystemRightHandSide,
    calc_trajectory_rollout_RMSE,
    integrate_system,
)
from srh_core.problems.formula import Judgement
from srh_engine import EngineError, parse

SOLVED_TOLERANCE = 1e-6
ROLLOUT_TOLERANCE = 1e-3
MAX_DRAWS = 100
"""Initial-condition draws per trajectory before the problem is declared unusable."""

STATE_LIMIT = 1e4
"""A generated trajectory whose state or derivative exceeds this is redrawn."""

TIME = "t"


@dataclass(frozen=True, slots=True)
class StateRange:
    name: str
    low: float
    high: float


def _ranges(entries: Any) -> tuple[StateRange, ...]:
    return tuple(StateRange(str(v["name"]), float(v["low"]), float(v["high"])) for v in entries)


@dataclass(frozen=True, slots=True)
class Trajectories:
    """Concatenated trajectories: states, times and exact derivatives."""

    states: dict[str, np.ndarray]
    times: np.ndarray
    derivatives: dict[str, np.ndarray]


@dataclass(frozen=True, slots=True)
class OdeProblem:
    """One derivative of a Strogatz system (see the module docstring)."""

    name: str
    id: str
    output: str
    state: str
    system_id: str
    system: tuple[tuple[str, str], ...]
    initial: tuple[StateRange, ...]
    domain: tuple[StateRange, ...] = ()
    t_end: float = 10.0
    trajectories: int = 4
    kind: str = "ode"

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> OdeProblem:
        """Build from a suite entry (see ``strogatz.json``)."""
        system = tuple((str(k), str(v)) for k, v in dict(data["system"]).items())
        state = str(data["state"])
        if state not in dict(system):
            raise ConfigurationError(f"Problem {data.get('id')!r}: state {state!r} is not one of "
                                     f"the system's states {[k for k, _ in system]}.")
        return cls(name=str(data.get("name") or data["id"]), id=str(data["id"]),
                   output=str(data["output"]), state=state,
                   system_id=str(data.get("system_id", data["id"])), system=system,
                   initial=_ranges(data["initial"]), domain=_ranges(data.get("domain", ())),
                   t_end=float(data.get("t_end", 10.0)),
                   trajectories=int(data.get("trajectories", 4)))

    @property
    def states(self) -> list[str]:
        return [name for name, _ in self.system]

    @property
    def formula(self) -> str:
        return dict(self.system)[self.state]

    @property
    def feature_names(self) -> list[str]:
        return [*self.states, TIME]

    def expression(self) -> Any:
        return parse(self.formula)

    # ---------------------------------------------------------------- data
    def simulate(self, n: int, rng: np.random.Generator) -> Trajectories:
        """``n`` samples over ``trajectories`` admissible trajectories."""
        formulas = {name: parse(text) for name, text in self.system}
        counts = trajectory_counts(n, self.trajectories)
        pieces = [self._trajectory(formulas, max(count, 2), rng) for count in counts if count]
        states = {s: np.concatenate([p[0][:, k] for p in pieces]) for k, s in
                  enumerate(self.states)}
        derivatives = {s: np.concatenate([p[2][:, k] for p in pieces]) for k, s in
                       enumerate(self.states)}
        return Trajectories(states, np.concatenate([p[1] for p in pieces]), derivatives)

    def _trajectory(self, formulas: dict[str, Any], count: int, rng: np.random.Generator
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return draw_trajectory(
            SystemRightHandSide(formulas, {}), np.linspace(0.0, self.t_end, count),
            lambda: np.array([rng.uniform(r.low, r.high) for r in self.initial]),
            self._admissible, f"Problem {self.name!r}", "; widen its domain or shorten t_end")

    def _admissible(self, states: np.ndarray, derivatives: np.ndarray) -> bool:
        if not (np.all(np.isfinite(derivatives)) and np.all(np.abs(derivatives) < STATE_LIMIT)):
            return False
        index = {name: k for k, name in enumerate(self.states)}
        return all(np.all((states[:, index[r.name]] >= r.low) & (states[:, index[r.name]]
                                                                  <= r.high))
                   for r in self.domain)

    def sample(self, n: int = 2000, seed: int = 0, noise: float = 0.0) -> tuple[Any, np.ndarray]:
        """Search data: states and time as features (a StructuredData naming the time and
        the derivative), this state's derivative as target."""
        rng = np.random.default_rng([seed, 0])
        data = self.simulate(n, rng)
        y = with_noise(data.derivatives[self.state], noise, rng)
        descriptions = {state: "state of the system" for state in self.states}
        return StructuredData({**data.states, TIME: data.times}, time=TIME,
                              derivatives={self.output: self.state},
                              variable_descriptions=descriptions), y

    # ------------------------------------------------------------- judging
    def judge(self, formula: str, seed: int = 0, n: int = 1000) -> Any:
        """Fresh-point error and rollout error of a derivative formula (see the module)."""
        data = self.simulate(n, np.random.default_rng([seed, 1]))
        values = {**data.states, TIME: data.times}
        return judgement(data.derivatives[self.state], _predict(formula, values, None),
                         lambda: self.rollout_error(formula, values))

    def rollout_error(self, formula: str, values: Mapping[str, np.ndarray]) -> float | None:
        """Relative rollout RMSE of this state under ``formula`` (None when it fails)."""
        return relative_rollout_error(formula, values, self.state, values[self.state])


# ------------------------------------------------ shared with network problems
def trajectory_counts(n: int, trajectories: int) -> list[int]:
    """``n`` samples split over ``trajectories`` as evenly as possible, the first ones larger."""
    return [n // trajectories + (k < n % trajectories) for k in range(trajectories)]


def draw_trajectory(rhs: Any, times: np.ndarray, draw_start: Callable[[], np.ndarray],
                    admissible: Callable[[np.ndarray, np.ndarray], bool], problem: str,
                    hint: str = "") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """States, times and exact derivatives of the first admissible trajectory.

    Args:
        rhs: The system's right-hand side.
        times: The sample times.
        draw_start: Draws an initial state (called once per attempt, before integrating).
        admissible: Whether ``(states, derivatives)`` may be used.
        problem: The problem, as the error names it.
        hint: What to change, appended to the error.

    Raises:
        ConfigurationError: No admissible trajectory in :data:`MAX_DRAWS` draws.
    """
    for _ in range(MAX_DRAWS):
        start = draw_start()
        try:
            states = integrate_system(rhs, start, times, bound=STATE_LIMIT)
        except RolloutError:
            continue
        derivatives = np.stack([rhs(0.0, row) for row in states])
        if admissible(states, derivatives):
            return states, times, derivatives
    raise ConfigurationError(f"{problem}: no admissible trajectory in {MAX_DRAWS} draws{hint}.")


def with_noise(y: np.ndarray, noise: float, rng: np.random.Generator) -> np.ndarray:
    """``y`` plus Gaussian noise of ``noise`` times its RMS (``y`` itself when 0)."""
    if noise > 0:
        return y + rng.normal(0.0, noise * np.sqrt(np.mean(y**2)), size=y.shape)
    return y


def judgement(truth: np.ndarray, predicted: np.ndarray | None,
              rollout_error: Callable[[], float | None]) -> Judgement:
    """Solved when the fresh-point error and the rollout error are both below their
    tolerances; the rollout runs only for a formula that evaluates."""
    if predicted is None:
        return Judgement(False, float("inf"), float("-inf"), None)
    worst, r2 = scale_error(truth, predicted)
    rollout = rollout_error()
    solved = worst < SOLVED_TOLERANCE and rollout is not None and rollout < ROLLOUT_TOLERANCE
    return Judgement(bool(solved), worst, r2, rollout)


def relative_rollout_error(formula: str, data: Any, state: str, observed: np.ndarray
                           ) -> float | None:
    """Rollout RMSE of ``state`` under ``formula`` over the standard deviation of its
    ``observed`` values (None when the formula or the rollout fails)."""
    try:
        rmse = calc_trajectory_rollout_RMSE(parse(formula), data, time=TIME, state=state)
    except (RolloutError, EngineError):
        return None
    return rmse / (float(np.std(observed)) or 1.0)


def _predict(formula: str, values: Mapping[str, Any], num_nodes: int | None
             ) -> np.ndarray | None:
    try:
        with np.errstate(all="ignore"):
            return np.asarray(parse(formula).evaluate(values, num_nodes=num_nodes), dtype=float)
    except EngineError:
        return None


def scale_error(truth: np.ndarray, predicted: np.ndarray) -> tuple[float, float]:
    """``max |f - y| / max |y|`` and R^2 (inf / -inf when not finite)."""
    with np.errstate(all="ignore"):
        predicted = np.broadcast_to(predicted, truth.shape)
        error = np.abs(predicted - truth)
        scale = max(float(np.max(np.abs(truth))), 1e-300)
        worst = float(np.max(error)) / scale if np.all(np.isfinite(error)) else float("inf")
        residual = float(np.sum((truth - predicted) ** 2))
        total = float(np.sum((truth - truth.mean()) ** 2))
    r2 = 1.0 - residual / total if total > 0 and np.isfinite(residual) else float("-inf")
    return worst, r2

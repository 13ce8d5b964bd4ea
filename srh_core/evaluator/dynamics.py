"""ODE rollouts: integrate a derivative formula over observed trajectories.

``integrate_ODE(f, context, time="t", state="x")`` reads ``dx/dt = f`` and
integrates it with ``scipy.integrate.solve_ivp`` from each trajectory's first
observed state, returning the state at the observed times. The state may be
one value per sample ``(n,)`` or a vector per sample ``(n, K)`` (a node field
of a graph, integrated jointly; ``num_nodes`` comes from the context). Every
other sample-aligned variable ``f`` reads (another state of a coupled system,
an input) is taken from the observations, linearly interpolated in time; so
one component of a system is rolled out with the others observed. Relation
tables and other arrays pass unchanged.

Trajectories: samples are consecutive in time; a new trajectory starts
wherever ``time`` does not increase (several trajectories may be
concatenated, as the built-in ODE problems do).

Bounded: each rollout stops with a :class:`RolloutError` when the state
leaves ``BLOWUP_FACTOR * (1 + max |observed state|)`` (a blow-up), when the
right-hand side is not finite, after ``MAX_RHS_EVALUATIONS`` evaluations, or
after ``time_limit`` seconds of wall clock.
"""

from __future__ import annotations

import time as clock
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

import srh_engine as engine
from srh_core.errors import DataError, SRHarnessError
from srh_core.evaluator.graph import engine_values

__all__ = [
    "BLOWUP_FACTOR",
    "RolloutError",
    "calc_trajectory_rollout_RMSE",
    "integrate_ODE",
    "integrate_system",
    "trajectory_segments",
]

BLOWUP_FACTOR = 1e3
"""A rollout blows up when ``|state|`` exceeds this times ``1 + max |observed|``."""

MAX_RHS_EVALUATIONS = 200_000
"""Right-hand-side evaluations allowed per trajectory."""

DEFAULT_TIME_LIMIT = 20.0
"""Wall-clock seconds allowed per call of :func:`integrate_ODE`."""

RTOL, ATOL = 1e-9, 1e-11
"""solve_ivp tolerances (relative, absolute)."""

Method = Literal["LSODA", "RK45", "DOP853", "Radau", "BDF"]
DEFAULT_METHOD: Method = "LSODA"


class RolloutError(SRHarnessError, ValueError):
    """An integration that blew up, failed or ran out of budget.

    Attributes:
        reason: ``"blow-up"``, ``"non-finite"``, ``"budget"`` or ``"solver"``.
        at_time: The integration time where it stopped, when known.
    """

    def __init__(self, message: str, *, reason: str, at_time: float | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.at_time = at_time


class _Stop(Exception):
    def __init__(self, reason: str, at_time: float, detail: str) -> None:
        super().__init__(detail)
        self.reason, self.at_time = reason, at_time


@dataclass(frozen=True, slots=True)
class _Budget:
    deadline: float
    bound: float
    max_evaluations: int


def trajectory_segments(times: np.ndarray) -> list[slice]:
    """Consecutive runs of increasing ``times``: one slice per trajectory."""
    if times.size == 0:
        return []
    breaks = np.flatnonzero(np.diff(times) <= 0) + 1
    edges = [0, *breaks.tolist(), times.size]
    return [slice(a, b) for a, b in zip(edges[:-1], edges[1:], strict=True)]


def integrate_system(rhs: Callable[[float, np.ndarray], np.ndarray], initial: Any,
                     times: np.ndarray, *, bound: float = np.inf,
                     time_limit: float = DEFAULT_TIME_LIMIT,
                     max_evaluations: int = MAX_RHS_EVALUATIONS,
                     method: Method = DEFAULT_METHOD) -> np.ndarray:
    """Integrate ``dy/dt = rhs(t, y)`` from ``initial`` at ``times[0]``; values at ``times``.

    Returns:
        ``(len(times), len(initial))`` states.

    Raises:
        RolloutError: Blow-up beyond ``bound``, a non-finite right-hand side,
            the evaluation or wall-clock budget, or a solver failure.
    """
    from scipy.integrate import solve_ivp

    start = np.atleast_1d(np.asarray(initial, dtype=np.float64))
    times = np.asarray(times, dtype=np.float64)
    if times.size == 1:
        return start[None, :].copy()
    budget = _Budget(clock.monotonic() + time_limit, bound, max_evaluations)
    counter = [0]

    def fun(t: float, y: np.ndarray) -> np.ndarray:
        counter[0] += 1
        if counter[0] > budget.max_evaluations or clock.monotonic() > budget.deadline:
            raise _Stop("budget", t, f"the rollout ran out of budget at t={t:.6g} "
                        f"({counter[0]} right-hand-side evaluations)")
        if not np.all(np.abs(y) <= budget.bound):
            raise _Stop("blow-up", t, f"the state left |x| <= {budget.bound:.3g} at t={t:.6g}")
        value = np.asarray(rhs(t, y), dtype=np.float64).reshape(-1)
        if not np.all(np.isfinite(value)):
            raise _Stop("non-finite", t, f"the right-hand side is not finite at t={t:.6g}")
        return value

    try:
        with np.errstate(all="ignore"):
            solution = solve_ivp(fun, (times[0], times[-1]), start, method=method,
                                 t_eval=times, rtol=RTOL, atol=ATOL)
    except _Stop as stop:
        raise RolloutError(str(stop), reason=stop.reason, at_time=stop.at_time) from None
    if solution.status != 0 or solution.y.shape[1] != times.size:
        raise RolloutError(f"the solver stopped: {solution.message}", reason="solver")
    states = solution.y.T
    if not np.all(np.abs(states) <= bound):
        raise RolloutError(f"the state left |x| <= {bound:.3g}", reason="blow-up")
    return states


def _data_and_nodes(context: Any) -> tuple[Mapping[str, Any], int | None, Any]:
    if isinstance(context, Mapping):
        return context, None, None
    return context.data, getattr(context, "num_nodes", None), context


def _column(data: Mapping[str, Any], name: str, what: str) -> np.ndarray:
    if name not in data:
        raise DataError(f"The {what} variable {name!r} is not in the data; available: "
                        f"{sorted(data)}.", variable=name)
    return np.asarray(data[name], dtype=np.float64)


def _interpolated(values: np.ndarray, times: np.ndarray, at: float) -> np.ndarray:
    """Observed values ``(m, ...)`` at time ``at`` (linear between samples)."""
    if times.size == 1:
        return values[0]
    k = int(np.clip(np.searchsorted(times, at, side="right") - 1, 0, times.size - 2))
    weight = (at - times[k]) / (times[k + 1] - times[k])
    return values[k] * (1.0 - weight) + values[k + 1] * weight


class _RightHandSide:
    """``f`` as ``rhs(t, y)`` for one trajectory, reusing one engine environment."""

    def __init__(self, f: engine.Expression, state: str, time: str, values: Mapping[str, Any],
                 aligned: Sequence[str], segment: slice, state_shape: tuple[int, ...],
                 num_nodes: int | None) -> None:
        from srh_engine.evaluation import Env

        self.f, self.state, self.time, self.state_shape = f, state, time, state_shape
        self.times = np.asarray(values[time], dtype=np.float64).reshape(-1)[segment]
        self.inputs = {name: np.asarray(values[name], dtype=np.float64)[segment]
                       for name in aligned if name not in (state, time)}
        self.fixed = {name: value for name, value in values.items()
                      if name not in aligned and name not in (state, time)}
        self.time_shape = (1,) + np.shape(values[time])[1:]
        self.env = Env(dict(self.fixed), {}, num_nodes=num_nodes)

    def __call__(self, t: float, y: np.ndarray) -> np.ndarray:
        from srh_engine.evaluation import evaluate_node

        current = dict(self.fixed)
        current[self.state] = y.reshape((1, *self.state_shape))
        current[self.time] = np.full(self.time_shape, t)
        for name, observed in self.inputs.items():
            current[name] = _interpolated(observed, self.times, t)[None, ...]
        self.env.values = current
        self.env.cache.clear()
        value = evaluate_node(self.f, self.env)
        return np.broadcast_to(np.asarray(value, dtype=np.float64),
                               (1, *self.state_shape)).reshape(-1)


def integrate_ODE(f: engine.Expression, context: Any, *, time: str = "t", state: str = "x",
                  time_limit: float = DEFAULT_TIME_LIMIT,
                  method: Method = DEFAULT_METHOD) -> np.ndarray:
    """Integrate ``d state/dt = f`` over the observed sample times.

    Args:
        f: Fitted derivative expression (parameters bound).
        context: An :class:`~srh_core.context.AgentContext` (or a mapping of
            arrays) holding ``time``, ``state`` and every variable ``f`` reads.
        time: Time-variable name.
        state: State-variable name.
        time_limit: Wall-clock seconds for the whole rollout.
        method: ``solve_ivp`` method.

    Returns:
        The integrated state at the observed times, shaped like the observed state.

    Raises:
        DataError: ``time`` or ``state`` is missing or misaligned.
        RolloutError: The rollout blew up, was not finite, or ran out of budget.
    """
    data, num_nodes, source = _data_and_nodes(context)
    times = _column(data, time, "time").reshape(-1)
    observed = _column(data, state, "state")
    if observed.shape[0] != times.size:
        raise DataError(f"The state {state!r} has {observed.shape[0]} samples; the time "
                        f"{time!r} has {times.size}.", variable=state)
    f = engine.desugar(f)
    values = engine_values(f, {name: data[name] for name in engine.symbols(f) if name in data}
                           | {state: data[state], time: data[time]}, source)
    aligned = [name for name, value in values.items()
               if np.ndim(getattr(value, "values", value)) >= 1
               and np.shape(getattr(value, "values", value))[0] == times.size]
    bound = BLOWUP_FACTOR * (1.0 + float(np.nanmax(np.abs(observed), initial=0.0)))
    deadline = clock.monotonic() + time_limit
    pieces = []
    for segment in trajectory_segments(times):
        rhs = _RightHandSide(f, state, time, values, aligned, segment, observed.shape[1:],
                             num_nodes)
        remaining = max(deadline - clock.monotonic(), 0.0)
        states = integrate_system(rhs, observed[segment][0].reshape(-1), times[segment],
                                  bound=bound, time_limit=remaining, method=method)
        pieces.append(states.reshape((-1, *observed.shape[1:])))
    return np.concatenate(pieces, axis=0) if pieces else observed.copy()


def calc_trajectory_rollout_RMSE(f: engine.Expression, context: Any, *, time: str = "t",
                                 state: str = "x",
                                 time_limit: float = DEFAULT_TIME_LIMIT) -> float:
    """RMSE between the observed state and its rollout under ``d state/dt = f``.

    Args:
        f: Fitted derivative expression.
        context: Context (or mapping) with time, state and the inputs of ``f``.
        time: Time-variable name.
        state: State-variable name.
        time_limit: Wall-clock seconds for the rollout.

    Returns:
        The RMSE over every observed sample (and node).

    Raises:
        RolloutError: The rollout blew up, was not finite, or ran out of budget.
    """
    data = context if isinstance(context, Mapping) else context.data
    rolled = integrate_ODE(f, context, time=time, state=state, time_limit=time_limit)
    error = rolled - np.asarray(data[state], dtype=np.float64)
    return float(np.sqrt(np.mean(np.square(error))))

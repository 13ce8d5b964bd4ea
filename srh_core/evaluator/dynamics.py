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
from srh_core.evaluator.splits import row_aligned_names
from srh_engine.evaluation import Env, evaluate_node

__all__ = [
    "BLOWUP_FACTOR",
    "RolloutError",
    "SystemRightHandSide",
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
                     method: Method = DEFAULT_METHOD, rtol: float = RTOL,
                     atol: float = ATOL) -> np.ndarray:
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
                                 t_eval=times, rtol=rtol, atol=atol)
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


def _splines(observed: Mapping[str, np.ndarray], times: np.ndarray) -> Any:
    """Cubic interpolants ``t -> (S, ...)`` of observed inputs ``(m, S, ...)``, or None."""
    if not observed:
        return None
    from scipy.interpolate import CubicSpline, interp1d

    names = list(observed)
    stacked = np.concatenate([observed[n].reshape(times.size, -1) for n in names], axis=1)
    curve = CubicSpline(times, stacked, axis=0) if times.size >= 4 else \
        interp1d(times, stacked, axis=0, fill_value="extrapolate")
    widths = [int(np.prod(observed[n].shape[1:])) for n in names]
    shapes = [observed[n].shape[1:] for n in names]

    def at(t: float) -> dict[str, np.ndarray]:
        row = curve(t)
        parts, offset = {}, 0
        for name, width, shape in zip(names, widths, shapes, strict=True):
            parts[name] = row[offset:offset + width].reshape(shape)
            offset += width
        return parts

    return at


def _sample_aligned(values: Mapping[str, Any], context: Any, n: int) -> list[str]:
    """Names interpolated in time: the context's sample variables, else arrays of n rows."""
    if context is not None:
        return [name for name in row_aligned_names(context) if name in values]
    return [name for name, value in values.items()
            if np.ndim(getattr(value, "values", value)) >= 1
            and np.shape(getattr(value, "values", value))[0] == n]


class _RightHandSide:
    """``f`` as ``rhs(t, y)`` for trajectories sharing one time grid, integrated jointly.

    The state ``y`` holds the ``S`` trajectories' states; observed inputs are
    cubic splines in time; one engine environment is reused for every call.
    """

    def __init__(self, f: engine.Expression, state: str, time: str, values: Mapping[str, Any],
                 aligned: Sequence[str], segments: Sequence[slice],
                 state_shape: tuple[int, ...], num_nodes: int | None) -> None:
        self.f, self.state, self.time = f, state, time
        self.shape = (len(segments), *state_shape)
        self.times = np.asarray(values[time], dtype=np.float64).reshape(-1)[segments[0]]
        inputs = {name: np.stack([np.asarray(values[name], dtype=np.float64)[segment]
                                  for segment in segments], axis=1)
                  for name in aligned if name not in (state, time)}
        self.inputs = _splines(inputs, self.times)
        self.fixed = {name: value for name, value in values.items()
                      if name not in aligned and name not in (state, time)}
        self.time_shape = (len(segments), *np.shape(values[time])[1:])
        self.env = Env(dict(self.fixed), {}, num_nodes=num_nodes)

    def __call__(self, t: float, y: np.ndarray) -> np.ndarray:
        current = dict(self.fixed)
        current[self.state] = y.reshape(self.shape)
        current[self.time] = np.full(self.time_shape, t)
        if self.inputs is not None:
            current.update(self.inputs(t))
        self.env.values = current
        self.env.cache.clear()
        value = evaluate_node(self.f, self.env)
        return np.broadcast_to(np.asarray(value, dtype=np.float64), self.shape).reshape(-1)


def _groups(segments: list[slice], times: np.ndarray) -> list[list[slice]]:
    """Segments with identical time grids, integrated together."""
    groups: list[list[slice]] = []
    for segment in segments:
        for group in groups:
            if np.array_equal(times[group[0]], times[segment]):
                group.append(segment)
                break
        else:
            groups.append([segment])
    return groups


class SystemRightHandSide:
    """``rhs(t, y)`` of ``d state_k/dt = formula_k`` for several states (no observed inputs).

    Args:
        formulas: State name -> derivative expression, in the order of ``y``.
        fixed: Arrays that do not change (relation tables, node constants ``(1, N)``).
        state_shape: Shape of one state value: ``()`` for scalars, ``(N,)`` for a node field.
        num_nodes: For indexed formulas.
        time: Name under which the formulas read the time, if they may.
    """

    def __init__(self, formulas: Mapping[str, engine.Expression], fixed: Mapping[str, Any],
                 state_shape: tuple[int, ...] = (), num_nodes: int | None = None,
                 time: str | None = None) -> None:
        self.formulas = {name: engine.desugar(f) for name, f in formulas.items()}
        self.fixed, self.state_shape, self.time = dict(fixed), state_shape, time
        self.size = int(np.prod(state_shape)) if state_shape else 1
        self.envs = {name: Env(dict(fixed), {}, num_nodes=num_nodes) for name in formulas}

    def __call__(self, t: float, y: np.ndarray) -> np.ndarray:
        states = y.reshape(len(self.formulas), self.size)
        current = dict(self.fixed)
        for k, name in enumerate(self.formulas):
            current[name] = states[k].reshape((1, *self.state_shape))
        if self.time is not None:
            current[self.time] = np.full((1, 1) if self.state_shape else (1,), t)
        parts = []
        for name, f in self.formulas.items():
            env = self.envs[name]
            env.values = current
            env.cache.clear()
            value = evaluate_node(f, env)
            parts.append(np.broadcast_to(np.asarray(value, dtype=np.float64),
                                         (1, *self.state_shape)).reshape(-1))
        return np.concatenate(parts)


def integrate_ODE(f: engine.Expression, context: Any, *, time: str = "t", state: str = "x",
                  time_limit: float = DEFAULT_TIME_LIMIT, method: Method = DEFAULT_METHOD,
                  rtol: float = RTOL, atol: float = ATOL) -> np.ndarray:
    """Integrate ``d state/dt = f`` over the observed sample times.

    Args:
        f: Fitted derivative expression (parameters bound).
        context: An :class:`~srh_core.context.AgentContext` (or a mapping of
            arrays) holding ``time``, ``state`` and every variable ``f`` reads.
        time: Time-variable name.
        state: State-variable name.
        time_limit: Wall-clock seconds for the whole rollout.
        method: ``solve_ivp`` method.
        rtol: Relative tolerance of the solver.
        atol: Absolute tolerance of the solver.

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
    aligned = _sample_aligned(values, source, times.size)
    bound = BLOWUP_FACTOR * (1.0 + float(np.nanmax(np.abs(observed), initial=0.0)))
    deadline = clock.monotonic() + time_limit
    rolled = np.empty_like(observed)
    for group in _groups(trajectory_segments(times), times):
        rhs = _RightHandSide(f, state, time, values, aligned, group, observed.shape[1:],
                             num_nodes)
        start = np.stack([observed[segment][0] for segment in group])
        remaining = max(deadline - clock.monotonic(), 0.0)
        states = integrate_system(rhs, start.reshape(-1), times[group[0]], bound=bound,
                                  time_limit=remaining, method=method, rtol=rtol, atol=atol)
        states = states.reshape((len(states), *start.shape))
        for k, segment in enumerate(group):
            rolled[segment] = states[:, k]
    return rolled


def calc_trajectory_rollout_RMSE(f: engine.Expression, context: Any, *, time: str = "t",
                                 state: str = "x", time_limit: float = DEFAULT_TIME_LIMIT,
                                 rtol: float = RTOL, atol: float = ATOL) -> float:
    """RMSE between the observed state and its rollout under ``d state/dt = f``.

    Args:
        f: Fitted derivative expression.
        context: Context (or mapping) with time, state and the inputs of ``f``.
        time: Time-variable name.
        state: State-variable name.
        time_limit: Wall-clock seconds for the rollout.
        rtol: Relative tolerance of the solver.
        atol: Absolute tolerance of the solver.

    Returns:
        The RMSE over every observed sample (and node).

    Raises:
        RolloutError: The rollout blew up, was not finite, or ran out of budget.
    """
    data = context if isinstance(context, Mapping) else context.data
    rolled = integrate_ODE(f, context, time=time, state=state, time_limit=time_limit,
                           rtol=rtol, atol=atol)
    error = rolled - np.asarray(data[state], dtype=np.float64)
    return float(np.sqrt(np.mean(np.square(error))))

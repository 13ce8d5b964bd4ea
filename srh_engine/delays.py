"""``delay(value, delta)``: the value at ``t - delta``, by linear interpolation.

The default resolver interpolates along the leading axis of ``value`` on the
sample times (``time=``, else ``0, 1, 2, ...``), which must be strictly
increasing (one trajectory; for several, pass a ``delay_resolver``). ``delta``
is a scalar or one value per time sample (``(T,)`` or ``(T, 1)``). Times
before the first sample or after the last give nan. A scalar ``value`` has no
history and is returned as is.

A custom ``delay_resolver(value, delta, time)`` returns the delayed array; the
Jacobian then assumes it is linear in ``value`` (any interpolation is) and
differentiates it in ``delta`` by central differences.

Vectorised: one ``searchsorted`` for all query times, then one gather of the
two neighbouring rows; no loop over samples or columns.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .errors import EvaluationError

__all__ = ["DelayResolver", "delayed", "delay_slope", "sample_times"]

DelayResolver = Callable[[Any, Any, Any], Any]

DELTA_STEP = 1e-6
"""Relative step of the central difference in ``delta`` (custom resolvers only)."""


def sample_times(time: Any, length: int) -> np.ndarray:
    """The sample times for a history of ``length`` rows (checked)."""
    if time is None:
        return np.arange(length, dtype=np.float64)
    times = np.asarray(time, dtype=np.float64).reshape(-1)
    if times.size != length:
        raise EvaluationError(f"time has {times.size} entries; the delayed value has {length} "
                              "samples along its leading axis", reason="shape mismatch")
    if length > 1 and not bool(np.all(np.diff(times) > 0)):
        raise EvaluationError("time must be strictly increasing for delay(); for several "
                              "trajectories pass a delay_resolver", reason="bad time")
    return times


def _query(times: np.ndarray, delta: Any) -> np.ndarray:
    lag = np.asarray(delta, dtype=np.float64)
    if lag.ndim and lag.size not in (1, times.size):
        raise EvaluationError(f"delay() delta must be a scalar or one value per time sample "
                              f"({times.size}); got shape {lag.shape}", reason="shape mismatch")
    return times - (lag.reshape(-1) if lag.ndim else lag)


def _neighbours(times: np.ndarray, query: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Left neighbour, interpolation weight and validity of each query time."""
    left = np.searchsorted(times, query, side="right") - 1
    valid = (left >= 0) & (query <= times[-1])
    left = np.clip(left, 0, max(times.size - 2, 0))
    if times.size == 1:
        return left, np.zeros(query.shape), valid & (query == times[0])
    span = times[left + 1] - times[left]
    return left, (query - times[left]) / span, valid


def _shaped(vector: np.ndarray, ndim: int) -> np.ndarray:
    return vector.reshape(vector.shape + (1,) * (ndim - 1))


def delayed(value: Any, delta: Any, time: Any) -> Any:
    """``value`` at ``time - delta`` by linear interpolation along axis 0 (nan outside)."""
    array = np.asarray(value, dtype=np.float64)
    if array.ndim == 0:
        return value
    times = sample_times(time, array.shape[0])
    query = np.broadcast_to(_query(times, delta), times.shape)
    left, weight, valid = _neighbours(times, query)
    right = np.minimum(left + 1, array.shape[0] - 1)
    weight = _shaped(weight, array.ndim)
    result = array[left] * (1.0 - weight) + array[right] * weight
    result[~valid] = np.nan
    return result


def delay_slope(value: Any, delta: Any, time: Any) -> Any:
    """d delayed(value, delta) / d delta: minus the interpolant's slope at ``t - delta``."""
    array = np.asarray(value, dtype=np.float64)
    if array.ndim == 0 or array.shape[0] < 2:
        return np.zeros(np.shape(array))
    times = sample_times(time, array.shape[0])
    query = np.broadcast_to(_query(times, delta), times.shape)
    left, _, valid = _neighbours(times, query)
    slope = (array[left + 1] - array[left]) / _shaped(times[left + 1] - times[left], array.ndim)
    slope[~valid] = np.nan
    return -slope


def resolve(value: Any, delta: Any, time: Any, resolver: DelayResolver | None) -> Any:
    """Delayed values through ``resolver`` (or the default interpolation)."""
    if resolver is None:
        return delayed(value, delta, time)
    return np.asarray(resolver(value, delta, time), dtype=np.float64)


def resolver_slope(value: Any, delta: Any, time: Any, resolver: DelayResolver | None) -> Any:
    """d/d delta of the resolved delay (central difference for a custom resolver)."""
    if resolver is None:
        return delay_slope(value, delta, time)
    lag = np.asarray(delta, dtype=np.float64)
    step = DELTA_STEP * np.maximum(np.abs(lag), 1.0)
    upper = np.asarray(resolver(value, lag + step, time), dtype=np.float64)
    lower = np.asarray(resolver(value, lag - step, time), dtype=np.float64)
    denominator = 2.0 * step
    if denominator.ndim:
        denominator = _shaped(denominator.reshape(-1), upper.ndim)
    return (upper - lower) / denominator

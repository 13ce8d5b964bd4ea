"""Numerical time derivatives of observed trajectories.

Samples are consecutive in time; a new trajectory starts wherever the time
does not increase (as :func:`srh_core.evaluator.dynamics.trajectory_segments`
reads them). Each trajectory is differentiated on its own, along the sample
axis, so node fields ``(n, N)`` get one derivative per node:

- ``finite_difference``: second-order central differences on the (possibly
  uneven) sample times, one-sided second-order at the ends (``np.gradient``);
  exact for quadratics, noise is amplified by 1/dt;
- ``smoothing_spline``: a cubic smoothing spline per trajectory
  (``scipy.interpolate.make_smoothing_spline``, the penalty chosen by
  generalised cross-validation), differentiated analytically; use it for noisy
  observations.

Trajectories too short for the method (fewer than 3, resp. 5, samples) give nan.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from srh_core.evaluator.dynamics import trajectory_segments

__all__ = ["Differentiation", "MIN_POINTS", "time_derivative"]

Differentiation = Literal["finite_difference", "smoothing_spline"]
MIN_POINTS: dict[str, int] = {"finite_difference": 3, "smoothing_spline": 5}


def time_derivative(values: np.ndarray, times: np.ndarray,
                    method: Differentiation = "finite_difference") -> np.ndarray:
    """d values / d time along axis 0, trajectory by trajectory.

    Args:
        values: Observed states ``(n, ...)``.
        times: Sample times ``(n,)`` (or ``(n, 1)``).
        method: ``"finite_difference"`` or ``"smoothing_spline"``.

    Returns:
        The derivative, shaped like ``values`` (nan on too-short trajectories).
    """
    times = np.asarray(times, dtype=np.float64).reshape(-1)
    values = np.asarray(values, dtype=np.float64)
    result = np.full(values.shape, np.nan)
    for segment in trajectory_segments(times):
        t, x = times[segment], values[segment]
        if t.size < MIN_POINTS[method]:
            continue
        if method == "finite_difference":
            result[segment] = np.gradient(x, t, axis=0, edge_order=2)
        else:
            from scipy.interpolate import make_smoothing_spline

            result[segment] = make_smoothing_spline(t, x, axis=0).derivative()(t)
    return result

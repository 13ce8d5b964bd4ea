"""One optimiser run on a :class:`~srh_engine.problem.LeastSquaresProblem`.

Three families, one table:

* ``lm``: MINPACK Levenberg-Marquardt through ``scipy.optimize.leastsq``
  with the analytic Jacobian. Same algorithm as ``least_squares(method="lm")``
  but about half the Python overhead per iteration, which dominates small fits.
* ``trf`` / ``dogbox``: ``scipy.optimize.least_squares`` with the analytic
  Jacobian (these also work with fewer rows than unknowns).
* ``BFGS``, ``L-BFGS-B``, ... : ``scipy.optimize.minimize`` on the MSE, with
  its analytic gradient unless the method is gradient-free.

SciPy is imported on first use.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import FitError
from .problem import LeastSquaresProblem

__all__ = [
    "GRADIENT_FREE_METHODS",
    "LEAST_SQUARES_METHODS",
    "MINIMIZE_METHODS",
    "Run",
    "run_optimizer",
]

LEAST_SQUARES_METHODS = ("lm", "trf", "dogbox")
MINIMIZE_METHODS = ("BFGS", "L-BFGS-B", "CG", "Nelder-Mead", "Powell", "TNC", "SLSQP")
GRADIENT_FREE_METHODS = ("Nelder-Mead", "Powell")

TOLERANCES = {"ftol": 1e-10, "xtol": 1e-10, "gtol": 1e-10}
"""Default convergence tolerances of the least-squares methods."""

LM_OPTIONS = frozenset({"ftol", "xtol", "gtol", "maxfev", "max_nfev", "epsfcn", "factor", "diag"})
_LM_SUCCESS = frozenset({1, 2, 3, 4})


@dataclass(frozen=True, slots=True)
class Run:
    """Outcome of one optimiser run.

    Attributes:
        theta: Final values.
        loss: Objective (penalised MSE on the fitted rows) at ``theta``.
        success: Whether the optimiser reported convergence.
        message: The optimiser's message.
        n_evaluations: Function evaluations used.
    """

    theta: np.ndarray
    loss: float
    success: bool
    message: str
    n_evaluations: int


def _finish(problem: LeastSquaresProblem, theta: Any, success: bool, message: Any,
            evaluations: Any) -> Run:
    theta = np.asarray(theta, dtype=np.float64).reshape(-1)
    return Run(theta, problem.objective(theta), bool(success), str(message), int(evaluations))


def _lm_options(options: Mapping[str, Any], budget: int | None) -> dict[str, Any]:
    unknown = sorted(set(options) - LM_OPTIONS)
    if unknown:
        raise FitError(f"unknown option(s) {unknown} for method 'lm'; allowed: "
                       f"{', '.join(sorted(LM_OPTIONS))}, restarts, seed", field="options")
    renamed = {("maxfev" if key == "max_nfev" else key): value for key, value in options.items()}
    limits = {} if budget is None else {"maxfev": budget}
    return {**TOLERANCES, **limits, **renamed}


def _run_lm(problem: LeastSquaresProblem, start: np.ndarray, method: str,
            options: Mapping[str, Any], budget: int | None) -> Run:
    from scipy.optimize import leastsq

    theta, _, info, message, status = leastsq(
        problem.residuals, start, Dfun=problem.jacobian_t, col_deriv=True, full_output=True,
        **_lm_options(options, budget))
    return _finish(problem, theta, status in _LM_SUCCESS, message, info["nfev"])


def _run_least_squares(problem: LeastSquaresProblem, start: np.ndarray, method: str,
                       options: Mapping[str, Any], budget: int | None) -> Run:
    from scipy.optimize import least_squares

    limits = {} if budget is None else {"max_nfev": budget}
    try:
        result = least_squares(problem.residuals, start, jac=problem.jacobian, method=method,
                               **{**TOLERANCES, **limits, **options})
    except TypeError as error:
        raise FitError(f"invalid option for method {method!r}: {error}",
                       field="options") from None
    return _finish(problem, result.x, result.success, result.message, result.nfev)


def _run_minimize(problem: LeastSquaresProblem, start: np.ndarray, method: str,
                  options: Mapping[str, Any], budget: int | None) -> Run:
    from scipy.optimize import minimize

    gradient = method not in GRADIENT_FREE_METHODS
    objective = problem.objective_and_gradient if gradient else problem.objective
    result = minimize(objective, start, jac=gradient, method=method,
                      options=dict(options) or None)
    return _finish(problem, result.x, result.success, result.message, result.nfev)


POLISH_STEPS = 4
"""Most Gauss-Newton steps of :func:`polish`."""

POLISH_RTOL = 1e-10
""":func:`polish` stops when a step lowers the loss by less than this relative amount."""


def polish(problem: LeastSquaresProblem, start: np.ndarray,
           residual: np.ndarray | None = None) -> Run | None:
    """Refine a point already near the optimum with a few Gauss-Newton steps.

    Each step solves the normal equations ``(J^T J) d = J^T r`` (a k x k system:
    no QR of the rows x k Jacobian, which dominates Levenberg-Marquardt on many
    rows) and is kept only when it lowers the loss. Returns None when a step
    fails to lower it before convergence (the caller then runs the full
    optimiser), else the converged run. ``residual``: the residuals at ``start``, when the
    caller has them already.
    """
    theta = np.asarray(start, dtype=np.float64).reshape(-1)
    if residual is None:
        residual = problem.residuals(theta)
    loss = float(residual @ residual) / residual.size
    evaluations = 1
    for _ in range(POLISH_STEPS):
        jacobian_t = problem.jacobian_t(theta)
        try:
            step = np.linalg.solve(jacobian_t @ jacobian_t.T, jacobian_t @ residual)
        except np.linalg.LinAlgError:
            return None
        trial = theta - step
        trial_residual = problem.residuals(trial)
        trial_loss = float(trial_residual @ trial_residual) / trial_residual.size
        evaluations += 1
        if not trial_loss <= loss:  # also nan
            return None
        converged = loss - trial_loss <= POLISH_RTOL * loss
        theta, residual, loss = trial, trial_residual, trial_loss
        if converged:
            return Run(theta, loss, True, "Gauss-Newton polish converged", evaluations)
    return None


Runner = Callable[[LeastSquaresProblem, np.ndarray, str, Mapping[str, Any], "int | None"], Run]

RUNNERS: dict[str, Runner] = {
    "lm": _run_lm,
    "trf": _run_least_squares,
    "dogbox": _run_least_squares,
    **{method: _run_minimize for method in MINIMIZE_METHODS},
}
"""Method name -> runner."""


def run_optimizer(problem: LeastSquaresProblem, start: np.ndarray, method: str,
                  options: Mapping[str, Any], budget: int | None = None) -> Run:
    """Run one optimisation from ``start`` (call under ``np.errstate``).

    Args:
        problem: The least-squares problem.
        start: Start values.
        method: A key of :data:`RUNNERS` (``"auto"`` already resolved).
        options: Options passed on to SciPy.
        budget: Optional cap on function evaluations (least-squares methods).

    Returns:
        The run's outcome.
    """
    return RUNNERS[method](problem, start, method, options, budget)

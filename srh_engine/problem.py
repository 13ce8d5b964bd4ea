"""The least-squares problem behind :func:`srh_engine.fit`.

Lays out every fitted value (scalar parameters first, then one entry per
category of each grouped family) in one vector ``theta``, and provides
residuals, the analytic Jacobian, and the MSE objective with its gradient.

Rows whose prediction is not finite at the start point are left out of the
fit; rows that become non-finite at a trial point get a large finite
residual (and a zero Jacobian row), so optimisers back off instead of
crashing on nan.

Weights (PySR's ``weights``, scikit-learn's ``sample_weight``): each row's
residual and Jacobian row are scaled by ``sqrt(w / mean w)``, so the loss is
the weighted MSE ``sum w r^2 / sum w``; rows of weight 0 are left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .derivative import JacobianEnv, jacobian
from .errors import FitError
from .evaluation import evaluate_node, group_labels
from .nodes import Expression, GroupedParameter, Parameter

__all__ = ["DEFAULT_INITIAL_VALUE", "GroupLayout", "LeastSquaresProblem", "PENALTY_SCALE",
           "row_weights"]

DEFAULT_INITIAL_VALUE = 1.0
"""Start value of a parameter with no initial value and no bound value."""

PENALTY_SCALE = 1e8
"""Residual given to a row whose prediction turns non-finite, times (1 + max |y|)."""


@dataclass(frozen=True, slots=True)
class GroupLayout:
    """Where one grouped family's values sit in ``theta``.

    Attributes:
        node: The grouped parameter node.
        categories: Category labels, sorted as by ``np.unique``.
        codes: Category index of each sample.
        offset: Position of the first category's value in ``theta``.
    """

    node: GroupedParameter
    categories: tuple[Any, ...]
    codes: np.ndarray
    offset: int


def _scalar_start(expression: Expression, name: str, initial: Mapping[str, Any]) -> float:
    if name in initial:
        return float(initial[name])
    for node in expression.iter_preorder():
        if isinstance(node, Parameter) and node.name == name and node.value is not None:
            return node.value
    return DEFAULT_INITIAL_VALUE


def _group_start(layout: GroupLayout, initial: Mapping[str, Any]) -> list[float]:
    node = layout.node
    given = initial.get(node.family)
    table = dict(node.value or ())
    default = node.default if node.default is not None else DEFAULT_INITIAL_VALUE
    if isinstance(given, Mapping):
        table.update(given)
    elif given is not None:
        default = float(given)
    return [float(table.get(category, default)) for category in layout.categories]


def row_weights(weights: Any, shape: tuple[int, ...]) -> np.ndarray | None:
    """``weights`` (one per row of a target of ``shape``) flattened like the target, or
    None for none.

    Raises:
        FitError: Not one finite, non-negative weight per row, or every weight 0.
    """
    if weights is None:
        return None
    array = np.asarray(weights, dtype=float)
    rows = shape[0] if shape else 1
    if array.ndim != 1 or array.size != rows:
        raise FitError(f"weights must be one number per row ({rows}); got shape "
                       f"{array.shape}", field="weights")
    if not (np.all(np.isfinite(array)) and np.all(array >= 0)) or not np.any(array > 0):
        raise FitError("weights must be finite and >= 0, and not all 0", field="weights")
    return np.broadcast_to(array.reshape((rows,) + (1,) * (len(shape) - 1)),
                           shape).reshape(-1).copy()


class LeastSquaresProblem:
    """Residuals and Jacobian of ``expression(values; theta) - target``."""

    def __init__(self, expression: Expression, values: Mapping[str, Any], target: np.ndarray,
                 initial: Mapping[str, Any], weights: np.ndarray | None = None,
                 **structure: Any) -> None:
        self.expression = expression
        self.env = JacobianEnv(values, {}, **structure)
        self.shape = target.shape
        self.target = target.reshape(-1)
        self.weights = row_weights(weights, self.shape)
        self.scale = None if self.weights is None else np.sqrt(
            self.weights / float(np.mean(self.weights[self.weights > 0])))
        self.names = list(dict.fromkeys(
            node.name for node in expression.iter_preorder() if isinstance(node, Parameter)))
        self.groups = self._layout_groups(len(self.names))
        self.size = len(self.names) + sum(len(g.categories) for g in self.groups)
        self._check_initial(initial)
        self.theta0 = np.array([_scalar_start(expression, name, initial) for name in self.names]
                               + [v for g in self.groups for v in _group_start(g, initial)])
        self.env.index = {name: column for column, name in enumerate(self.names)}
        self.penalty = PENALTY_SCALE * (1.0 + float(np.max(np.abs(self.target), initial=0.0,
                                                             where=np.isfinite(self.target))))
        self.rows = self._start_rows()

    def _layout_groups(self, offset: int) -> list[GroupLayout]:
        layouts: dict[str, GroupLayout] = {}
        for node in self.expression.iter_preorder():
            if not isinstance(node, GroupedParameter) or node.family in layouts:
                continue
            labels = group_labels(node, self.env)
            categories, codes = np.unique(labels, return_inverse=True)
            codes = codes.reshape(labels.shape)
            layouts[node.family] = GroupLayout(node, tuple(c.item() for c in categories),
                                               codes, offset)
            columns = {offset + k: (codes == k).astype(np.float64)
                       for k in range(len(categories))}
            self.env.group_columns[node] = columns
            offset += len(categories)
        return list(layouts.values())

    def _check_initial(self, initial: Mapping[str, Any]) -> None:
        known = [*self.names, *(g.node.family for g in self.groups)]
        for name in initial:
            if name not in known:
                import difflib

                close = difflib.get_close_matches(str(name), known, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise FitError(f"initial value given for unknown parameter {name!r} "
                               f"(parameters: {', '.join(known) or 'none'}){hint}",
                               field="initial")

    def _start_rows(self) -> np.ndarray | None:
        """Rows used by the fit: finite target and finite start prediction."""
        with np.errstate(all="ignore"):
            prediction = self.predictions(self.theta0)
        finite = np.isfinite(prediction) & np.isfinite(self.target)
        if self.weights is not None:
            finite &= self.weights > 0
        return None if finite.all() else np.flatnonzero(finite)

    @property
    def fitted_target(self) -> np.ndarray:
        """Target values of the rows the fit uses."""
        return self.target if self.rows is None else self.target[self.rows]

    @property
    def n_rows(self) -> int:
        """Number of rows the fit uses."""
        return self.target.size if self.rows is None else self.rows.size

    def load(self, theta: np.ndarray) -> None:
        """Put ``theta`` into the evaluation state."""
        values = theta.tolist()
        self.env.parameters = dict(zip(self.names, values, strict=False))
        for layout in self.groups:
            stop = layout.offset + len(layout.categories)
            self.env.groups[layout.node] = theta[layout.offset:stop][layout.codes]

    def predictions(self, theta: np.ndarray) -> np.ndarray:
        """Predictions on every row, flattened (call under ``np.errstate``)."""
        self.load(theta)
        value = evaluate_node(self.expression, self.env)
        if type(value) is np.ndarray and value.shape == self.shape:
            return value.reshape(-1)
        try:
            return np.broadcast_to(value, self.shape).reshape(-1)
        except ValueError:
            raise FitError(f"predictions of shape {np.shape(value)} do not match the target "
                           f"shape {self.shape}", field="target") from None

    def residuals(self, theta: np.ndarray) -> np.ndarray:
        """Prediction minus target on the fitted rows; non-finite -> penalty."""
        residual = self.predictions(theta) - self.target
        if self.scale is not None:
            residual = residual * self.scale
        if self.rows is not None:
            residual = residual[self.rows]
        if not np.isfinite(residual).all():
            residual[~np.isfinite(residual)] = self.penalty
        return residual

    def jacobian_t(self, theta: np.ndarray) -> np.ndarray:
        """Transposed Jacobian (one row per fitted value) on the fitted rows.

        Non-finite entries become 0, so a row that blew up cannot steer the step.
        """
        self.load(theta)
        _, matrix = jacobian(self.expression, self.env, self.shape, self.size)
        if self.scale is not None:
            matrix = matrix * self.scale
        if self.rows is not None:
            matrix = matrix[:, self.rows]
        if not np.isfinite(matrix).all():
            matrix[~np.isfinite(matrix)] = 0.0
        return matrix

    def jacobian(self, theta: np.ndarray) -> np.ndarray:
        """d(residuals)/d(theta) on the fitted rows, shape ``(rows, fitted values)``."""
        return self.jacobian_t(theta).T

    def objective(self, theta: np.ndarray) -> float:
        """Mean squared residual (penalised rows included)."""
        residual = self.residuals(theta)
        return float(residual @ residual) / residual.size

    def objective_and_gradient(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        """Mean squared residual and its gradient ``2 J^T r / n``."""
        residual = self.residuals(theta)
        gradient = self.jacobian_t(theta) @ residual * (2.0 / residual.size)
        return float(residual @ residual) / residual.size, gradient

    def named_values(self, theta: np.ndarray) -> dict[str, Any]:
        """``theta`` as parameter name -> float and family -> {category: float}."""
        named: dict[str, Any] = dict(zip(self.names, theta.tolist(), strict=False))
        for layout in self.groups:
            values = theta[layout.offset:layout.offset + len(layout.categories)].tolist()
            named[layout.node.family] = dict(zip(layout.categories, values, strict=True))
        return named

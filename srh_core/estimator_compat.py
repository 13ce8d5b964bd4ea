"""The scikit-learn conventions SRHarnessRegressor needs, without scikit-learn.

When scikit-learn is installed the estimator subclasses its ``BaseEstimator``
and ``RegressorMixin`` and validates input with ``validate_data``; otherwise
it uses these small stand-ins, which follow the same rules (parameters read
from the ``__init__`` signature, unknown names rejected, R^2 score, 2-D
finite float input, ``n_features_in_`` checked on predict).
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from srh_core.errors import DataError


class ParamsBase:
    """``get_params``/``set_params``/``repr`` from the ``__init__`` signature."""

    @classmethod
    def _get_param_names(cls) -> list[str]:
        signature = inspect.signature(cls.__init__)
        return sorted(name for name, parameter in signature.parameters.items()
                      if name != "self" and parameter.kind is parameter.KEYWORD_ONLY)

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self._get_param_names()}

    def set_params(self, **params: Any) -> Any:
        """Set parameters (the estimator checks their names first)."""
        for name, value in params.items():
            setattr(self, name, value)
        return self

    def __repr__(self) -> str:
        defaults = {name: parameter.default for name, parameter in
                    inspect.signature(type(self).__init__).parameters.items()}
        changed = ", ".join(f"{name}={value!r}" for name, value in self.get_params().items()
                            if value != defaults.get(name))
        return f"{type(self).__name__}({changed})"


class RegressorScoreMixin:
    """``score`` as the coefficient of determination, like scikit-learn's RegressorMixin."""

    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        truth = np.asarray(y, dtype=float).ravel()
        predicted = self.predict(X)  # type: ignore[attr-defined]
        weights = np.ones_like(truth) if sample_weight is None else np.asarray(sample_weight)
        mean = np.average(truth, weights=weights)
        total = float(np.sum(weights * (truth - mean) ** 2))
        residual = float(np.sum(weights * (truth - predicted) ** 2))
        if total == 0:
            return 1.0 if residual == 0 else 0.0
        return 1.0 - residual / total


def validate_input(estimator: Any, X: Any, y: Any = None, *, reset: bool) -> Any:
    """Check X (and y): 2-D, numeric, finite, aligned; set or check ``n_features_in_``.

    Raises:
        DataError: Any rule is broken (a ValueError, as scikit-learn would raise).
    """
    columns = getattr(X, "columns", None)
    matrix = _float_array(X, "X")
    if matrix.ndim != 2:
        raise DataError(f"Expected a 2-D X (n_samples, n_features); got shape {matrix.shape}. "
                        "Reshape a single feature with X.reshape(-1, 1).", variable="X")
    if matrix.shape[0] < 2 or matrix.shape[1] < 1:
        raise DataError(f"X needs at least 2 samples and 1 feature; got shape {matrix.shape}.",
                        variable="X")
    if reset:
        estimator.n_features_in_ = matrix.shape[1]
        if columns is not None and all(isinstance(name, str) for name in columns):
            estimator.feature_names_in_ = np.asarray(list(columns), dtype=object)
    elif matrix.shape[1] != estimator.n_features_in_:
        raise DataError(f"X has {matrix.shape[1]} features, but {type(estimator).__name__} "
                        f"is expecting {estimator.n_features_in_} features as input.",
                        variable="X")
    if y is None:
        return matrix
    vector = _float_array(y, "y").ravel()
    if len(vector) != len(matrix):
        raise DataError(f"y has {len(vector)} values but X has {len(matrix)} rows.",
                        variable="y")
    return matrix, vector


def _float_array(values: Any, name: str) -> np.ndarray:
    try:
        array = np.asarray(values.to_numpy() if hasattr(values, "to_numpy") else values,
                           dtype=float)
    except (TypeError, ValueError) as error:
        raise DataError(f"{name} must be numeric: {error}", variable=name) from None
    if not np.all(np.isfinite(array)):
        raise DataError(f"{name} contains NaN or infinity.", variable=name)
    return array

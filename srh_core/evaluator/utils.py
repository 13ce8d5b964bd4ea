"""The reference's evaluator utilities under their reference names and signatures.

Code written for ``sr_harness.evaluator.utils`` imports from here: the metric
functions (``calc_MSE`` ... ``calc_complexity``, ``regression_metrics``; edge
cases in :mod:`srh_core.evaluator.metrics`) and the split helpers
(``select_random_indices``, ``select_OOD_indices``, ``split_indices``,
``split_aligned_context``; sizes and determinism in
:mod:`srh_core.evaluator.splits`). ``chronological=True`` keeps the input
order: the first ``n_train`` samples train and the rest validate, whatever
``split_by`` says, the split a time series needs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from srh_core.context import AgentContext
from srh_core.evaluator import splits
from srh_core.evaluator.dynamics import RolloutError, calc_trajectory_rollout_RMSE, integrate_ODE
from srh_core.evaluator.metrics import (
    calc_AIC,
    calc_BIC,
    calc_complexity,
    calc_MAE,
    calc_MAPE,
    calc_MSE,
    calc_PearsonR,
    calc_R2,
    calc_RMSE,
    calc_SpearmanR,
    regression_metrics,
)
from srh_core.evaluator.splits import IndexPair, select_random_indices

__all__ = [
    "AgentContext", "RolloutError", "calc_AIC", "calc_BIC", "calc_MAE", "calc_MAPE",
    "calc_MSE", "calc_PearsonR", "calc_R2", "calc_RMSE", "calc_SpearmanR", "calc_complexity",
    "calc_trajectory_rollout_RMSE", "integrate_ODE", "regression_metrics",
    "select_OOD_indices", "select_random_indices", "split_aligned_context", "split_indices",
]


def select_OOD_indices(*, seed: int, n_samples: int, n_train: int, value: Any) -> IndexPair:
    """Select an ordered out-of-distribution split.

    Trains on the ``n_train`` lowest values of ``value`` and validates on the
    high tail; ties are broken by a seeded permutation.

    Args:
        seed: Seed used to break ties reproducibly.
        n_samples: Total sample count.
        n_train: Number of low-ranked training samples.
        value: One-dimensional ordering variable.

    Returns:
        Sorted training and validation index arrays.

    Raises:
        DataError: ``value`` is not one-dimensional with ``n_samples`` entries.
    """
    return splits.select_ood_indices(seed=seed, n_samples=n_samples, n_train=n_train,
                                     value=value)


def split_indices(context: AgentContext, *, chronological: bool = False) -> IndexPair | None:
    """Select split indices according to the context's settings.

    Args:
        context: Unsplit agent context.
        chronological: Keep the input order (first samples train, last ones
            validate) instead of the configured random or OOD split.

    Returns:
        Training and validation indices, or None when splitting is disabled
        (``validation_fraction`` 0, or too few samples).

    Raises:
        ConfigurationError: ``split_by='ood'`` without a usable ``split_ood_variable``
            (not raised when ``chronological``).
    """
    if not chronological:
        return splits.split_indices(context)
    fraction = context.settings().validation_fraction
    n_train, n_validation = splits.split_sizes(context.n_samples, fraction)
    if n_train <= 0 or n_validation <= 0:
        return None
    return np.arange(n_train), np.arange(n_train, context.n_samples)


def split_aligned_context(context: AgentContext, *, chronological: bool = False
                          ) -> dict[str, AgentContext | None]:
    """Split every sample-aligned context array along its leading dimension.

    Args:
        context: Unsplit agent context.
        chronological: Keep the input order (see :func:`split_indices`).

    Returns:
        ``{"train": view, "validation": view}``; without a split the train
        view holds every sample and validation is None.
    """
    if not chronological:
        return splits.split_aligned_context(context)
    indices = split_indices(context, chronological=True)
    if indices is None:
        return {"train": context.with_data(context.data), "validation": None}
    aligned = set(splits.row_aligned_names(context))

    def view(rows: np.ndarray) -> AgentContext:
        return context.with_data({name: value[rows] if name in aligned else value
                                  for name, value in context.data.items()})

    return {"train": view(indices[0]), "validation": view(indices[1])}


def __getattr__(name: str) -> Any:
    if name == "AgentContext":  # imported late: srh_core.context imports the evaluator

        return AgentContext
    raise AttributeError(f"module 'srh_core.evaluator.utils' has no attribute {name!r}")

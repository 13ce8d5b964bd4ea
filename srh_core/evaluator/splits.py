"""Train/validation splitting of sample-aligned contexts.

Splits are deterministic: the same data, settings and seed give the same
indices in every process (numpy's legacy ``RandomState`` stream is stable
across numpy versions and platforms). Index arrays are returned sorted, so
views keep the original sample order.

Sizes: ``n_validation = floor(n_samples * validation_fraction + 0.5)`` and
``n_train = n_samples - n_validation``; when either is 0 (fraction 0, or too
few samples) there is no split and the validation view is ``None``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from srh_core.errors import ConfigurationError, DataError, did_you_mean

if TYPE_CHECKING:
    from srh_core.context import AgentContext

IndexPair = tuple[np.ndarray, np.ndarray]


def split_sizes(n_samples: int, validation_fraction: float) -> tuple[int, int]:
    """Return ``(n_train, n_validation)`` for a sample count and fraction."""
    n_validation = math.floor(n_samples * validation_fraction + 0.5)
    return n_samples - n_validation, n_validation


def select_random_indices(*, seed: int, n_samples: int, n_train: int) -> IndexPair:
    """Select reproducible random training and validation indices.

    Args:
        seed: Random seed.
        n_samples: Total sample count.
        n_train: Number of training samples.

    Returns:
        Sorted training and validation index arrays.
    """
    order = np.random.RandomState(seed).permutation(n_samples)
    return np.sort(order[:n_train]), np.sort(order[n_train:])


def select_ood_indices(*, seed: int, n_samples: int, n_train: int, value: Any) -> IndexPair:
    """Train on the ``n_train`` lowest values of ``value``, validate on the high tail.

    Ties are broken by a seeded permutation; nan values sort last (validation).

    Args:
        seed: Seed used to break ties reproducibly.
        n_samples: Total sample count.
        n_train: Number of low-ranked training samples.
        value: One-dimensional ordering variable of length ``n_samples``.

    Returns:
        Sorted training and validation index arrays.

    Raises:
        DataError: ``value`` is not one-dimensional with ``n_samples`` entries.
    """
    value = np.asarray(value)
    if value.ndim != 1 or len(value) != n_samples:
        raise DataError(f"The OOD split variable must have shape ({n_samples},); "
                        f"got {value.shape}.")
    shuffled = np.random.RandomState(seed).permutation(n_samples)
    ordered = shuffled[np.argsort(value[shuffled], kind="stable")]
    return np.sort(ordered[:n_train]), np.sort(ordered[n_train:])


def split_indices(context: AgentContext) -> IndexPair | None:
    """Select split indices according to the context's settings.

    Args:
        context: Unsplit context with a target.

    Returns:
        Training and validation indices, or None when validation is disabled.

    Raises:
        ConfigurationError: ``split_by='ood'`` without a usable ``split_ood_variable``.
    """
    settings = context.settings()
    n_train, n_validation = split_sizes(context.n_samples, settings.validation_fraction)
    if n_train <= 0 or n_validation <= 0:
        return None
    seed = settings.split_random_state
    if settings.split_by == "random":
        return select_random_indices(seed=seed, n_samples=context.n_samples, n_train=n_train)
    value = context.data[_ood_variable(context, settings.split_ood_variable)]
    return select_ood_indices(seed=seed, n_samples=context.n_samples, n_train=n_train, value=value)


def _ood_variable(context: AgentContext, name: str | None) -> str:
    choices = context.layout.sample_names(context.data)
    if name is None:
        raise ConfigurationError(
            "split_by='ood' needs the 'split_ood_variable' setting to name the variable "
            f"ordering the split; got none. Available: {list(choices)}.",
            setting="split_ood_variable",
        )
    if name not in choices:
        raise ConfigurationError(
            f"The 'split_ood_variable' setting must name a sample variable of the data "
            f"({list(choices)}). Got {name!r} instead.{did_you_mean(name, choices)}",
            setting="split_ood_variable",
        )
    if context.data[name].ndim != 1:
        raise ConfigurationError(
            f"The 'split_ood_variable' setting must name a 1-D variable; {name!r} has shape "
            f"{context.data[name].shape}.",
            setting="split_ood_variable",
        )
    return name


def row_aligned_names(context: AgentContext) -> tuple[str, ...]:
    """Names sliced by a sample split: sample variables and the target's leading axis."""
    layout = context.layout
    names = set(layout.sample_names(context.data))
    leading = layout.variable_axes.get(context.target or "", ())[:1]
    return tuple(name for name in context.data if name in names or name in leading)


def split_aligned_context(context: AgentContext) -> dict[str, AgentContext | None]:
    """Split every sample-aligned array along its leading dimension.

    Axes other than the target's leading axis and relation arrays are shared
    unchanged by both views.

    Args:
        context: Unsplit context.

    Returns:
        ``{"train": view, "validation": view or None}``; without a split the
        train view holds all samples and validation is None.
    """
    indices = split_indices(context)
    if indices is None:
        return {"train": context.with_data(context.data), "validation": None}
    aligned = set(row_aligned_names(context))

    def view(rows: np.ndarray) -> AgentContext:
        data = {name: _rows(value, rows) if name in aligned else value
                for name, value in context.data.items()}
        return context.with_data(data)

    return {"train": view(indices[0]), "validation": view(indices[1])}


def _rows(value: np.ndarray, rows: np.ndarray) -> np.ndarray:
    sliced = value[rows]
    sliced.setflags(write=False)  # a fresh copy: with_data() can then take it without copying
    return sliced

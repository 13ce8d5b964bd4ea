"""Helpers of :class:`AgentContext`: freezing arrays, selecting and describing data."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from srh_core.context.validation import DataLayout
from srh_core.errors import DataError, did_you_mean

if TYPE_CHECKING:
    from srh_core.context.context import AgentContext


def freeze(data: Mapping[str, Any], *, copy_writeable_only: bool = False) -> dict[str, np.ndarray]:
    """Turn values into read-only arrays the caller can no longer mutate.

    Args:
        data: Values keyed by name (arrays, lists, scalars).
        copy_writeable_only: Reuse arrays that are already read-only (views of
            a context's own arrays) instead of copying them.

    Returns:
        Read-only arrays in the order of ``data``.

    Raises:
        DataError: A value cannot become a rectangular array (ragged lists).
    """
    return {name: _frozen(name, value, copy_writeable_only) for name, value in data.items()}


def _frozen(name: str, value: Any, reuse_read_only: bool) -> np.ndarray:
    if reuse_read_only and isinstance(value, np.ndarray) and not value.flags.writeable:
        return value
    try:
        array = np.array(value, copy=True)
    except (ValueError, TypeError) as exc:
        raise DataError(f"Variable {name!r} cannot be turned into a rectangular array: {exc}",
                        variable=str(name)) from exc
    array.setflags(write=False)
    return array


def make_layout(
    target: str | None,
    variable_axes: Mapping[str, Iterable[str]] | None,
    variable_structures: Mapping[str, str] | None,
    relation_names: Iterable[str] | None,
    num_nodes: int | None,
) -> DataLayout:
    """Build a DataLayout from constructor-style arguments, checking their types.

    Raises:
        DataError: ``target`` is not a string, or ``num_nodes`` is not a positive int.
    """
    if target is not None and not isinstance(target, str):
        raise DataError(f"The target must be a variable name; got {target!r}.")
    if num_nodes is not None and (
        isinstance(num_nodes, bool) or not isinstance(num_nodes, int) or num_nodes < 1
    ):
        raise DataError(f"num_nodes must be a positive int; got {num_nodes!r}.")
    return DataLayout(
        target=target,
        variable_axes={name: tuple(axes) for name, axes in (variable_axes or {}).items()},
        variable_structures=dict(variable_structures or {}),
        relation_names=frozenset(relation_names or ()),
        num_nodes=num_nodes,
    )


def restrict_layout(layout: DataLayout, names: Iterable[str]) -> DataLayout:
    """Keep the metadata of ``names`` only (the target is kept as is)."""
    kept = set(names)
    relations = layout.relation_names & kept
    return DataLayout(
        target=layout.target,
        variable_axes={n: a for n, a in layout.variable_axes.items() if n in kept},
        variable_structures={
            n: r for n, r in layout.variable_structures.items() if n in kept and r in kept
        },
        relation_names=frozenset(relations),
        num_nodes=layout.num_nodes if relations else None,
    )


def closure(layout: DataLayout, names: Iterable[str]) -> set[str]:
    """Return ``names`` plus the axes and relations they depend on."""
    kept = set(names)
    for name in list(kept):
        kept.update(layout.variable_axes.get(name, ()))
        if name in layout.variable_structures:
            relation = layout.variable_structures[name]
            kept.add(relation)
            kept.update(layout.variable_axes.get(relation, ()))
    return kept


def require_known(names: Iterable[str], known: Iterable[str]) -> None:
    """Raise a DataError naming the first of ``names`` that is not in ``known``."""
    choices = list(known)
    for name in names:
        if name not in choices:
            raise DataError(f"Unknown variable {name!r}; available: {choices}."
                            f"{did_you_mean(str(name), choices)}", variable=str(name))


def select_columns(data: Mapping[str, Any], target: str, features: list[str] | None) -> list[str]:
    """Return the kept column names: features (given order, or data order), then target.

    Raises:
        DataError: The target or a feature is not a column of ``data``.
    """
    require_known([target], data)
    if features is None:
        features = [name for name in data if name != target]
    require_known(features, data)
    return list(dict.fromkeys([*(f for f in features if f != target), target]))


def check_new_features(features: Mapping[str, Any], target: str, reserved: set[str]) -> None:
    """Reject new features named like the target, an axis or a relation."""
    if not features:
        raise DataError("add_features() needs at least one feature; got none.")
    for name in features:
        if name == target:
            raise DataError(f"Feature {name!r} would replace the target; choose another name.",
                            variable=name)
        if name in reserved:
            raise DataError(f"Feature {name!r} is named like an axis or relation of the data; "
                            "choose another name.", variable=name)


def describe(context: AgentContext) -> dict[str, Any]:
    """Build the (not yet JSON-converted) schema of a context."""
    layout, data = context.layout, context.data
    return {
        "revision": context.revision,
        "target": context.target,
        "features": list(context.feature_names()),
        "n_samples": context.n_samples,
        "variables": {name: _describe_variable(context, name) for name in context.variable_names()},
        "axes": {name: {"size": int(data[name].shape[0]), "dtype": str(data[name].dtype),
                        "description": context.variable_descriptions.get(name, "")}
                 for name in context.axis_names()},
        "relation_names": sorted(layout.relation_names),
        "num_nodes": layout.num_nodes,
        "settings": context.settings().to_dict(),
    }


def _describe_variable(context: AgentContext, name: str) -> dict[str, Any]:
    value = context.data[name]
    layout = context.layout
    role = ("target" if name == context.target else
            "relation" if name in layout.relation_names else "feature")
    entry = {
        "role": role,
        "shape": list(value.shape),
        "dtype": str(value.dtype),
        "axes": list(layout.variable_axes.get(name, ())),
        "description": context.variable_descriptions.get(name, ""),
        "n_missing": int(np.isnan(value).sum()) if value.dtype.kind == "f" else 0,
    }
    if name in layout.variable_structures:
        entry["structure"] = layout.variable_structures[name]
    units = context.variable_units.get(name)
    if units is not None:
        entry["units"] = units
    return entry

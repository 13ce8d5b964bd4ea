"""The one authoritative context of a run: data, metadata, settings, evaluator.

Tools read everything numeric from here, never from model arguments:

- ``context.data``: read-only mapping of read-only arrays (all variables and axes);
- ``context.target`` and ``context.feature_names()``;
- ``context.train_split`` / ``context.validation_split``: cached views made by
  ``evaluator.split(context)``; ``validation_split`` is ``None`` when
  validation is disabled (``validation_fraction == 0`` or too few samples),
  never an empty view, so "validation metrics exist" means "a validation split
  exists" everywhere;
- ``context.revision``: an int bumped by every data change; split caches (and
  any cache a tool keeps) are keyed on it.

Data changes go through the ``commit_*`` methods, which validate first (see
:mod:`srh_core.context.validation` for the data policy) and raise
:class:`~srh_core.errors.DataError` naming the offending variable, leaving the
context untouched on failure.
"""

from __future__ import annotations

import argparse
import threading
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, cast

import numpy as np

from srh_core.context import selection
from srh_core.context.commits import DataCommits
from srh_core.context.payload import (
    ContextPayload,
    check_arrays,
    context_to_payload,
    restore_evaluator,
)
from srh_core.context.settings import ContextSettings, resolve_context_settings
from srh_core.context.validation import (
    DataLayout,
    check_context_data,
    check_weights,
    raise_first,
)
from srh_core.errors import ConfigurationError, DataError
from srh_core.evaluator.default import DefaultEvaluator
from srh_core.types import json_value

SPLIT_NAMES = ("train", "validation")


class AgentContext(DataCommits):
    """Data arrays, their metadata, runtime settings, evaluator and workspace.

    Args:
        args: Runtime settings (Namespace, settings object or mapping) shared by
            agents, evaluators and tools; read with ``getattr`` and never mutated.
        data: Arrays keyed by variable or axis name (copied, then frozen).
        target: Name of the target variable.
        variable_descriptions: Human-readable descriptions keyed by name.
        variable_units: Units keyed by name (unit text, e.g. "m/s"); the ``units``
            setting of ``args`` adds to them (and wins).
        variable_axes: Axis names of each variable (manifest-backed data).
        variable_structures: Relation used by each structured variable.
        relation_names: Names of graph or hypergraph relation arrays.
        num_nodes: Number of nodes of graph or hypergraph data.
        evaluator: Evaluator instance or class; defaults to ``DefaultEvaluator()``.
        workspace: Workspace path, or an object exposing a ``path`` attribute.

    Raises:
        DataError: The data violates the data policy (the error names the variable).
        ConfigurationError: ``args`` carries an invalid split or fit setting.
    """

    def __init__(
        self,
        *,
        args: Any = None,
        data: Mapping[str, Any] | None = None,
        target: str | None = None,
        variable_descriptions: Mapping[str, str] | None = None,
        variable_units: Mapping[str, str] | None = None,
        variable_axes: Mapping[str, tuple[str, ...]] | None = None,
        variable_structures: Mapping[str, str] | None = None,
        relation_names: set[str] | None = None,
        num_nodes: int | None = None,
        evaluator: Any = None,
        workspace: str | Path | Any | None = None,
    ) -> None:
        self.args = args if args is not None else argparse.Namespace()
        self.settings()  # fail at construction, not at the first split, on bad settings
        self.evaluator = evaluator if evaluator is not None else _default_evaluator()
        self.workspace = workspace if workspace is not None else _args_value(args, "workspace")
        self._lock = threading.RLock()
        self._split_cache: tuple[int, dict[str, AgentContext | None]] | None = None
        self._revision = 0
        self._data: dict[str, np.ndarray] = {}
        self._layout = DataLayout()
        self._descriptions: dict[str, str] = {}
        self._units: dict[str, str] = dict(variable_units or {})
        layout = selection.make_layout(
            target, variable_axes, variable_structures, relation_names, num_nodes
        )
        if data:
            self._install(selection.freeze(data), layout, dict(variable_descriptions or {}))
            self._revision = 0
        else:
            self._layout = layout

    # ----------------------------------------------------------------- reading

    @property
    def data(self) -> Mapping[str, np.ndarray]:
        """Read-only mapping of every array (variables, axes, relations) by name."""
        return MappingProxyType(self._data)

    @property
    def target(self) -> str | None:
        """Name of the target variable, or None while none is selected."""
        return self._layout.target

    @property
    def revision(self) -> int:
        """Data revision: 0 at construction, bumped by every commit."""
        return self._revision

    @property
    def variable_descriptions(self) -> dict[str, str]:
        """Descriptions of every array by name (a copy)."""
        return dict(self._descriptions)

    @property
    def variable_units(self) -> dict[str, str]:
        """Units by name (a copy): the data's own, then the run's ``units`` setting."""
        return {**self._units, **dict(_args_value(self.args, "units") or {})}

    @property
    def variable_axes(self) -> dict[str, tuple[str, ...]]:
        """Declared axes of each variable (a copy; () when undeclared)."""
        return {name: tuple(self._layout.variable_axes.get(name, ())) for name in
                self.variable_names()}

    @property
    def variable_structures(self) -> dict[str, str]:
        """Relation used by each structured variable (a copy)."""
        return dict(self._layout.variable_structures)

    @property
    def relation_names(self) -> frozenset[str]:
        """Names of graph or hypergraph relation arrays."""
        return self._layout.relation_names

    @property
    def num_nodes(self) -> int | None:
        """Number of graph nodes, or None for ordinary data."""
        return self._layout.num_nodes

    @property
    def layout(self) -> DataLayout:
        """The frozen metadata describing how the arrays relate."""
        return self._layout

    @property
    def workspace_path(self) -> Path | None:
        """The workspace directory, or None when the context has none."""
        if self.workspace is None:
            return None
        return Path(getattr(self.workspace, "path", self.workspace))

    @property
    def n_samples(self) -> int:
        """Number of samples (leading length of the sample variables), 0 without data."""
        names = self._layout.sample_names(self._data)
        reference = self.target if self.target in names else (names[0] if names else None)
        return 0 if reference is None else len(self._data[reference])

    def settings(self) -> ContextSettings:
        """Return the validated split and fit settings read from ``args``."""
        return resolve_context_settings(self.args)

    def axis_names(self) -> tuple[str, ...]:
        """Return axis names in first-occurrence order."""
        return self._layout.axis_names()

    def variable_names(self) -> tuple[str, ...]:
        """Return names of non-axis variables (relations included) in data order."""
        axes = set(self.axis_names())
        return tuple(name for name in self._data if name not in axes)

    def feature_names(self) -> tuple[str, ...]:
        """Return the selected non-axis variables other than the target and the weights
        column, in data order."""
        left_out = (self.target, self.weights_name)
        return tuple(name for name in self.variable_names() if name not in left_out)

    @property
    def weights_name(self) -> str | None:
        """The data column of per-row weights (the ``weights`` setting), or None."""
        value = _args_value(self.args, "weights")
        return value if isinstance(value, str) and value else None

    def row_weights(self) -> np.ndarray | None:
        """Per-row weights of this context's rows (None without a ``weights`` setting).

        Raises:
            DataError: The setting names a column that is missing or not valid weights.
        """
        name = self.weights_name
        if name is None:
            return None
        raise_first(list(filter(None, [check_weights(self._data, name, self.target)])))
        return np.asarray(self._data[name], dtype=float)

    def target_values(self) -> np.ndarray:
        """Return the target array.

        Raises:
            DataError: No target is selected.
        """
        return self._data[self._require_target("target_values")]

    def feature_matrix(self, names: list[str] | None = None) -> np.ndarray:
        """Stack 1-D sample variables into an ``(n_samples, k)`` float matrix.

        Args:
            names: Variables to stack; defaults to ``feature_names()``.

        Returns:
            The matrix, columns in the order of ``names``.

        Raises:
            DataError: A name is unknown or its array is not one-dimensional.
        """
        chosen = list(self.feature_names() if names is None else names)
        selection.require_known(chosen, self._layout.sample_names(self._data))
        for name in chosen:
            if self._data[name].ndim != 1:
                raise DataError(f"Variable {name!r} has shape {self._data[name].shape}; "
                                "feature_matrix() expects 1-D variables.", variable=name)
        columns = [self._data[name].astype(float) for name in chosen]
        return np.column_stack(columns) if columns else np.empty((self.n_samples, 0))

    def schema(self) -> dict[str, Any]:
        """Return a JSON-ready description of the active data.

        Returns:
            ``revision``, ``target``, ``features``, ``n_samples``, ``variables``
            (shape, dtype, role, axes, description, missing count, units when given), ``axes``,
            ``relation_names``, ``num_nodes`` and the resolved ``settings``.
        """
        return json_value(selection.describe(self))

    # ------------------------------------------------------------------ splits

    @property
    def train_split(self) -> AgentContext:
        """The cached training view (the full data when validation is disabled)."""
        return cast(AgentContext, self._splits()["train"])

    @property
    def validation_split(self) -> AgentContext | None:
        """The cached validation view, or None when validation is disabled."""
        return self._splits()["validation"]

    def restore_revision(self, revision: int) -> None:
        """Number the data as revision ``revision`` (a resumed run's recorded one), so the
        revisions its branches and candidates recorded keep meaning the same data."""
        with self._lock:
            self._revision = int(revision)
            self._split_cache = None

    def invalidate_splits(self) -> None:
        """Discard the cached training and validation views."""
        with self._lock:
            self._split_cache = None

    def _splits(self) -> dict[str, AgentContext | None]:
        with self._lock:
            if self._split_cache is None or self._split_cache[0] != self._revision:
                splits = _checked_splits(self.evaluator.split(self))
                self._split_cache = (self._revision, splits)
            return self._split_cache[1]

    def with_data(self, data: Mapping[str, Any]) -> AgentContext:
        """Create a view over ``data`` sharing settings, evaluator and workspace.

        Metadata (descriptions, axes, relations) is kept for the names present
        in ``data``; the view carries this context's revision.

        Args:
            data: Arrays for the view (copied unless already read-only).

        Returns:
            A new context; empty or all-nan columns are allowed in a view.
        """
        return self._derive(selection.freeze(data, copy_writeable_only=True))

    def _derive(self, data: dict[str, np.ndarray]) -> AgentContext:
        view = object.__new__(AgentContext)
        view.args, view.evaluator, view.workspace = self.args, self.evaluator, self.workspace
        view._lock = threading.RLock()
        view._split_cache = None
        view._revision = self._revision
        layout = selection.restrict_layout(self._layout, data)
        descriptions = {name: self._descriptions.get(name, "") for name in data}
        raise_first(check_context_data(data, layout, complete=False))
        view._data, view._layout, view._descriptions = data, layout, descriptions
        view._units = dict(self._units)
        return view

    # ------------------------------------------------------- payload, pickling

    def to_payload(self) -> ContextPayload:
        """Return a :class:`~srh_core.context.payload.ContextPayload` of this context."""
        return context_to_payload(self)

    @classmethod
    def from_payload(cls, payload: Any, **overrides: Any) -> AgentContext:
        """Rebuild a context from a payload.

        See :func:`context_from_payload` for the overrides (``args``, ``evaluator``,
        ``workspace``).
        """
        return context_from_payload(payload, **overrides)

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.pop("_lock", None)
        state["_split_cache"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        return (f"AgentContext(target={self.target!r}, features={list(self.feature_names())}, "
                f"n_samples={self.n_samples}, revision={self._revision})")


def _default_evaluator() -> Any:
    return DefaultEvaluator()


def _checked_splits(splits: Any) -> dict[str, AgentContext | None]:
    if not isinstance(splits, Mapping) or set(splits) != set(SPLIT_NAMES):
        got = sorted(splits) if isinstance(splits, Mapping) else type(splits).__name__
        raise ConfigurationError(
            f"evaluator.split() must return a mapping with keys {list(SPLIT_NAMES)}; got {got}.",
            setting="evaluator",
        )
    train, validation = splits["train"], splits["validation"]
    if not isinstance(train, AgentContext) or not (
        validation is None or isinstance(validation, AgentContext)
    ):
        raise ConfigurationError(
            "evaluator.split() must return an AgentContext for 'train' and an AgentContext "
            f"or None for 'validation'; got {type(train).__name__} and "
            f"{type(validation).__name__}.",
            setting="evaluator",
        )
    return {"train": train, "validation": validation}


def _args_value(args: Any, name: str) -> Any:
    """One runtime setting of ``args`` (a mapping, Namespace or settings object), or None."""
    return args.get(name) if isinstance(args, Mapping) else getattr(args, name, None)


def context_from_payload(
    payload: ContextPayload,
    *,
    args: Any = None,
    evaluator: Any = None,
    workspace: Any = None,
) -> AgentContext:
    """Rebuild the context a payload describes.

    Args:
        payload: Metadata and arrays (see :meth:`ContextPayload.from_parts`).
        args: Runtime settings; defaults to a Namespace of the payload's settings.
        evaluator: Evaluator to use; by default the payload's default evaluator,
            or its custom evaluator reloaded from the recorded file.
        workspace: Workspace; defaults to the recorded path.

    Returns:
        A context with the payload's data, metadata and revision.

    Raises:
        DataError: An array is missing, extra, or differs from its recorded digest.
        ConfigurationError: The evaluator cannot be restored without ``evaluator``.
    """
    meta = payload.metadata
    check_arrays(meta, payload.arrays)
    context = AgentContext(
        args=args if args is not None else argparse.Namespace(**meta.settings),
        data={name: payload.arrays[name] for name in meta.arrays},
        target=meta.target,
        variable_descriptions=meta.variable_descriptions,
        variable_units=meta.variable_units,
        variable_axes={name: tuple(axes) for name, axes in meta.variable_axes.items()},
        variable_structures=meta.variable_structures,
        relation_names=set(meta.relation_names),
        num_nodes=meta.num_nodes,
        evaluator=evaluator if evaluator is not None else restore_evaluator(meta.evaluator),
        workspace=workspace if workspace is not None else meta.workspace,
    )
    context._revision = meta.revision  # the payload's revision, not a fresh 0
    return context

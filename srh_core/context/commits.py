"""The data-changing methods of :class:`~srh_core.context.AgentContext`.

Every method validates the new data completely before touching the context
(see :mod:`srh_core.context.validation`), then swaps data, metadata and
descriptions under the context's lock, drops the cached splits and bumps the
revision by one. On a DataError the context is unchanged.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from srh_core.context import selection
from srh_core.context.validation import (
    DataLayout,
    check_context_data,
    check_descriptions,
    check_sample_count,
    check_weights,
    raise_first,
)
from srh_core.errors import DataError


class DataCommits:
    """Mixin of AgentContext: commit_data, add_features, update_selection, commit_context_data."""

    _data: dict[str, np.ndarray]
    _layout: DataLayout
    _descriptions: dict[str, str]
    _units: dict[str, str]
    _revision: int
    _split_cache: Any
    _lock: threading.RLock

    if TYPE_CHECKING:  # provided by AgentContext
        target: str | None
        n_samples: int
        relation_names: frozenset[str]

        def feature_names(self) -> tuple[str, ...]: ...

        def variable_names(self) -> tuple[str, ...]: ...

        def axis_names(self) -> tuple[str, ...]: ...

    def commit_data(
        self,
        data: Mapping[str, Any],
        *,
        target: str,
        features: list[str] | None = None,
        variable_descriptions: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        """Replace the data with an ordinary aligned selection of columns.

        Args:
            data: Available arrays keyed by column name.
            target: Target column to keep.
            features: Feature columns to keep, in this order; ``None`` keeps every
                other column of ``data`` (in data order).
            variable_descriptions: Descriptions for the kept columns; columns
                without one keep their current description, if any.

        Returns:
            Summary: ``revision``, ``target``, ``features``, ``columns``, ``n_samples``.

        Raises:
            DataError: Unknown target or feature, or data violating the data policy.
        """
        names = selection.select_columns(data, target, features)
        descriptions = dict(variable_descriptions or {})
        raise_first(check_descriptions(descriptions, data))
        kept = {name: descriptions.get(name, self._descriptions.get(name, "")) for name in names}
        arrays = selection.freeze({name: data[name] for name in names})
        self._install(arrays, DataLayout(target=target), kept)
        return self._summary(columns=list(self._data))

    def add_features(
        self, features: Mapping[str, Any], *, descriptions: Mapping[str, str] | None = None
    ) -> dict[str, Any]:
        """Add aligned feature arrays, keeping the target and current features.

        A feature with the name of an existing feature replaces it.

        Args:
            features: New feature arrays keyed by name.
            descriptions: Descriptions of the new features.

        Returns:
            Summary: ``revision``, ``target``, ``features``, ``added``, ``replaced``, ``n_samples``.

        Raises:
            DataError: No target is selected, a feature is named like the target,
                axis or relation, or a feature violates the data policy.
        """
        target = self._require_target("add_features")
        selection.check_new_features(features, target, set(self.axis_names()) | self.relation_names)
        raise_first(check_descriptions(dict(descriptions or {}), features))
        replaced = [name for name in features if name in self._data]
        arrays = {**self._data, **selection.freeze(features)}
        merged = {**self._descriptions, **{n: "" for n in features}, **dict(descriptions or {})}
        merged = {name: merged.get(name, "") for name in arrays}
        self._install(arrays, self._layout, merged)
        added = [name for name in features if name not in replaced]
        return self._summary(added=added, replaced=replaced)

    def update_selection(
        self,
        *,
        target: str,
        features: list[str],
        variable_descriptions: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        """Select the variables used by symbolic regression; others are dropped.

        Axes and relations used by the kept variables are kept too.

        Args:
            target: Target variable name.
            features: Feature variable names.
            variable_descriptions: Description updates applied to kept names.

        Returns:
            Summary: ``revision``, ``target``, ``features``, ``dropped``, ``n_samples``.

        Raises:
            DataError: An unknown name, or a target that is an axis or relation.
        """
        selection.require_known([target, *features], self.variable_names())
        keep = selection.closure(self._layout, [*features, target])
        arrays = {name: value for name, value in self._data.items() if name in keep}
        descriptions = dict(variable_descriptions or {})
        raise_first(check_descriptions(descriptions, arrays))
        merged = {name: descriptions.get(name, self._descriptions.get(name, "")) for name in arrays}
        layout = replace(selection.restrict_layout(self._layout, arrays), target=target)
        dropped = [name for name in self._data if name not in arrays]
        self._install(arrays, layout, merged)
        return self._summary(dropped=dropped)

    def commit_context_data(self, loaded: Mapping[str, Any]) -> dict[str, Any]:
        """Replace the data with a validated :func:`load_context_data` result.

        The target is the manifest's ``target`` when it names one, else the
        current target when it still exists, else None.

        Args:
            loaded: Mapping returned by ``load_context_data``.

        Returns:
            Summary: ``revision``, ``variables``, ``target``, ``features``, ``n_samples``.
        """
        arrays = selection.freeze(loaded["data"])
        target = loaded.get("target") or (self.target if self.target in arrays else None)
        layout = selection.make_layout(
            target, loaded.get("variable_axes"), loaded.get("variable_structures"),
            loaded.get("relation_names"), loaded.get("num_nodes"),
        )
        self._install(arrays, layout, dict(loaded.get("variable_descriptions") or {}))
        self._units = dict(loaded.get("variable_units") or {})
        return self._summary(variables=list(self.variable_names()))

    def _install(
        self, data: dict[str, np.ndarray], layout: DataLayout, descriptions: dict[str, str]
    ) -> None:
        issues = check_context_data(data, layout) + check_descriptions(descriptions, data)
        weights = self.weights_name  # type: ignore[attr-defined]
        if not issues and weights is not None and layout.target is not None:
            issues += filter(None, [check_weights(data, weights, layout.target)])
        settings = self.settings()  # type: ignore[attr-defined]
        if not issues and layout.target is not None and settings.min_train_rows is not None:
            issues += filter(None, [check_sample_count(
                len(data[layout.target]), settings.validation_fraction, settings.min_train_rows)])
        raise_first(issues)
        with self._lock:
            self._data = data
            self._layout = layout
            self._descriptions = {name: str(descriptions.get(name, "")) for name in data}
            self._split_cache = None
            self._revision += 1

    def _summary(self, **extra: Any) -> dict[str, Any]:
        return {"revision": self._revision, "target": self.target,
                "features": list(self.feature_names()), "n_samples": self.n_samples, **extra}

    def _require_target(self, operation: str) -> str:
        if self.target is None:
            raise DataError(f"{operation}() needs a target, but the context has none; "
                            "select one with commit_data() or update_selection().")
        return self.target


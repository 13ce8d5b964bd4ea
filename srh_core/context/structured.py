"""Run data that carries its layout: graph relations, ``num_nodes``, edge fields, time.

``SRAgent.run(X, y)`` and ``submit_run(..., X, y)`` take plain mappings of
arrays. Graph data also needs to say which arrays are relation tables, how
many nodes there are and which relation each edge field lives on, and
trajectory data which variable is the time and which is a time derivative; a
:class:`StructuredData` is a mapping of arrays (so every caller that only
reads arrays keeps working) that also holds that metadata, and
:func:`commit_run_data` commits either kind into a context.

Role notes: committing a StructuredData puts a bracketed note in front of the
description of every structured variable (``[relation over 12 nodes; rows
(target, source)]``, ``[node field over 12 nodes]``, ``[edge field of A]``,
``[time]``, ``[time derivative dx/dt of x]``), so the task prompt, which shows
descriptions, tells any model (and the offline proposer) what the arrays are.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from srh_core import formats

if TYPE_CHECKING:
    from srh_core.context.context import AgentContext

__all__ = ["StructuredData", "commit_run_data"]


class StructuredData(dict):
    """Feature arrays by name plus the layout a plain mapping cannot carry.

    Args:
        arrays: Arrays by name (node fields, edge fields, relation tables...).
        relation_names: Names of the relation tables among ``arrays``.
        num_nodes: Number of graph nodes.
        variable_structures: Edge field -> its relation.
        variable_axes: Declared axes by name.
        variable_descriptions: Descriptions by name.
        variable_units: Units by name (a ``context.data`` manifest's), kept by the run's
            context and its run directory.
        time: The time variable of trajectory data.
        derivatives: Variable (the target, usually) -> the state it is the time
            derivative of.
    """

    def __init__(self, arrays: Mapping[str, Any], *, relation_names: Iterable[str] = (),
                 num_nodes: int | None = None,
                 variable_structures: Mapping[str, str] | None = None,
                 variable_axes: Mapping[str, tuple[str, ...]] | None = None,
                 variable_descriptions: Mapping[str, str] | None = None,
                 variable_units: Mapping[str, str] | None = None,
                 time: str | None = None,
                 derivatives: Mapping[str, str] | None = None) -> None:
        super().__init__(arrays)
        self.relation_names = sorted(relation_names)
        self.num_nodes = num_nodes
        self.variable_structures = dict(variable_structures or {})
        self.variable_axes = {name: tuple(axes) for name, axes in (variable_axes or {}).items()}
        self.variable_descriptions = dict(variable_descriptions or {})
        self.variable_units = dict(variable_units or {})
        self.time = time
        self.derivatives = dict(derivatives or {})

    def layout(self) -> dict[str, Any]:
        """The metadata as the keys of a ``load_context_data`` result."""
        return {"relation_names": list(self.relation_names), "num_nodes": self.num_nodes,
                "variable_structures": dict(self.variable_structures),
                "variable_axes": dict(self.variable_axes),
                "variable_descriptions": dict(self.variable_descriptions),
                "variable_units": dict(self.variable_units)}

    def role_note(self, name: str, value: Any) -> str:
        """The bracketed role of ``name`` (empty for an ordinary variable)."""
        nodes = self.num_nodes
        if name in self.relation_names:
            return formats.relation_note(nodes)
        if name in self.variable_structures:
            return formats.edge_field_note(self.variable_structures[name])
        if name in self.derivatives:
            state = self.derivatives[name]
            return formats.derivative_note(state)
        if name == self.time:
            return formats.TIME_NOTE
        if nodes is not None and getattr(value, "ndim", 0) == 2 and value.shape[-1] == nodes:
            return formats.node_field_note(nodes)
        return ""

    def __reduce__(self) -> Any:
        return (_rebuild, (dict(self), {**self.layout(), "time": self.time,
                                        "derivatives": dict(self.derivatives)}))


def _rebuild(arrays: dict[str, Any], layout: dict[str, Any]) -> StructuredData:
    return StructuredData(arrays, **layout)


def commit_run_data(context: AgentContext, X: Mapping[str, Any], targets: Mapping[str, Any],
                    ) -> dict[str, Any]:
    """Commit a run's features and its one target, keeping a StructuredData's layout.

    Args:
        context: The run's context.
        X: Features (a plain mapping or a :class:`StructuredData`).
        targets: ``{target_name: array}``.

    Returns:
        The commit summary of the context.
    """
    target = next(iter(targets))
    if not isinstance(X, StructuredData):
        return context.commit_data({**dict(X), **dict(targets)}, target=target, features=list(X))
    layout = X.layout()
    given = layout.pop("variable_descriptions")
    arrays = {**dict(X), **dict(targets)}
    descriptions = {}
    for name, value in arrays.items():
        note = X.role_note(name, np.asarray(value))
        own = given.get(name, "")
        if note and own.startswith(note):  # saved with its note (a context.data written back)
            note = ""
        text = " ".join(part for part in (note, own) if part)
        if text:
            descriptions[name] = text
    return context.commit_context_data({"data": arrays, "target": target,
                                        "variable_descriptions": descriptions, **layout})

"""Run data that carries its layout: graph relations, ``num_nodes``, edge-field structures.

``SRAgent.run(X, y)`` and ``submit_run(..., X, y)`` take plain mappings of
arrays. Graph data also needs to say which arrays are relation tables, how
many nodes there are and which relation each edge field lives on; a
:class:`StructuredData` is a mapping of arrays (so every caller that only
reads arrays keeps working) that also holds that metadata, and
:func:`commit_run_data` commits either kind into a context.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

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
    """

    def __init__(self, arrays: Mapping[str, Any], *, relation_names: Iterable[str] = (),
                 num_nodes: int | None = None,
                 variable_structures: Mapping[str, str] | None = None,
                 variable_axes: Mapping[str, tuple[str, ...]] | None = None,
                 variable_descriptions: Mapping[str, str] | None = None) -> None:
        super().__init__(arrays)
        self.relation_names = sorted(relation_names)
        self.num_nodes = num_nodes
        self.variable_structures = dict(variable_structures or {})
        self.variable_axes = {name: tuple(axes) for name, axes in (variable_axes or {}).items()}
        self.variable_descriptions = dict(variable_descriptions or {})

    def layout(self) -> dict[str, Any]:
        """The metadata as the keys of a ``load_context_data`` result."""
        return {"relation_names": list(self.relation_names), "num_nodes": self.num_nodes,
                "variable_structures": dict(self.variable_structures),
                "variable_axes": dict(self.variable_axes),
                "variable_descriptions": dict(self.variable_descriptions)}

    def __reduce__(self) -> Any:
        return (_rebuild, (dict(self), self.layout()))


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
    descriptions = {name: text for name, text in layout.pop("variable_descriptions").items()
                    if name in X or name in targets}
    return context.commit_context_data({"data": {**dict(X), **dict(targets)}, "target": target,
                                        "variable_descriptions": descriptions, **layout})

"""Graph-aligned evaluation: relations, node and edge fields as the engine reads them.

A graph context (``num_nodes`` set, relations declared) holds node fields
``(n_samples, N)``, edge fields ``(n_samples, E)`` declared with a
``structure`` (their relation), relation tables ``(E, 2)``/``(H, 3)`` and
ordinary per-sample variables ``(n_samples,)``. For an indexed formula the
engine treats the last axis of every array as structural, so before
evaluating:

- per-sample 1-D variables become ``(n_samples, 1)`` (they broadcast over nodes);
- declared edge fields are wrapped in :class:`srh_engine.RelationField` with
  their relation, so the engine never has to guess it;
- ``num_nodes`` comes from the context.

Relation arrays are not sample-aligned: a split slices samples only
(:func:`srh_core.evaluator.splits.split_aligned_context` shares every
relation array unchanged between the views).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

import srh_engine as engine
from srh_core.errors import ConfigurationError
from srh_engine.graph_evaluation import is_structural

if TYPE_CHECKING:
    from srh_core.context import AgentContext

__all__ = ["engine_options", "engine_values", "require_graph"]


def engine_values(f: engine.Expression, values: Mapping[str, Any], context: Any
                  ) -> dict[str, Any]:
    """``values`` prepared for the engine: graph-aligned when ``f`` uses indices.

    Args:
        f: The formula (or any expression of the data).
        values: Arrays by name (already cut to the rows to evaluate).
        context: The context they come from (its layout decides the roles), or None.
    """
    if context is None or getattr(context, "num_nodes", None) is None or not is_structural(f):
        return dict(values)
    layout = context.layout
    sample_names = set(layout.sample_names(values))
    prepared: dict[str, Any] = {}
    for name, value in values.items():
        relation = layout.variable_structures.get(name)
        if relation is not None:
            prepared[name] = engine.RelationField(value, relation)
        elif name in sample_names and np.ndim(value) == 1:
            prepared[name] = np.asarray(value)[:, None]
        else:
            prepared[name] = value
    return prepared


def engine_options(f: engine.Expression, context: Any) -> dict[str, Any]:
    """Keyword arguments of engine ``evaluate``/``fit`` for ``f`` on ``context``."""
    num_nodes = getattr(context, "num_nodes", None)
    return {"num_nodes": num_nodes} if num_nodes is not None else {}


def require_graph(context: AgentContext) -> None:
    """Raise unless the context declares a graph (``num_nodes`` and relations)."""
    if context.num_nodes is None or not context.relation_names:
        raise ConfigurationError(
            "GraphEvaluator needs graph data: declare the relations (kind 'relation') and "
            "num_nodes in context.data, or use DefaultEvaluator for sample-aligned data.",
            setting="evaluator")

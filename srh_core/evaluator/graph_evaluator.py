"""GraphEvaluator: the default protocol, required to run on graph-aligned data."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

import srh_engine as engine
from srh_core.evaluator.default import ContextSplits, DefaultEvaluator
from srh_core.evaluator.graph import require_graph
from srh_core.evaluator.metrics import MetricDict
from srh_core.evaluator.splits import split_aligned_context

if TYPE_CHECKING:
    from srh_core.context import AgentContext

__all__ = ["GraphEvaluator"]


class GraphEvaluator(DefaultEvaluator):
    """Evaluate variables with (..., N/E/H) graph-aligned dimensions.

    The default evaluator already evaluates graph data graph-aligned; this
    class makes it a requirement (a context without relations and
    ``num_nodes`` is a configuration error), as the reference's does.
    """

    source_path: ClassVar[str] = __file__
    """A worker rebuilding a context reloads the class from this file."""

    @classmethod
    def split(cls, context: AgentContext) -> ContextSplits:
        """Split sample-aligned graph data without slicing relation arrays.

        Args:
            context: Complete graph or hypergraph context.

        Returns:
            Training and validation context views.
        """
        require_graph(context)
        return split_aligned_context(context)  # type: ignore[return-value]

    @classmethod
    def fit(cls, f: engine.Expression, y: engine.Expression, context: AgentContext, *,
            fit_constants: bool | None = None) -> engine.Expression:
        """Fit an equality using graph-aware broadcast evaluation."""
        require_graph(context)
        return super().fit(f, y, context, fit_constants=fit_constants)

    @classmethod
    def evaluate(cls, f: engine.Expression, y: engine.Expression,
                 context: AgentContext) -> MetricDict:
        """Evaluate an equality using graph-aware broadcast evaluation."""
        require_graph(context)
        return super().evaluate(f, y, context)

"""Convenience methods shared by every expression node.

Each method is a thin wrapper over a module function of another engine
module, imported on call so that the import graph stays acyclic (those
modules import the node classes).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .fitting import FitMethod, FitResult
    from .nodes import Expression
    from .rendering import ParameterStyle

__all__ = ["ExpressionMethods"]


class ExpressionMethods:
    """Method forms of the engine's module functions (mixed into ``Expression``)."""

    __slots__ = ()

    def evaluate(
        self: Expression,
        values: Mapping[str, Any] | None = None,
        *,
        parameters: Mapping[str, Any] | None = None,
        time: Any = None,
        delay_resolver: Any = None,
        num_nodes: int | None = None,
    ) -> Any:
        """Evaluate with NumPy; see :func:`srh_engine.evaluate`."""
        from .evaluation import evaluate

        return evaluate(self, values, parameters=parameters, time=time,
                        delay_resolver=delay_resolver, num_nodes=num_nodes)

    eval = evaluate  # the reference's name; one method, so the two never diverge

    def fit(
        self: Expression,
        values: Mapping[str, Any],
        target: Any = None,
        *,
        initial: Mapping[str, Any] | None = None,
        method: FitMethod | str = "auto",
        options: Mapping[str, Any] | None = None,
        fit_constants: bool = False,
        num_nodes: int | None = None,
        time: Any = None,
        delay_resolver: Any = None,
    ) -> FitResult:
        """Fit the parameters by least squares; see :func:`srh_engine.fit`."""
        from .fitting import fit

        return fit(self, values, target, initial=initial, method=method, options=options,
                   fit_constants=fit_constants, num_nodes=num_nodes, time=time,
                   delay_resolver=delay_resolver)

    def to_str(
        self: Expression,
        *,
        latex: bool = False,
        number_format: str = "",
        parameter_style: ParameterStyle = "call",
    ) -> str:
        """Render as text or LaTeX; see :func:`srh_engine.to_str`."""
        from .rendering import to_str

        return to_str(self, latex=latex, number_format=number_format,
                      parameter_style=parameter_style)

    def __str__(self: Expression) -> str:
        return self.to_str()

    def to_tree(self: Expression, *, number_format: str = "") -> str:
        """Render an indented preorder tree, one node per line."""
        from .rendering import to_tree

        return to_tree(self, number_format=number_format)

    def copy(self: Expression) -> Expression:
        """Return a deep copy (new node objects, equal to this tree)."""
        from .transform import copy

        return copy(self)

    def replace(self: Expression, old: Expression, new: Expression) -> Expression:
        """Return a tree in which every occurrence of the object ``old`` is ``new``."""
        from .transform import replace

        return replace(self, old, new)

    def fold_constants(self: Expression) -> Expression:
        """Return a tree with closed numeric subtrees evaluated."""
        from .transform import fold_constants

        return fold_constants(self)

    def bind_parameters(self: Expression, parameters: Mapping[str, Any]) -> Expression:
        """Return a tree whose parameters carry the given values."""
        from .transform import bind_parameters

        return bind_parameters(self, parameters)

    def unbound_parameters(self: Expression) -> list[str]:
        """Names of parameters without a value, in first-appearance order."""
        from .transform import unbound_parameters

        return unbound_parameters(self)

    def parameter_values(self: Expression) -> dict[str, Any]:
        """Values already bound into the parameters of this tree."""
        from .transform import parameter_values

        return parameter_values(self)

    def count_parameters(
        self: Expression,
        values: Mapping[str, Any] | None = None,
        *,
        parameters: Mapping[str, Any] | None = None,
    ) -> int:
        """Number of independent fitted scalars; see :func:`srh_engine.count_parameters`."""
        from .transform import count_parameters

        return count_parameters(self, values, parameters=parameters)

    def complexity(self: Expression) -> int:
        """Node count; see :func:`srh_engine.complexity`."""
        from .transform import complexity

        return complexity(self)

    def symbols(self: Expression) -> tuple[str, ...]:
        """Names of the data symbols used, in first-appearance order."""
        from .transform import symbols

        return symbols(self)

    def canonical_key(self: Expression) -> str:
        """Deduplication key; see :func:`srh_engine.canonical_key`."""
        from .canonical import canonical_key

        return canonical_key(self)

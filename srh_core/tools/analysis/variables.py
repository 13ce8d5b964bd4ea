"""Resolve the variable names and expressions an analysis tool is asked about.

A requested item is either a data variable (``x1``) or an expression of data
variables (``log(y)``, ``x1*x2``); on graph data also an indexed expression such
as ``sum[j](A[i, j], x[j] - x[i])``, which may read the relations and is
evaluated graph-aligned (a node field ``(n_samples, N)``, compared with a
node-aligned target value by value). Expressions are parsed by
:func:`srh_engine.parse` and evaluated by :func:`srh_engine.evaluate`: no
Python is ever evaluated, so ``__import__('os')`` is a parse error like any
other. Every failure is kept with its message (and a "did you mean" for
unknown names), so one bad item never hides the analysis of the others.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

import srh_engine as engine
from srh_core.errors import DataError, ToolArgumentError, did_you_mean
from srh_core.evaluator.graph import engine_values
from srh_core.tools.base import BaseTool
from srh_engine.graph_evaluation import is_structural

MAX_VARIABLES = 40
NAMED_CONSTANTS = ("pi", "e")

Role = Literal["target", "feature", "expression"]


@dataclass(frozen=True, slots=True)
class AnalysedVariable:
    """One resolved variable or expression.

    Attributes:
        name: The item as requested (normalised formula text).
        values: Its values as a float array (the variable's shape).
        role: "target", "feature" (a data variable) or "expression".
        uses_target: The item reads the target variable.
    """

    name: str
    values: np.ndarray
    role: Role
    uses_target: bool


@dataclass(frozen=True, slots=True)
class VariableFailure:
    """A requested item that could not be resolved or analysed."""

    name: str
    message: str

    def to_dict(self) -> dict[str, str]:
        """Return ``{"variable", "message"}``."""
        return {"variable": self.name, "message": self.message}


def require_data(context: Any, tool: str) -> Any:
    """The context, or a DataError when the tool runs without data.

    Raises:
        DataError: No context, or a context without arrays.
    """
    if context is None or not getattr(context, "data", None):
        raise DataError(f"The {tool} tool needs data, but its context has none.")
    return context


def sample_names(context: Any) -> tuple[str, ...]:
    """Names of the context's sample variables (no axes, no graph relations)."""
    return tuple(context.layout.sample_names(context.variable_names()))


def default_names(context: Any, *, include_target: bool) -> list[str]:
    """The target (when asked and set) followed by every sample feature, in data order."""
    names = [name for name in sample_names(context) if name != context.target]
    if include_target and context.target is not None:
        names.insert(0, context.target)
    return names


def requested_names(names: Sequence[Any] | None, defaults: list[str], tool: str) -> list[str]:
    """Validate the ``variables`` argument; None or [] selects ``defaults``.

    Raises:
        ToolArgumentError: An item is not text, or more than ``MAX_VARIABLES`` are asked.
    """
    chosen = list(names) if names else list(defaults)
    for item in chosen:
        if not isinstance(item, str) or not item.strip():
            raise ToolArgumentError(
                f"The 'variables' parameter of {tool} must be a list of variable names or "
                f"expressions. Got the item {item!r} instead.", parameter="variables")
    unique = list(dict.fromkeys(item.strip() for item in chosen))
    if len(unique) > MAX_VARIABLES:
        raise ToolArgumentError(
            f"The 'variables' parameter of {tool} accepts at most {MAX_VARIABLES} items. "
            f"Got {len(unique)} instead; analyse them in smaller groups.", parameter="variables")
    return unique


def resolve_variables(
    data: Mapping[str, np.ndarray], items: Sequence[str], known: Sequence[str],
    target: str | None, context: Any = None,
) -> tuple[list[AnalysedVariable], list[VariableFailure]]:
    """Resolve each item on ``data``; failures are collected, not raised.

    Args:
        data: Arrays by name (the training split).
        items: Variable names or expressions.
        known: Names the items may read (the sample variables).
        target: The target's name, to mark items that read it.
        context: The context ``data`` comes from; with graph data, indexed
            expressions may also read its relations.

    Returns:
        The resolved variables in request order, and the failures.
    """
    resolved: list[AnalysedVariable] = []
    failures: list[VariableFailure] = []
    for item in items:
        try:
            resolved.append(resolve_variable(data, item, known, target, context))
        except (ValueError, TypeError, ArithmeticError) as error:
            failures.append(VariableFailure(item, str(error) or type(error).__name__))
    return resolved, failures


def resolve_variable(
    data: Mapping[str, np.ndarray], item: str, known: Sequence[str], target: str | None,
    context: Any = None,
) -> AnalysedVariable:
    """Resolve one name or expression (see :func:`resolve_variables`).

    Raises:
        ToolArgumentError: The text is not an accepted formula.
        DataError: It reads an unknown variable, or gives no per-sample values.
        srh_engine.EngineError: Parsing or evaluation failed.
    """
    if item in known:
        role: Role = "target" if item == target else "feature"
        return AnalysedVariable(item, np.asarray(data[item], dtype=float), role, role == "target")
    text = BaseTool.normalize_formula(item)
    symbols = {name: engine.Symbol(name) for name in NAMED_CONSTANTS if name in known}
    expression = engine.parse(text, symbols=symbols)
    used = engine.symbols(expression)
    graph = context is not None and getattr(context, "num_nodes", None) is not None and \
        is_structural(expression)
    readable = [*known, *sorted(context.relation_names)] if graph else list(known)
    for name in used:
        if name not in readable:
            raise DataError(f"{name!r} is not a variable of the data.{did_you_mean(name, known)}"
                            f" Variables: {', '.join(readable)}.", variable=name)
    values = {name: data[name] for name in used}
    if graph:
        values = engine.evaluate(expression, engine_values(expression, values, context),
                                 num_nodes=context.num_nodes)
    else:
        values = engine.evaluate(expression, values)
    if np.ndim(values) == 0:
        raise DataError(f"{text!r} is a constant ({float(values):g}); give a variable or an "
                        "expression that reads one.", variable=item)
    return AnalysedVariable(item, np.asarray(values, dtype=float), "expression",
                            target is not None and target in used)

"""The run's units as the formula tools use them: a formula's dimensional check.

A context has units when the run gives them (the ``units`` setting: ``srh run
--units``, a suite's units, ``X_units`` / ``y_units`` of the estimator) or its
``context.data`` manifest does; :attr:`AgentContext.variable_units` merges both.
Every formula tool's result then carries ``units``:
``{consistent, dimension, target_dimension, reason, constant_units}`` (the rules:
:mod:`srh_engine.dimensional`), and the text the model reads has one line of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import srh_engine as engine
from srh_engine import Dimension, check_dimensions, parse_units

__all__ = ["context_dimensions", "target_dimension", "units_line", "units_report"]


def context_dimensions(context: Any) -> dict[str, Dimension]:
    """The dimension of every variable the run gives units for ({} when none)."""
    units = getattr(context, "variable_units", None) or {}
    return {name: parse_units(text) for name, text in units.items()}


def target_dimension(expression: engine.Expression, dimensions: Mapping[str, Dimension]
                     ) -> Dimension | None:
    """The dimension of a data expression (``T``, ``log(T/T0)``, ``y/x1``); None when
    it has none the rules can tell (a variable without units, an inconsistent one)."""
    if not set(engine.symbols(expression)) <= set(dimensions):
        return None
    check = check_dimensions(expression, dimensions)
    return check.dimension if check.consistent else None


def units_report(f: engine.Expression, target: engine.Expression, context: Any
                 ) -> dict[str, Any] | None:
    """``{consistent, dimension, target_dimension, reason, constant_units}`` of
    ``target = f``, or None when the run has no units."""
    dimensions = context_dimensions(context)
    if not dimensions:
        return None
    wanted = target_dimension(target, dimensions)
    return check_dimensions(f, dimensions, wanted).to_dict(wanted)


def units_line(report: Mapping[str, Any] | None) -> str | None:
    """The line the model reads: ``units: consistent; the formula is in kg*m^2*s^-2 (as the
    target)``, or why not."""
    if not report:
        return None
    if not report.get("consistent"):
        return f"units: INCONSISTENT: {report.get('reason')}"
    line = f"units: consistent; the formula is in {report.get('dimension')}"
    if report.get("constant_units"):
        return f"{line}, its constants in {report['constant_units']} (target in " \
               f"{report.get('target_dimension')})"
    return f"{line} (as the target)" if report.get("target_dimension") else line

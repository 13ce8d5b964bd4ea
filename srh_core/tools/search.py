"""expression_search: the engine's native symbolic search as a tool.

Runs :func:`srh_engine.search.search` on the training split (evenly
subsampled to ``max_samples`` rows) within ``time_budget`` seconds and
returns its Pareto front: the lowest-error formula is the result, every
other front formula is in ``all_formulas``, each scored by the evaluator
like any candidate (the formulas come fitted; nothing is refitted). It runs
like any tool, so on a cluster it runs on a tools worker. When the run has
units, they reach the search (its dimensional analysis and consistency
check), and every formula's result reports its ``units``.

Time: a call that must end by a deadline (its executor's time limit, the
run's time left: ``BaseTool.seconds_left``) searches for at most that time
less a reserve for the search's own overrun and the scoring of its front
(:data:`RESERVE_SECONDS`, :data:`RESERVE_SHARE`), so it returns the front it
found instead of being cut with nothing; the result says when the budget was
shortened. :meth:`ExpressionSearchTool.warm_up` starts the search's island
processes before the run's first call when the run's clock is a "fit" clock.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import srh_engine as engine
from srh_core.errors import ToolArgumentError
from srh_core.operators import (
    constraint_limits,
    constraint_violations,
    operator_limits,
    search_operators,
)
from srh_core.tools.base import BaseTool
from srh_core.tools.dimensions import context_dimensions, target_dimension
from srh_core.tools.formula import DataTerm, FormulaTool
from srh_core.tools.polynomial import subsample_rows
from srh_engine.search import OPERATORS, search, warm_islands
from srh_engine.transform import map_postorder

MIN_BUDGET, MAX_BUDGET = 0.5, 600.0
MIN_COMPLEXITY, MAX_COMPLEXITY = 3, 60
MIN_SAMPLES, MAX_SAMPLES = 20, 20000
MAX_SEED = 2**31 - 1
MAX_WORKERS = 64
INPUT_PREFIX = "srhinput"
RESERVE_SECONDS, RESERVE_SHARE = 0.5, 0.2
"""Of the seconds a call has left: kept back for the search's overrun (its last fits,
islands' results) and the scoring of its front (the larger of the two)."""
MIN_CUT_BUDGET = 0.3
"""A call with less search time than this left fails at once (it would be cut anyway)."""


@BaseTool.register("expression_search")
class ExpressionSearchTool(FormulaTool):
    """The engine's time-bounded symbolic search: a Pareto front of formulas."""

    def execute(
        self,
        operators: list[str] | None = None,
        max_complexity: int = 25,
        time_budget: float = 10.0,
        seed: int = 0,
        variables: list[str] | None = None,
        y: str | None = None,
        max_samples: int = 2000,
        show_diagnostics: bool = True,
        workers: int | None = None,
    ) -> dict[str, Any]:
        """Search formulas of any shape (sums inside ratios and roots, compositions, differences).

        Use it when the closed-form fitters leave the target unexplained. It
        tests the data for separability, for dependence through a difference,
        ratio, product or sum of two variables and for transforms of the
        target, then enumerates and evolves formulas, fitting their constants.
        The result is the lowest-error formula of the front; the simpler ones
        of the front are in all_formulas.

        Args:
            operators: Operators to use, from "+", "-", "*", "/", "sqrt", "square", "cube",
                "exp", "log", "sin", "cos", "tanh", "abs", "inv", "neg". Default: + - * /
                sqrt square exp log sin cos.
            max_complexity: Largest formula searched, in nodes, 3 to 60.
            time_budget: Search time in seconds, 0.5 to 600.
            seed: Seed of the search (same seed and data: same front when it ends early).
            variables: Inputs: names or expressions. Default: every numeric feature.
            y: Target variable or expression. Default: the target.
            max_samples: Training rows used (evenly subsampled when there are more), 20 to 20000.
            show_diagnostics: Add residual diagnostics of the best formula.
            workers: Processes searching at once (islands with seeds seed, seed + 1, ...),
                1 to 64. Default: the CPUs this process may use, and 1 inside a Celery
                prefork child; set 1 on a worker that already runs one process per core.
        """
        checked = self._run_operators(self._operators(operators))
        size = self.check_int("max_complexity", max_complexity, MIN_COMPLEXITY, MAX_COMPLEXITY)
        maxsize = operator_limits(self.require_context().args)[2]
        size = size if maxsize is None else min(size, maxsize)
        budget = self.check_float("time_budget", time_budget, MIN_BUDGET, MAX_BUDGET)
        asked, budget = budget, self._budget_in_time(budget)
        seed = self.check_int("seed", seed, 0, MAX_SEED)
        limit = self.check_int("max_samples", max_samples, MIN_SAMPLES, MAX_SAMPLES)
        islands = None if workers is None else self.check_int("workers", workers, 1,
                                                              MAX_WORKERS)
        target = self.target_term(y)
        inputs = self.input_terms(variables, target, parameter="variables")
        data = self.training_data(inputs, target)
        rows = subsample_rows(data.y.size, 1, limit=limit)
        names = [f"{INPUT_PREFIX}{i}" for i in range(len(inputs))]
        units, target_units = self._units(names, inputs, target)
        result = search(data.X[rows], data.y[rows], names, time_budget=budget, seed=seed,
                        operators=checked, max_complexity=size, workers=islands, units=units,
                        target_units=target_units,
                        weights=None if data.weights is None else data.weights[rows],
                        **self._constraints(inputs))
        formulas = [_in_inputs(entry.expression, inputs) for entry in result.front]
        formulas, dropped = self._within_constraints(formulas)
        entry = self._results(formulas, target, show_diagnostics, result)
        if "search" in entry:
            entry["search"]["time_budget"] = round(budget, 3)
            if budget < asked:
                entry["search"]["shortened_from"] = asked
            entry["search"]["notes"] = [_named(note, inputs) for note in result.notes]
            if dropped:
                entry["search"]["notes"].append(f"dropped {dropped} front formula(s) that "
                                                "break the run's constraints")
        return entry

    def _budget_in_time(self, budget: float) -> float:
        """``budget``, shortened to end within the seconds this call has left.

        Raises:
            ToolArgumentError: Too little time is left for any search.
        """
        left = self.seconds_left()
        if left is None:
            return budget
        usable = left - max(RESERVE_SECONDS, RESERVE_SHARE * left)
        if usable >= budget:
            return budget
        if usable < MIN_CUT_BUDGET:
            raise ToolArgumentError(f"expression_search needs at least {MIN_CUT_BUDGET}s; this "
                                    f"call has {max(left, 0.0):.1f}s left of its time limit.",
                                    parameter="time_budget")
        return usable

    def warm_up(self, *, wait: bool = False) -> None:
        """Start the search's island processes (default ``workers``) now, when the run
        waits for its tools to be ready (a "fit" clock: a benchmark's budget is its fit
        time). A wall-clock run starts them at its first search: most runs end before one
        (an exact fit in the first step), and starting them beside the first step took
        CPU from it (0.45 s per run, about a minute of the test suite)."""
        if wait:
            warm_islands(wait=True)

    def _constraints(self, inputs: Sequence[DataTerm]) -> dict[str, Any]:
        """The run's constraints for the search, when its inputs are the plain variables
        (an input expression such as ``x*y`` is one leaf to the search, so its trees'
        sizes are not the formula's; the front is filtered in the inputs' terms anyway)."""
        nested, sizes = constraint_limits(self.require_context().args)
        if not (nested or sizes) or any(not isinstance(t.expression, engine.Symbol)
                                        for t in inputs):
            return {}
        return {"nested_constraints": nested, "constraints": sizes}

    def _within_constraints(self, formulas: list[engine.Expression]
                            ) -> tuple[list[engine.Expression], int]:
        """The formulas that keep the run's ``nested_constraints`` and ``constraints``."""
        limits = constraint_limits(self.require_context().args)
        if limits == (None, None):
            return formulas, 0
        kept = [f for f in formulas if not constraint_violations(f, *limits)]
        return kept, len(formulas) - len(kept)

    def _units(self, names: Sequence[str], inputs: Sequence[DataTerm], target: DataTerm
               ) -> tuple[dict[str, str] | None, str | None]:
        """The dimension of each input term and of the target term, when the run has units
        (a term whose dimension the units do not tell is left out)."""
        dimensions = context_dimensions(self.require_context())
        if not dimensions:
            return None, None
        units = {name: str(found) for name, term in zip(names, inputs, strict=True)
                 if (found := target_dimension(term.expression, dimensions)) is not None}
        wanted = target_dimension(target.expression, dimensions)
        return units or None, None if wanted is None else str(wanted)

    def _operators(self, operators: Any) -> list[str] | None:
        if operators is None:
            return None
        if not isinstance(operators, list) or not operators or \
                any(name not in OPERATORS for name in operators) or \
                not any(name in ("+", "-", "*", "/") for name in operators):
            raise ToolArgumentError(
                f"The 'operators' parameter of expression_search must list operators from "
                f"{list(OPERATORS)}, with at least one of + - * /. Got {operators!r:.80} "
                "instead.", parameter="operators")
        return list(dict.fromkeys(operators))

    def _run_operators(self, operators: list[str] | None) -> list[str] | None:
        """The call's operators within the run's set (``binary_operators``/``unary_operators``)."""
        allowed = search_operators(*operator_limits(self.require_context().args)[:2])
        if allowed is None:
            return operators
        if operators is None:
            return allowed
        kept = [name for name in operators if name in allowed]
        if not any(name in ("+", "-", "*", "/") for name in kept):
            raise ToolArgumentError(f"The 'operators' parameter of expression_search must stay "
                                    f"within the run's operators {allowed}. Got {operators!r:.80} "
                                    "instead.", parameter="operators")
        return kept

    def _results(self, formulas: Sequence[engine.Expression], target: DataTerm,
                 show_diagnostics: bool, result: Any) -> dict[str, Any]:
        if not formulas:
            return self.failed_evaluation(reason="the search found no finite formula in its "
                                                 "time budget")
        # The search snaps the numbers of its chosen formula first and of the others while its
        # budget lasts, and a formula mapped back from dimensionless groups can carry a number
        # its reduced form did not (sqrt(9.8696...*c/...) for pi**2): every reported formula's
        # numbers go through the exact recognition the other tools' fits get.
        formulas = [self.recognised(f, target) for f in formulas]
        best = formulas[-1]  # the front ends with the lowest error
        entry = self.score_formula(best, target, show_diagnostics=show_diagnostics)
        others = [self.score_formula(f, target, show_diagnostics=False) for f in formulas[:-1]]
        if others:
            entry["all_formulas"] = others
        entry["search"] = {"evaluated": result.evaluated, "seconds": round(result.seconds, 3),
                           "notes": list(result.notes),
                           "front": [{"complexity": e.complexity, "train_mse": e.mse}
                                     for e in result.front]}
        return entry

    @classmethod
    def summary_lines(cls, result: Any) -> list[str]:
        lines = super().summary_lines(result)
        search_info = result.get("search") if isinstance(result, dict) else None
        if search_info:
            lines.append(f"  search: {search_info['evaluated']} expressions evaluated in "
                         f"{search_info['seconds']}s; front of {len(search_info['front'])}")
            if "shortened_from" in search_info:
                lines.append(f"  time: the budget was shortened from "
                             f"{search_info['shortened_from']:g}s to "
                             f"{search_info['time_budget']:g}s to end within the time left")
            lines += [f"  decomposition: {note}" for note in search_info["notes"][:4]]
        return lines


def _named(note: str, inputs: Sequence[DataTerm]) -> str:
    """A search note in the inputs' own texts instead of the placeholder names."""
    for i in reversed(range(len(inputs))):  # srhinput12 before srhinput1
        note = re.sub(rf"\b{INPUT_PREFIX}{i}\b", inputs[i].text, note)
    return note


def _in_inputs(expression: engine.Expression, inputs: Sequence[DataTerm]) -> engine.Expression:
    """Substitute the search's placeholder names by the input expressions."""
    by_name = {f"{INPUT_PREFIX}{i}": term.expression for i, term in enumerate(inputs)}

    def swap(node: engine.Expression) -> engine.Expression:
        if isinstance(node, engine.Symbol) and node.name in by_name:
            return by_name[node.name]
        return node

    return map_postorder(expression, swap)

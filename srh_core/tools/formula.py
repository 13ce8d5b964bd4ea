"""The shared base of formula tools: parse model text, fit on train, score per split.

Every tool that produces a formula returns one common shape, which the agent
reads (see :mod:`srh_core.agent.candidates`)::

    {"formula": str,          # engine-parseable, fitted constants substituted
     "is_candidate": bool,    # predicts the configured target itself
     "target": str,           # what the metrics were computed against
     "metrics": {"train": {...}, "validation": {...}},  # validation iff a split exists
     "data_split_results": {"train": {"metrics": {...}}, "validation": {"metrics": {...}}},
     "parameters": {...}, "diagnostics": {...}, "warnings": [...],   # optional
     "all_formulas": [<same shape without all_formulas>, ...]}       # optional

``metrics[split]`` and ``data_split_results[split]["metrics"]`` hold the same
metric dict: the first is what the harness reads, the second the reference's
shape, for code written against it (see :func:`split_results`).

Fitting uses the train split only; after it, fitted numbers that the training
data accept as exact constants are written as such (``1/(4*pi)``, ``2/3``;
:mod:`srh_engine.constants`). Formula text from the model is parsed by
``srh_engine`` only (never ``eval``). A formula fitted against a transformed
target (``y="log(T)"``) is not a candidate; when :func:`invert_target` can
undo the transform, the back-transformed formula is scored against the real
target and added to ``all_formulas`` as a candidate.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

import srh_engine as engine
from srh_core import formats
from srh_core.errors import DataError, ToolArgumentError, did_you_mean
from srh_core.evaluator.graph import engine_options, engine_values
from srh_core.operators import (
    constraint_limits,
    constraint_violations,
    missing_operators,
    operator_limits,
)
from srh_core.tools.base import BaseTool
from srh_core.tools.diagnostics import (
    diagnostic_lines,
    finite_number,
    metric_line,
    metric_warnings,
    residual_diagnostics,
)
from srh_core.tools.dimensions import units_line, units_report
from srh_core.tools.inversion import invert_target
from srh_engine.transform import map_postorder

MAX_INPUTS = 16
"""Most input expressions (``x``) one call may name."""

MAX_FIT_VALUES = 40
"""Most parameters plus free constants ``evaluate(fit=True)`` will fit at once."""

MIN_ROWS = 3
"""Fewest complete training rows a fitting tool accepts."""

DISPLAY_NUMBER_FORMAT = ".12g"
"""Numbers shown to the model: enough digits to copy, no float noise."""

MAX_DIAGNOSTIC_VARIABLES = 12
"""Variables listed in worst-sample rows and residual correlations."""

MAX_LISTED_NAMES = 30
"""Variable names listed in an error message."""

_ONE = engine.Number(1)


@dataclass(frozen=True, slots=True)
class DataTerm:
    """A parsed expression of the data (an input ``x`` or the target ``y``).

    Attributes:
        text: The expression as the engine renders it.
        expression: The parsed expression.
        is_target: Whether it is the configured target symbol itself.
    """

    text: str
    expression: engine.Expression
    is_target: bool = False


@dataclass(frozen=True, slots=True)
class TrainingData:
    """Inputs and target of the complete training rows, flattened.

    Attributes:
        X: ``(n_rows, n_inputs)`` input values.
        y: ``(n_rows,)`` target values.
        n_dropped: Rows left out for a non-finite input or target (or weight 0).
        weights: Each row's weight (the ``weights`` setting's column), or None.
    """

    X: np.ndarray
    y: np.ndarray
    n_dropped: int
    weights: np.ndarray | None = None


class FormulaTool(BaseTool):
    """Abstract base of every formula tool: argument checks, data, scoring, formatting."""

    # ------------------------------------------------------- argument checks
    def _range_error(self, name: str, kind: str, low: Any, high: Any, value: Any,
                     brackets: str = "[]") -> ToolArgumentError:
        return ToolArgumentError(
            f"The {name!r} parameter of {self.metadata.name} must be {kind} in "
            f"{brackets[0]}{low}, {high}{brackets[1]}. Got {value!r} instead.", parameter=name)

    def check_int(self, name: str, value: Any, low: int, high: int) -> int:
        """Return ``value`` when it is an int in ``[low, high]``, else raise ToolArgumentError."""
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise self._range_error(name, "an int", low, high, value)
        return value

    def check_float(self, name: str, value: Any, low: float, high: float, *,
                    open_low: bool = False, open_high: bool = False) -> float:
        """Return ``value`` as a float inside the interval, else raise ToolArgumentError.

        NaN and infinities are always rejected.
        """
        number = float(value) if isinstance(value, int | float) and \
            not isinstance(value, bool) else math.nan
        inside = (low < number if open_low else low <= number) and \
            (number < high if open_high else number <= high)
        if not inside:
            brackets = ("(" if open_low else "[") + (")" if open_high else "]")
            raise self._range_error(name, "a float", low, high, value, brackets)
        return number

    # ----------------------------------------------------------- data access
    def require_context(self) -> Any:
        """The context, or a clear error when the tool runs without data."""
        if self.context is None or not getattr(self.context, "data", None):
            raise DataError(f"The {self.metadata.name} tool needs data, but its context has none.")
        return self.context

    def variable_listing(self) -> str:
        """Short text listing the data variables (target marked) for error messages."""
        context = self.require_context()
        names = [f"{n} (target)" if n == context.target else n for n in context.variable_names()]
        more = len(names) - MAX_LISTED_NAMES
        return ", ".join(names[:MAX_LISTED_NAMES]) + (f", ... ({more} more)" if more > 0 else "")

    def parse_text(self, text: Any, parameter: str, *, allow_parameters: bool) -> engine.Expression:
        """Parse model text with the engine and check every name it uses.

        Raises:
            ToolArgumentError: Not text, not a formula, an unknown name, or a
                free parameter where only data is allowed.
        """
        try:
            expression = self.parse_formula(text)
        except ToolArgumentError as error:
            raise ToolArgumentError(f"The {parameter!r} parameter: {error}",
                                    parameter=parameter) from None
        except engine.EngineError as error:
            raise ToolArgumentError(f"The {parameter!r} parameter of {self.metadata.name} is not "
                                    f"a formula the engine accepts: {error}",
                                    parameter=parameter) from None
        self.check_names(expression, parameter)
        if not allow_parameters and any(isinstance(n, engine.Parameter | engine.GroupedParameter)
                                        for n in expression.iter_preorder()):
            raise ToolArgumentError(f"The {parameter!r} parameter must be an expression of the "
                                    "data; param(...) is not allowed there.", parameter=parameter)
        return expression

    def check_names(self, expression: engine.Expression, parameter: str) -> None:
        """Raise ToolArgumentError naming the symbols that are not data variables."""
        data = self.require_context().data
        unknown = [name for name in engine.symbols(expression) if name not in data]
        if not unknown:
            return
        hints = "".join(did_you_mean(name, data) for name in unknown[:5])
        quoted = ", ".join(repr(name) for name in unknown[:10])
        raise ToolArgumentError(
            f"The {parameter!r} parameter uses unknown name(s) {quoted}; the data variables are: "
            f"{self.variable_listing()}.{hints} Write param(\"{unknown[0]}\") for a free "
            "constant to fit.", parameter=parameter)

    def target_term(self, y: str | None) -> DataTerm:
        """The target expression: ``y`` when given, else the configured target."""
        context = self.require_context()
        if y is None or (isinstance(y, str) and not y.strip()):
            if context.target is None:
                raise DataError("No target is configured; pass y to name one.")
            y = context.target
        expression = self.parse_text(y, "y", allow_parameters=False)
        if not engine.symbols(expression):
            raise ToolArgumentError(f"The 'y' parameter ({y!r}) uses no data variable.",
                                    parameter="y")
        is_target = context.target is not None and expression == engine.Symbol(context.target)
        return DataTerm(engine.to_str(expression), expression, is_target)

    def input_terms(self, x: Sequence[str] | None, target: DataTerm,
                    parameter: str = "x") -> list[DataTerm]:
        """Parse the input expressions, defaulting to the numeric features other than ``y``."""
        if x is None:
            return self._default_inputs(target, parameter)
        if not isinstance(x, list | tuple) or not 1 <= len(x) <= MAX_INPUTS:
            size = len(x) if isinstance(x, list | tuple) else x
            raise ToolArgumentError(f"The {parameter!r} parameter of {self.metadata.name} must "
                                    f"list 1 to {MAX_INPUTS} expressions. Got {size!r:.60} "
                                    "instead.", parameter=parameter)
        terms: list[DataTerm] = []
        for index, text in enumerate(x):
            expression = self.parse_text(text, f"{parameter}[{index}]", allow_parameters=False)
            if not engine.symbols(expression):
                raise ToolArgumentError(f"{parameter}[{index}] = {text!r} uses no data variable.",
                                        parameter=parameter)
            term = DataTerm(engine.to_str(expression), expression)
            if any(term.text == other.text for other in terms):
                raise ToolArgumentError(f"{parameter}[{index}] = {text!r} is listed twice.",
                                        parameter=parameter)
            terms.append(term)
        return terms

    def _default_inputs(self, target: DataTerm, parameter: str) -> list[DataTerm]:
        context = self.require_context()
        excluded = {context.target} | (set(engine.symbols(target.expression))
                                       if isinstance(target.expression, engine.Symbol) else set())
        names = [name for name in context.feature_names() if name not in excluded
                 and context.data[name].dtype.kind in "fiu"]
        if not names:
            raise ToolArgumentError(f"No numeric input variable is available; pass {parameter}.",
                                    parameter=parameter)
        if len(names) > MAX_INPUTS:
            raise ToolArgumentError(f"The data has {len(names)} numeric features; pass at most "
                                    f"{MAX_INPUTS} of them as {parameter}.", parameter=parameter)
        return [DataTerm(name, engine.Symbol(name)) for name in names]

    def training_data(self, inputs: Sequence[DataTerm], target: DataTerm, *,
                      min_rows: int = MIN_ROWS) -> TrainingData:
        """Evaluate inputs and target on the train split; keep the complete rows.

        Raises:
            ToolArgumentError: Shapes do not broadcast, or too few complete rows.
        """
        split = self.require_context().train_split
        columns = [evaluate_on(term.expression, split) for term in (target, *inputs)]
        try:
            arrays = np.broadcast_arrays(*[np.asarray(c, dtype=float) for c in columns])
        except ValueError:
            raise ToolArgumentError("The inputs and the target have shapes that do not "
                                    "broadcast together.", parameter="x") from None
        matrix = np.column_stack([a.reshape(-1) for a in arrays])
        rows = np.isfinite(matrix).all(axis=1)
        weights = split.row_weights()
        if weights is not None:  # one weight per sample, repeated along a row's other axes
            weights = np.broadcast_to(weights.reshape((-1,) + (1,) * (arrays[0].ndim - 1)),
                                      arrays[0].shape).reshape(-1)
            rows &= weights > 0
        if int(rows.sum()) < min_rows:
            raise ToolArgumentError(f"Only {int(rows.sum())} training rows have finite inputs and "
                                    f"target{' and a weight > 0' if weights is not None else ''}; "
                                    f"{self.metadata.name} needs at least {min_rows}.",
                                    parameter="y")
        kept = matrix[rows]
        return TrainingData(kept[:, 1:], kept[:, 0], int(rows.size - rows.sum()),
                            None if weights is None else weights[rows])

    # ------------------------------------------------------------ evaluation
    def evaluate_formula(self, f: engine.Expression, target: DataTerm, *,
                         fit: bool | None = None,
                         show_diagnostics: bool = True,
                         details: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Fit (optionally) on train, then score ``target = f`` per split.

        Args:
            f: The formula (parameters bound, unless ``fit``).
            target: The target expression.
            fit: Fit the parameters and free numeric constants of ``f`` on train; None (a
                tool's own fitted formula): only when the run weighs its rows unequally,
                so that a tool's unweighted least squares become the weighted fit.
            show_diagnostics: Add residual diagnostics of the train split.
            details: Extra keys (``parameters``, ``warnings``...) merged into the result.

        Returns:
            The common evaluation shape; a back-transformed candidate, when
            the target was transformed and the transform can be undone, is in
            ``all_formulas``.
        """
        warnings = []
        if fit:
            f = self._fitted(f, target)
        elif fit is None and self.weighted():  # a tool's own fit is unweighted: refit
            f, warning = self._weighted_refit(f, target)
            warnings += [warning] if warning else []
        fitted = self.structural(f, target)
        entry = self.score_formula(fitted, target, show_diagnostics=show_diagnostics)
        entry["warnings"] = entry.get("warnings", []) + warnings
        for key, value in (details or {}).items():
            entry[key] = entry.get("warnings", []) + list(value) if key == "warnings" else value
        back = self.back_transformed(fitted, target)
        if back is not None:
            entry["all_formulas"] = [back]
        return entry

    def _fitted(self, f: engine.Expression, target: DataTerm) -> engine.Expression:
        context = self.require_context()
        # Roughly the engine's rule for constants it frees (non-integers except pi and e).
        free = engine.count_parameters(f) + sum(
            1 for n in f.iter_preorder() if isinstance(n, engine.Number)
            and not float(n.value).is_integer() and abs(n.value) not in (math.pi, math.e))
        if free > MAX_FIT_VALUES:
            raise ToolArgumentError(f"The formula has {free} parameters and free constants; "
                                    f"fitting accepts at most {MAX_FIT_VALUES}.", parameter="f")
        return context.evaluator.fit(f, target.expression, context.train_split,
                                     fit_constants=True)

    def weighted(self) -> bool:
        """Whether the run weighs its rows unequally (a ``weights`` column that is not
        constant on the training rows of positive weight)."""
        weights = self.require_context().train_split.row_weights()
        if weights is None:
            return False
        positive = weights[weights > 0]
        return positive.size > 0 and bool(positive.min() != positive.max())

    def _weighted_refit(self, f: engine.Expression, target: DataTerm
                        ) -> tuple[engine.Expression, str | None]:
        """``f`` with its numbers refitted under the weighted loss, or ``f`` and why not."""
        try:
            return self._fitted(f, target), None
        except (ToolArgumentError, engine.EngineError, DataError) as error:
            return f, f"constants fitted unweighted (the weighted refit failed: {error})"

    def structural(self, f: engine.Expression, target: DataTerm) -> engine.Expression:
        """``f`` with the fitted numbers the training data accept as exact constants
        (``0.0795774715...`` -> ``1/(4*pi)``; see :mod:`srh_engine.constants`)."""
        return self._on_train(f, target, engine.recognise_and_snap)

    def recognised(self, f: engine.Expression, target: DataTerm) -> engine.Expression:
        """``f`` with the numbers the training data accept as exact structural constants
        (:func:`srh_engine.recognise_constants`, without :meth:`structural`'s snapping, which
        refits): a few evaluations per number, cheap enough for a whole front."""
        return self._on_train(f, target, engine.recognise_constants)

    def _on_train(self, f: engine.Expression, target: DataTerm, rewrite: Any
                  ) -> engine.Expression:
        """``rewrite(f, y, evaluate)`` with the target and an evaluator on the training
        split; ``f`` itself when the target cannot be evaluated there."""
        split = self.require_context().train_split
        try:
            y = evaluate_on(target.expression, split)
        except engine.EngineError:
            return f
        return rewrite(f, y, lambda expression: evaluate_on(expression, split))

    def score_formula(self, f: engine.Expression, target: DataTerm, *,
                      show_diagnostics: bool = True) -> dict[str, Any]:
        """Score a formula whose parameters are bound; no fitting, no back-transform.

        The formula is first rewritten for reading (:func:`srh_engine.readable`:
        ``x*T**-1`` -> ``x/T``, ``a + -b`` -> ``a - b``, ``exp(log(n) + u)`` -> ``n*exp(u)``
        for a variable positive on the data), and scored as rewritten.
        """
        context = self.require_context()
        f = engine.readable(f, positive=self.positive_variables(f))
        unbound = engine.unbound_parameters(f)
        if unbound:
            raise ToolArgumentError(
                f"The formula has free parameter(s) {', '.join(unbound[:10])} without values: "
                "fit them (evaluate_formula with fit=true) or give values, e.g. "
                f"param(\"{unbound[0]}\", 1.5).", parameter="f")
        uses_target = context.target is not None and context.target in engine.symbols(f)
        splits = {"train": context.train_split, "validation": context.validation_split}
        metrics = {name: self._split_metrics(f, target, split)
                   for name, split in splits.items() if split is not None}
        entry: dict[str, Any] = {
            "formula": formula_text(f), "is_candidate": target.is_target and not uses_target,
            "target": target.text, "metrics": metrics,
            "data_split_results": split_results(metrics), "warnings": metric_warnings(metrics)}
        if uses_target:
            entry["warnings"].append(f"not a candidate: the formula uses the target "
                                     f"{context.target!r}")
        elif not target.is_target and context.target is not None:
            entry["warnings"].append(f"not a candidate: scored against {target.text!r}, not the "
                                     f"target {context.target!r}")
        units = units_report(f, target.expression, context)
        if units is not None:
            entry["units"] = units
        if context.weights_name is not None:
            entry["weights"] = context.weights_name
        outside = self.outside_limits(f)
        if outside and entry["is_candidate"]:
            entry["is_candidate"] = False
            entry["warnings"].append(f"not a candidate: {outside}")
        if show_diagnostics:
            entry["diagnostics"] = self._diagnostics(f, target, context.train_split)
        return entry

    def outside_limits(self, f: engine.Expression) -> str | None:
        """Why ``f`` breaks the run's operator set or ``maxsize`` (None: it does not)."""
        binary, unary, maxsize = operator_limits(self.require_context().args)
        missing = missing_operators(f, binary, unary)
        if missing:
            return (f"it uses {', '.join(missing)}, outside the run's operators "
                    f"({' '.join([*(binary or []), *(unary or [])]) or 'the defaults'})")
        size = engine.complexity(f)
        if maxsize is not None and size > maxsize:
            return f"its complexity {size} is above the run's maxsize {maxsize}"
        broken = constraint_violations(f, *constraint_limits(self.require_context().args))
        if broken:
            return f"it breaks the run's constraints: {'; '.join(broken[:3])}"
        return None

    def positive_variables(self, f: engine.Expression) -> list[str]:
        """The variables of ``f`` that are positive on every row of the data."""
        data = self.require_context().data
        return [name for name in engine.symbols(f) if name in data and _all_positive(data[name])]

    def _split_metrics(self, f: engine.Expression, target: DataTerm, split: Any) -> dict:
        evaluator = self.require_context().evaluator
        if target.is_target:
            metrics = evaluator.evaluate_candidate(f, split)
        else:
            metrics = evaluator.evaluate(f, target.expression, split)
        return {str(k): (v.item() if isinstance(v, np.generic) else v) for k, v in metrics.items()}

    def _diagnostics(self, f: engine.Expression, target: DataTerm, split: Any) -> dict[str, Any]:
        y_true = evaluate_on(target.expression, split)
        y_pred = evaluate_on(f, split)
        used = [*engine.symbols(f), *engine.symbols(target.expression)]
        names = list(dict.fromkeys([*used, *self.require_context().feature_names()]))
        if target.is_target:  # y_true already shows it
            names = [name for name in names if name != target.text]
        data = {n: split.data[n] for n in names[:MAX_DIAGNOSTIC_VARIABLES] if n in split.data}
        weights = split.row_weights()
        if weights is not None:  # the rows of weight 0 are no residuals of the fit
            keep = weights > 0
            y_true, y_pred = (np.broadcast_to(np.asarray(a, dtype=float), keep.shape)[keep]
                              if np.ndim(a) <= 1 else np.asarray(a)[keep]
                              for a in (y_true, y_pred))
            data = {n: v[keep] if np.shape(v)[:1] == keep.shape else v for n, v in data.items()}
        return {"split": "train", **residual_diagnostics(y_true, y_pred, data)}

    def back_transformed(self, f: engine.Expression, target: DataTerm) -> dict[str, Any] | None:
        """Score the formula solved for the real target, when ``target`` can be inverted."""
        name = self.require_context().target
        if target.is_target or name is None or name not in engine.symbols(target.expression) \
                or name in engine.symbols(f):
            return None
        inverted = invert_target(target.expression, name, f,
                                 self.require_context().train_split.data)
        if inverted is None:
            return None
        real = DataTerm(name, engine.Symbol(name), is_target=True)
        entry = self.score_formula(inverted, real, show_diagnostics=False)
        entry["back_transformed_from"] = f"{target.text} = {formula_text(f)}"
        if not finite_number(entry["metrics"]["train"].get("mse")):
            entry["is_candidate"] = False
            entry["warnings"].append("the back-transformed formula is not finite on every "
                                     "training row, so it is not a candidate")
        return entry

    def failed_evaluation(self, formula: str = "(none)", reason: str = "no formula was produced",
                          ) -> dict[str, Any]:
        """The common shape for a backend that produced no usable formula (never a candidate)."""
        context = self.require_context()
        empty = {"mse": math.inf, "rmse": math.inf, "mae": math.inf, "r2": -math.inf}
        metrics = {"train": dict(empty)}
        if context.validation_split is not None:
            metrics["validation"] = dict(empty)
        return {"formula": formula, "is_candidate": False, "target": context.target or "",
                "metrics": metrics, "data_split_results": split_results(metrics),
                "warnings": [reason]}

    @staticmethod
    def residual_diagnostics(y_true: Any, y_pred: Any, data: Mapping[str, Any] | None = None,
                             max_samples: int = 3, max_correlations: int = 5) -> dict[str, Any]:
        """Residual diagnostics; see the module function :func:`residual_diagnostics`."""
        return residual_diagnostics(y_true, y_pred, data, max_samples, max_correlations)

    # ------------------------------------------------------------ formatting
    @classmethod
    def format_evaluation_result(cls, result: Mapping[str, Any], title: str = "Formula evaluation",
                                 details: Sequence[str] = ()) -> str:
        """Render the common shape for a model.

        Order: formula, metrics per split, candidate status, ``details`` (a
        tool's own key numbers), warnings, short diagnostics, alternatives.
        """
        lines = formats.result_head(title, str(result.get("target", "y")),
                                    display_formula(result))
        for split, metrics in (result.get("metrics") or {}).items():
            lines.append(formats.split_line(split, metric_line(metrics)))
        if result.get("weights"):
            lines.append(f"  (metrics weighted by {result['weights']}: weighted MSE and R^2; "
                         "rows of weight 0 left out)")
        if not result.get("is_candidate") and not any(
                str(text).startswith("not a candidate") for text in result.get("warnings") or []):
            lines.append("  (not a candidate for the target)")
        if result.get("submitted"):
            lines.append("  Submitted as the final answer.")
        lines.extend(f"  {line}" for line in details)
        if (units := units_line(result.get("units"))) is not None:
            lines.append(f"  {units}")
        lines.extend(f"  warning: {text}" for text in (result.get("warnings") or [])[:6])
        lines.extend(diagnostic_lines(result.get("diagnostics")))
        for alternative in (result.get("all_formulas") or [])[:8]:
            mark = "candidate" if alternative.get("is_candidate") else "not a candidate"
            metrics = alternative.get("metrics") or {}
            split = "validation" if "validation" in metrics else "train"
            units = alternative.get("units") or {}
            unit_mark = "; units inconsistent" if units and not units.get("consistent") else ""
            lines.append(f"  also ({mark}): {alternative.get('target')} = "
                         f"{display_formula(alternative)}  [{split}: "
                         f"{metric_line(metrics.get(split) or {})}{unit_mark}]")
        return "\n".join(lines)

    @classmethod
    def format_result_dict(cls, result: dict[str, Any]) -> str:
        """Text for the model: the common rendering with the tool's :meth:`summary_lines`."""
        return cls.format_evaluation_result(result, title=cls.metadata.name,
                                            details=cls.summary_lines(result))

    @classmethod
    def summary_lines(cls, result: Mapping[str, Any]) -> list[str]:
        """A tool's own key numbers for the model (fitted exponents, frequency...)."""
        return []


# --------------------------------------------------------------------- helpers
def _all_positive(values: Any) -> bool:
    try:
        array = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        return False
    return bool(array.size) and bool(np.all(array > 0))


def split_results(metrics: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """The reference's ``data_split_results`` view of ``{split: metric dict}``."""
    return {split: {"metrics": values} for split, values in metrics.items()}


def evaluate_on(expression: engine.Expression, split: Any) -> Any:
    """Evaluate on a context view, graph-aligned when the expression uses indices."""
    return engine.evaluate(expression, engine_values(expression, split.data, split),
                           **engine_options(expression, split))


def formula_text(f: engine.Expression) -> str:
    """Engine-parseable text of ``f`` with bound parameter values written as numbers.

    Factors of exactly 1 or -1 are dropped (``1*x`` -> ``x``, ``-1*x`` -> ``-x``,
    ``x/1`` and ``x**1`` -> ``x``): the value is the same bit for bit, the tree smaller.
    A number (a bound value included) that is exactly integral is written as an int
    (``1.0`` -> ``1``, :func:`srh_engine.integral_number`; ``1.5`` and ``0.9999999`` stay).
    """
    def inline(node: engine.Expression) -> engine.Expression:
        if isinstance(node, engine.Parameter) and node.value is not None:
            return engine.Number(engine.integral_number(node.value))
        if isinstance(node, engine.Number):
            return engine.Number(engine.integral_number(node.value))
        return without_unit_factor(node)

    return engine.to_str(map_postorder(f, inline))


def _unit(node: engine.Expression) -> float | None:
    """1.0 or -1.0 when ``node`` is that number, else None."""
    if isinstance(node, engine.Number) and node.value in (1, -1):
        return float(node.value)
    return None


def without_unit_factor(node: engine.Expression) -> engine.Expression:
    """``1*x``, ``x*1``, ``x/1``, ``x**1`` -> ``x`` and ``-1*x``, ``x*-1``, ``x/-1`` -> ``-x``."""
    if not isinstance(node, engine.Binary) or node.operator not in ("*", "/", "**"):
        return node
    left, right = _unit(node.left), _unit(node.right)
    if node.operator == "**":
        return node.left if right == 1.0 else node
    if right is not None:
        return node.left if right == 1.0 else _negated(node.left)
    if node.operator == "*" and left is not None:
        return node.right if left == 1.0 else _negated(node.right)
    return node


def _negated(node: engine.Expression) -> engine.Expression:
    if isinstance(node, engine.Number):
        return engine.Number(-node.value)
    if isinstance(node, engine.Unary) and node.operator == "-":
        return node.operand
    return engine.Unary("-", node)


def display_formula(result: Mapping[str, Any]) -> str:
    """The result's formula with numbers rounded for reading (verbatim if it does not parse)."""
    text = str(result.get("formula", ""))
    try:
        return engine.to_str(map_postorder(engine.parse(text), _rounded))
    except (engine.EngineError, TypeError):
        return text


def _rounded(node: engine.Expression) -> engine.Expression:
    # Round through the tree, not number_format, so pi and e still print by name.
    if isinstance(node, engine.Number) and isinstance(node.value, float) \
            and abs(node.value) not in (math.pi, math.e):
        return engine.Number(float(format(node.value, DISPLAY_NUMBER_FORMAT)))
    return node


def linear_combination(coefficients: Sequence[float],
                       terms: Sequence[engine.Expression]) -> engine.Expression:
    """``sum(c * term)`` as an expression, skipping zeros and writing ``a - c*t`` for c < 0."""
    total: engine.Expression | None = None
    for coefficient, term in zip(coefficients, terms, strict=True):
        value = float(coefficient)
        if value == 0.0 or not math.isfinite(value):
            continue
        if total is None:
            total = _scaled(value, term)
        else:
            operator = "-" if value < 0 else "+"
            total = engine.Binary(operator, total, _scaled(abs(value), term))
    return total if total is not None else engine.Number(0)


def _scaled(value: float, term: engine.Expression) -> engine.Expression:
    if term == _ONE:
        return engine.Number(value)
    if value == 1.0:
        return term
    if value == -1.0:
        return engine.Unary("-", term)
    factors: list[engine.Expression] = []
    pending = [term]
    while pending:  # flatten a product so the coefficient leads it: 2*x1*x2, not 2*(x1*x2)
        node = pending.pop()
        if isinstance(node, engine.Binary) and node.operator == "*":
            pending.extend((node.right, node.left))
        else:
            factors.append(node)
    product: engine.Expression = engine.Number(value)
    for factor in factors:
        product = engine.Binary("*", product, factor)
    return product

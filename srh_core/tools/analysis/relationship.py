"""``relationship_analysis``: how each variable relates to the target, one at a time.

Computed on the training split (the whole data when validation is disabled);
above ``MAX_ANALYSIS_SAMPLES`` values a deterministic random subset is used
(``subsampled``). Only finite (x, y) pairs count. Collapse scores are
cross-validated (see :mod:`srh_core.tools.analysis.collapse`).

Structured ``result`` (machine-readable; ``None`` wherever a number is not
finite or does not apply)::

    {
      "split": "train",
      "n_rows": int,               # samples of the training split
      "n_used": int,               # values analysed per variable (after subsampling)
      "subsampled": bool,
      "y": {"name": str, "role": "target" | "feature" | "expression",
            "is_target": bool,     # y is the discovery target itself
            "n_finite": int, "sign": str, "positive": bool,
            "min": float, "max": float, "std": float},
      "settings": {"n_bins": int, "binning": "quantile" | "uniform",
                   "n_folds": int, "collapse_model": "bins" | "spline" | "isotonic"},
      "variables": [               # ranked: collapse_r2 descending, then |spearman|
        {
          "rank": int,             # 1 = explains most of y alone
          "name": str, "role": str, "uses_target": bool,
          "n_pairs": int,          # finite (x, y) pairs
          "x_min": float, "x_max": float,
          "sign": str,             # sign of x, as in statistics_analysis
          "positive": bool,        # every finite x > 0
          "pearson": float, "spearman": float,
          "collapse_r2": float,    # cross-validated R2 of y ~ g(x) alone
          "collapse_r2_std": float, "collapse_folds": int,
          "trend": "increasing" | "decreasing" | "flat" | "non_monotonic",
          "bins": [{"x_lo", "x_hi", "n", "y_mean", "y_std", "y_min", "y_max"}, ...],
          "loglog_slope": float | None,        # slope of log|y| on log|x| (power-law
          "loglog_intercept": float | None,    #   exponent); None unless x and y are
          "loglog_r2": float | None,           #   both sign-definite (no zero, one sign)
          "loglog_collapse_r2": float | None,
          "loglog_slope_fraction": str | None, # e.g. "3/2" when the slope is close to it
          "residual_partner": {"name", "pearson", "spearman", "strength"} | None,
                                   # other variable most correlated with y - g(x)
        }, ...
      ],
      "pairwise": {"names": [str, ...], "pearson": [[float]], "spearman": [[float]]}
                  | None,          # when pairwise=True: the variables and y (last)
      "errors": [{"variable": str, "message": str}, ...],
    }
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from srh_core.errors import ToolArgumentError
from srh_core.tools.analysis import pairs
from srh_core.tools.analysis.arguments import int_in_range
from srh_core.tools.analysis.collapse import cross_validated_r2
from srh_core.tools.analysis.relationship_text import format_relationships
from srh_core.tools.analysis.variables import (
    AnalysedVariable,
    VariableFailure,
    default_names,
    requested_names,
    require_data,
    resolve_variable,
    resolve_variables,
    sample_names,
)
from srh_core.tools.base import BaseTool

TOOL_NAME = "relationship_analysis"
MIN_BINS, MAX_BINS = 2, 100
MIN_FOLDS, MAX_FOLDS = 2, 20
MAX_ANALYSIS_SAMPLES = 20_000
SUBSAMPLE_SEED = 0
SIGN_DEFINITE = ("positive", "negative")


@BaseTool.register(TOOL_NAME)
class RelationshipAnalysisTool(BaseTool):
    """Per-variable relationship with the target: correlations, bins, collapse, power laws."""

    def execute(
        self,
        variables: list[str] | None = None,
        y: str | None = None,
        n_bins: int = 5,
        pairwise: bool = False,
        binning: Literal["quantile", "uniform", "equal_width"] = "quantile",
        n_folds: int = 5,
        collapse_model: Literal["bins", "spline", "isotonic"] = "bins",
    ) -> dict[str, Any]:
        """Rank variables by how much of the target each explains alone, and how.

        Use it early, after statistics_analysis, to find the dominant variables,
        the shape of each dependence (mean of y per bin of x, monotone trend)
        and power laws: when x and y have one sign, the slope of log|y| against
        log|x| is the exponent (log-log R2 near 1 means y = c*x^slope). The
        collapse R2 is the cross-validated R2 of y ~ g(x) for one x alone: near 1,
        y depends on x only; a strong partner of the residual shows what else
        matters. Works on the training split.

        Args:
            variables: Variable names or expressions, e.g. ["x1", "x1*x2", "log(x3)"].
                Default: every feature.
            y: The variable or expression to explain, e.g. "log(y)" or "y - x1".
                Default: the target.
            n_bins: Bins per variable for the conditional summaries of y, 2-100.
            pairwise: Also return Pearson and Spearman matrices among the variables and y.
            binning: "quantile" (equal counts) or "uniform" (equal widths; "equal_width"
                is accepted as a synonym).
            n_folds: Cross-validation folds of the collapse score, 2-20.
            collapse_model: One-variable predictor of the collapse score: "bins" (bin
                means), "spline" (smoothing spline) or "isotonic" (monotone fit).
        """
        settings = self._settings(n_bins, binning, n_folds, collapse_model)
        train = require_data(self.context, TOOL_NAME).train_split
        known = sample_names(self.context)
        target = self._y(train.data, y, known)
        items = [n for n in self._items(variables) if n != target.name]
        resolved, failures = resolve_variables(train.data, items, known, self.context.target,
                                            train)
        resolved = _same_shape(resolved, target, failures)
        keep = _subsample(target.values.size)
        y_used = target.values.reshape(-1)[keep]
        columns = {v.name: v.values.reshape(-1)[keep] for v in resolved}
        rows = self._analyse_all(resolved, columns, y_used, settings)
        if not rows:
            raise ToolArgumentError(_nothing_resolved(failures), parameter="variables")
        return {
            "split": "train", "n_rows": train.n_samples, "n_used": int(keep.size),
            "subsampled": bool(keep.size < target.values.size),
            "y": _y_summary(target, y_used, self.context.target), "settings": settings,
            "variables": _ranked(rows),
            "pairwise": pairs.correlation_matrices({**columns, target.name: y_used})
            if pairwise else None,
            "errors": [f.to_dict() for f in failures],
        }

    @classmethod
    def format_result_dict(cls, result: dict[str, Any]) -> str:
        """Ranked, bounded text: key numbers first, details for the top variables."""
        return format_relationships(result)

    # ------------------------------------------------------------ helpers
    @staticmethod
    def _settings(n_bins: int, binning: str, n_folds: int, model: str) -> dict[str, Any]:
        return {"n_bins": int_in_range(TOOL_NAME, "n_bins", n_bins, MIN_BINS, MAX_BINS),
                "binning": "uniform" if binning == "equal_width" else binning,
                "n_folds": int_in_range(TOOL_NAME, "n_folds", n_folds, MIN_FOLDS, MAX_FOLDS),
                "collapse_model": model}

    def _y(self, data: Any, y: str | None, known: tuple[str, ...]) -> AnalysedVariable:
        text = (y or "").strip() or self.context.target
        if text is None:
            raise ToolArgumentError("The data has no target; pass y, e.g. y=\"x3\".",
                                    parameter="y")
        try:
            return resolve_variable(data, text, known, self.context.target,
                                    self.context.train_split)
        except (ValueError, TypeError, ArithmeticError) as error:
            raise ToolArgumentError(f"The 'y' parameter of {TOOL_NAME} could not be used: "
                                    f"{error}", parameter="y") from error

    def _items(self, names: list[str] | None) -> list[str]:
        defaults = default_names(self.context, include_target=False)
        return requested_names(names, defaults, TOOL_NAME)

    def _analyse_all(self, resolved: list[AnalysedVariable], columns: dict[str, np.ndarray],
                     y: np.ndarray, settings: dict[str, Any]) -> list[dict[str, Any]]:
        rows = []
        y_definite = pairs.sign_of(y[np.isfinite(y)]) in SIGN_DEFINITE
        ranks = {name: pairs.finite_ranks(column) for name, column in columns.items()}
        for variable in resolved:
            self.check_cancelled()
            others = {name: col for name, col in columns.items() if name != variable.name}
            row = analyse_variable(columns[variable.name], y, others, settings, y_definite,
                                   ranks)
            rows.append({"name": variable.name, "role": variable.role,
                         "uses_target": variable.uses_target, **row})
        return rows


def analyse_variable(x: np.ndarray, y: np.ndarray, others: dict[str, np.ndarray],
                     settings: dict[str, Any], y_definite: bool,
                     ranks: dict[str, np.ndarray | None]) -> dict[str, Any]:
    """Every number of one variable against y (see the module docstring for the keys)."""
    finite = np.isfinite(x) & np.isfinite(y)
    xf, yf = x[finite], y[finite]
    n_bins, binning = settings["n_bins"], settings["binning"]
    model, n_folds = settings["collapse_model"], settings["n_folds"]
    pearson, spearman = pairs.correlations(xf, yf)
    row: dict[str, Any] = {
        "n_pairs": int(xf.size), "x_min": float(xf.min()) if xf.size else None,
        "x_max": float(xf.max()) if xf.size else None, "sign": pairs.sign_of(xf),
        "pearson": pearson, "spearman": spearman,
    }
    row["positive"] = row["sign"] == "positive"
    if xf.size == 0:
        return {**row, "collapse_r2": None, "collapse_r2_std": None, "collapse_folds": 0,
                "trend": "flat", "bins": [], **pairs.empty_loglog(), "residual_partner": None}
    with np.errstate(all="ignore"):
        score = cross_validated_r2(xf, yf, model, n_folds, n_bins, binning)
        row.update(collapse_r2=score.r2, collapse_r2_std=score.r2_std,
                   collapse_folds=score.n_folds)
        row["bins"] = pairs.conditional_bins(xf, yf, n_bins, binning)
        row["trend"] = pairs.trend(row["bins"])
        definite = y_definite and row["sign"] in SIGN_DEFINITE
        row.update(pairs.loglog(xf, yf, model, n_folds, n_bins, binning) if definite
                   else pairs.empty_loglog())
        residual = np.full(x.size, np.nan)
        residual[finite] = yf - score.out_of_fold
        row["residual_partner"] = pairs.strongest_partner(residual, others, ranks)
    return row


def _same_shape(resolved: list[AnalysedVariable], target: AnalysedVariable,
                failures: list[VariableFailure]) -> list[AnalysedVariable]:
    kept = []
    for variable in resolved:
        if variable.values.shape == target.values.shape:
            kept.append(variable)
        else:
            failures.append(VariableFailure(variable.name, f"has shape {variable.values.shape}, "
                                            f"but y has shape {target.values.shape}."))
    return kept


def _subsample(size: int) -> np.ndarray:
    """All positions, or a deterministic sorted random subset of ``MAX_ANALYSIS_SAMPLES``."""
    if size <= MAX_ANALYSIS_SAMPLES:
        return np.arange(size)
    chosen = np.random.default_rng(SUBSAMPLE_SEED).choice(size, MAX_ANALYSIS_SAMPLES,
                                                          replace=False)
    return np.sort(chosen)


def _y_summary(target: AnalysedVariable, y: np.ndarray, target_name: str | None
               ) -> dict[str, Any]:
    finite = y[np.isfinite(y)]
    sign = pairs.sign_of(finite)
    with np.errstate(all="ignore"):  # the std of huge values overflows to inf (-> None)
        std = float(finite.std()) if finite.size else None
    return {"name": target.name, "role": target.role, "is_target": target.name == target_name,
            "n_finite": int(finite.size), "sign": sign, "positive": sign == "positive",
            "min": float(finite.min()) if finite.size else None,
            "max": float(finite.max()) if finite.size else None,
            "std": std}


def _rank_key(row: dict[str, Any]) -> tuple[float, float]:
    collapse = row["collapse_r2"]
    spearman = row["spearman"]
    collapse = collapse if collapse is not None and np.isfinite(collapse) else -np.inf
    spearman = abs(spearman) if spearman is not None and np.isfinite(spearman) else -np.inf
    return -collapse, -spearman


def _ranked(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    ordered = sorted(rows, key=_rank_key)
    return [{"rank": index, **row} for index, row in enumerate(ordered, start=1)]


def _nothing_resolved(failures: list[VariableFailure]) -> str:
    details = "; ".join(f"{f.name!r}: {f.message}" for f in failures) or \
        "The data has no feature besides y."
    return f"No variable could be analysed against y. {details}"

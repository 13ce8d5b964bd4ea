"""``statistics_analysis``: the distribution of each variable or expression.

Computed on the training split (the whole data when validation is disabled).

Structured ``result`` (every number a float, ``None`` when not finite)::

    {
      "split": "train",
      "n_rows": int,                       # samples of the training split
      "settings": {"n_bins": int, "near_zero_thresholds": [float, ...]},
      "variables": [                       # in request order
        {
          "name": str,                     # variable or expression as requested
          "role": "target" | "feature" | "expression",
          "uses_target": bool,             # the item reads the target
          "size": int,                     # values counted (all elements)
          "n_finite": int, "n_nan": int, "n_inf": int, "finite_fraction": float,
          "min", "max", "mean", "std",     # std with ddof=0
          "q05", "q25", "median", "q75", "q95": float | None,
          "sign": "positive" | "negative" | "non_negative" | "non_positive"
                  | "zero" | "mixed" | "none",   # "none": no finite value
          "positive": bool,                # every finite value > 0
          "n_positive": int, "n_negative": int, "n_zero": int,
          "near_zero": [{"threshold": float, "count": int, "fraction": float}, ...],
          "integer": bool,                 # every finite value is an integer
          "n_distinct": int,
          "categorical": bool,             # few distinct values, each repeated
          "distinct_values": [float, ...] | None,   # when at most 10 distinct
          "skewness": float | None,
          "log_skewness": float | None,    # skewness of log10|x| (sign-definite x)
          "decades": float | None,         # log10(max|x| / min|x|) (sign-definite x)
          "log_scale_hint": bool,          # a log scale would tame the spread
          "histogram": {"edges": [float, ...], "counts": [int, ...]},
        }, ...
      ],
      "errors": [{"variable": str, "message": str}, ...],
    }
"""

from __future__ import annotations

from typing import Any

from srh_core.errors import ToolArgumentError
from srh_core.tools.analysis import summary, text
from srh_core.tools.analysis.arguments import float_in_range, int_in_range
from srh_core.tools.analysis.variables import (
    VariableFailure,
    default_names,
    requested_names,
    require_data,
    resolve_variables,
    sample_names,
)
from srh_core.tools.base import BaseTool

TOOL_NAME = "statistics_analysis"
MIN_BINS, MAX_BINS = 1, 100
MAX_NEAR_ZERO_THRESHOLD = 1e6
HISTOGRAM_MARKS = " .:-=+*#%@"


@BaseTool.register(TOOL_NAME)
class StatisticsTool(BaseTool):
    """Per-variable distribution statistics of the training data."""

    def execute(
        self,
        variables: list[str] | None = None,
        n_bins: int = 10,
        near_zero_threshold: float = 1e-8,
    ) -> dict[str, Any]:
        """Describe the distribution of variables or expressions of the training data.

        Use it first, to learn each variable's range, sign (strictly positive
        variables allow log and power laws), zeros and near-zeros (divisions,
        logs), integer or categorical values, and skew (a log scale may help).
        Reports count, finite fraction, min/max/mean/std, quantiles, a small
        histogram and hints per item.

        Args:
            variables: Variable names or expressions of them, e.g. ["x1", "y",
                "log(y)", "x1*x2"]. Default: the target and every feature.
            n_bins: Number of equal-width histogram bins, 1-100.
            near_zero_threshold: First |value| threshold for counting near-zero
                values, in (0, 1e6]; 1e-6 and 1e-4 are always reported too.
        """
        n_bins = int_in_range(TOOL_NAME, "n_bins", n_bins, MIN_BINS, MAX_BINS)
        threshold = float_in_range(TOOL_NAME, "near_zero_threshold", near_zero_threshold,
                                   0.0, MAX_NEAR_ZERO_THRESHOLD, low_open=True)
        train = require_data(self.context, TOOL_NAME).train_split
        items = variables_requested(self.context, variables)
        known = sample_names(self.context)
        resolved, failures = resolve_variables(train.data, items, known, self.context.target,
                                            train)
        thresholds = summary.near_zero_thresholds(threshold)
        described = []
        for item in resolved:
            self.check_cancelled()
            described.append({"name": item.name, "role": item.role,
                              "uses_target": item.uses_target,
                              **summary.describe(item.values, n_bins, thresholds)})
        if not described:
            raise ToolArgumentError(_nothing_resolved(failures), parameter="variables")
        return {"split": "train", "n_rows": train.n_samples,
                "settings": {"n_bins": n_bins, "near_zero_thresholds": thresholds},
                "variables": described, "errors": [f.to_dict() for f in failures]}

    @classmethod
    def format_result_dict(cls, result: dict[str, Any]) -> str:
        """One compact block per variable, key numbers first."""
        lines = [f"Statistics of the training split ({result['n_rows']} rows; "
                 "statistics use finite values only):"]
        for item in result["variables"]:
            lines += variable_lines(item)
        lines += [f"Could not analyse {e['variable']!r}: {e['message']}" for e in result["errors"]]
        return "\n".join(lines)


def variables_requested(context: Any, names: list[str] | None) -> list[str]:
    """The items to describe: ``names``, or the target and every feature."""
    defaults = default_names(context, include_target=True)
    return requested_names(names, defaults, TOOL_NAME)


def _nothing_resolved(failures: list[VariableFailure]) -> str:
    details = "; ".join(f"{f.name!r}: {f.message}" for f in failures) or "no variables"
    return f"None of the requested variables could be analysed. {details}"


def variable_lines(item: dict[str, Any]) -> list[str]:
    """The text block of one described variable."""
    head = (f"- {item['name']} [{item['role']}] n={item['size']}, finite "
            f"{text.percent(item['finite_fraction'])}")
    if item["n_finite"] == 0:
        return [head + f" (nan: {item['n_nan']}, inf: {item['n_inf']}); no finite value."]
    q = {key: text.num(item[key]) for key in ("min", "q25", "median", "q75", "max")}
    return [
        head + f": min {q['min']}, q25 {q['q25']}, median {q['median']}, q75 {q['q75']}, "
        f"max {q['max']}; mean {text.num(item['mean'])}, std {text.num(item['std'])}",
        f"  sign {item['sign']} (+{item['n_positive']} / -{item['n_negative']} / "
        f"0:{item['n_zero']}); near zero " + ", ".join(
            f"|x|<={row['threshold']:.0e}: {row['count']}" for row in item["near_zero"]),
        "  " + _values_text(item),
        "  " + histogram_text(item["histogram"]),
        *([f"  hint: {hint}"] if (hint := _hint(item)) else []),
    ]


def _values_text(item: dict[str, Any]) -> str:
    kind = "integer-valued" if item["integer"] else "real-valued"
    words = [f"{kind}, {item['n_distinct']} distinct", f"skewness {text.num(item['skewness'])}"]
    if item["distinct_values"] is not None:
        shown = ", ".join(text.num(v) for v in item["distinct_values"])
        words[0] += f" ({shown})"
    if item["categorical"]:
        words.append("few repeated values: possibly categorical")
    return "; ".join(words)


def histogram_text(histogram: dict[str, list[Any]]) -> str:
    """``hist [lo, hi] 10 bins: 3 5 12 ... |.:=#@|``: counts and a one-line sketch."""
    counts, edges = histogram["counts"], histogram["edges"]
    if not counts:
        return "hist: empty"
    peak = max(counts) or 1
    sketch = "".join(HISTOGRAM_MARKS[-1 if c == peak else (len(HISTOGRAM_MARKS) - 1) * c // peak]
                     if c else HISTOGRAM_MARKS[0] for c in counts)
    return (f"hist [{text.num(edges[0])}, {text.num(edges[-1])}] {len(counts)} bins: "
            f"{' '.join(map(str, counts))} |{sketch}|")


def _hint(item: dict[str, Any]) -> str:
    hints = []
    if item["sign"] in ("positive", "negative"):
        hints.append(f"strictly {item['sign']}, spans {text.num(item['decades'], 3)} decades")
    if item["log_scale_hint"]:
        hints.append(f"log scale suggested (skewness {text.num(item['skewness'], 3)} -> "
                     f"{text.num(item['log_skewness'], 3)} in log10|x|)")
    if item["sign"] in ("non_negative", "non_positive", "mixed") and item["n_zero"]:
        hints.append(f"{item['n_zero']} exact zeros: avoid log/division by it")
    return "; ".join(hints)

"""The report of a sweep: rates with confidence intervals per variant, and comparisons.

Input: the sweep's table rows (:func:`srh_core.sweep.runner.table_row`). Who
counts where:

- **judged** cells are the finished cells with a ground truth: ``done`` cells
  whose ``solved`` is known, and ``failed`` cells (a failure is a miss, never
  dropped). ``pending``, ``running``, ``skipped`` and ``cancelled`` cells are not
  judged; they appear in ``cells_by_state`` only. Dataset cells (no ground
  truth) are not judged either.
- ``solve_rate``: solved / judged; ``accuracy_rate``: the share of judged cells
  whose best formula has R^2 > 0.999 on fresh points (``r2_fresh``; a missing or
  non-finite value is a miss).
- Confidence intervals: 95 % percentile bootstrap over the judged cells
  (``resamples`` draws, at least 1,000, from a generator seeded with ``seed``:
  the same rows give the same interval).
- ``comparisons``: every pair of variants over the (problem, seed) pairs judged
  in both: an exact McNemar test on the discordant pairs (a two-sided binomial
  test; p = 1 without any), a Wilcoxon signed-rank test on the cells' seconds
  when they differ, and Holm's correction of the McNemar p-values over all
  pairs. ``winner`` is the variant with more solves when the corrected p is
  below 0.05, else None.
- ``families``: per problem family (the name before its first ``-``, e.g.
  ``feynman`` for ``feynman-I.12.4``) when the sweep has more than one.
- ``failures``: failed cells by reason class (an error's text before its first
  ``:``, e.g. ``run failed``, ``run lost``, ``stalled``, ``submit failed``).
"""

from __future__ import annotations

import csv
import io
import math
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from srh_core.errors import ConfigurationError
from srh_core.sweep.summary import CELL_STATES

MIN_RESAMPLES = 1000
CONFIDENCE = 0.95
ACCURACY_R2 = 0.999
ALPHA = 0.05
Row = Mapping[str, Any]


def family_of(problem: str) -> str:
    return str(problem).split("-", 1)[0]


def is_judged(row: Row) -> bool:
    if row.get("status") == "failed":
        return not row.get("dataset")
    return row.get("status") == "done" and row.get("solved") is not None


def solved(row: Row) -> bool:
    return row.get("status") == "done" and row.get("solved") is True


def accurate(row: Row) -> bool:
    r2 = row.get("r2_fresh")
    try:
        return row.get("status") == "done" and r2 is not None and math.isfinite(float(r2)) \
            and float(r2) > ACCURACY_R2
    except (TypeError, ValueError):
        return False


def bootstrap_ci(outcomes: Sequence[bool], *, seed: int = 0,
                 resamples: int = 2000) -> list[float] | None:
    """The 95 % percentile bootstrap interval of a rate (None without outcomes)."""
    if resamples < MIN_RESAMPLES:
        raise ConfigurationError(f"A confidence interval needs at least {MIN_RESAMPLES} "
                                 f"resamples; got {resamples}.", setting="resamples")
    values = np.asarray(outcomes, dtype=float)
    if values.size == 0:
        return None
    rng = np.random.default_rng(seed)
    means = values[rng.integers(0, values.size, size=(resamples, values.size))].mean(axis=1)
    tail = (1 - CONFIDENCE) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return [float(low), float(high)]


def finite_median(values: Sequence[float | None]) -> float | None:
    """The median of the finite values (None and NaN left out); None when there are none."""
    finite = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    return float(np.median(finite)) if finite else None


def failure_class(error: Any) -> str:
    text = str(error or "unknown").strip()
    return text.split(":", 1)[0].strip() or "unknown"


def group_stats(name: str, rows: Sequence[Row], *, seed: int, resamples: int,
                key: str = "variant") -> dict[str, Any]:
    """The figures of one variant (or family): counts, rates with CIs, medians, spend."""
    judged = [row for row in rows if is_judged(row)]
    states = Counter(str(row.get("status")) for row in rows)
    hits = [solved(row) for row in judged]
    accurate_hits = [accurate(row) for row in judged]
    return {
        key: name, "cells": len(rows),
        "cells_by_state": {state: states.get(state, 0) for state in CELL_STATES},
        "judged": len(judged), "solved": sum(hits),
        "solve_rate": sum(hits) / len(judged) if judged else None,
        "solve_rate_ci": bootstrap_ci(hits, seed=seed, resamples=resamples),
        "accuracy_rate": sum(accurate_hits) / len(judged) if judged else None,
        "accuracy_rate_ci": bootstrap_ci(accurate_hits, seed=seed, resamples=resamples),
        "median_seconds": finite_median([row["seconds"] for row in rows
                                         if row.get("status") in ("done", "failed")
                                         and row.get("seconds") is not None]),
        "median_tokens": finite_median([row["tokens"] for row in rows
                                        if row.get("status") in ("done", "failed")
                                        and row.get("tokens") is not None]),
        "cost": float(sum(float(row.get("cost") or 0.0) for row in rows)),
        "failures": dict(Counter(failure_class(row.get("error")) for row in rows
                                 if row.get("status") == "failed")),
    }


def mcnemar_p(a_only: int, b_only: int) -> float:
    """Exact two-sided McNemar p-value from the discordant counts."""
    from scipy.stats import binomtest

    discordant = a_only + b_only
    if discordant == 0:
        return 1.0
    return float(binomtest(a_only, discordant, 0.5).pvalue)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's step-down correction (monotone, capped at 1)."""
    order = sorted(range(len(pvalues)), key=lambda i: pvalues[i])
    corrected = [1.0] * len(pvalues)
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (len(pvalues) - rank) * pvalues[index]))
        corrected[index] = running
    return corrected


def _wilcoxon_p(pairs: Sequence[tuple[Row, Row]]) -> float | None:
    from scipy.stats import wilcoxon

    diffs = [float(a["seconds"]) - float(b["seconds"]) for a, b in pairs
             if a.get("seconds") is not None and b.get("seconds") is not None]
    if not any(diff != 0 for diff in diffs):
        return None
    return float(wilcoxon(diffs).pvalue)


def comparisons(by_variant: Mapping[str, Sequence[Row]]) -> list[dict[str, Any]]:
    """Each pair of variants over the (problem, seed) cells judged in both."""
    judged = {name: {(row.get("problem"), row.get("seed")): row for row in rows
                     if is_judged(row)} for name, rows in by_variant.items()}
    names = list(by_variant)
    found = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            common = sorted(set(judged[a]) & set(judged[b]), key=str)
            if not common:
                continue
            pairs = [(judged[a][cell], judged[b][cell]) for cell in common]
            a_only = sum(solved(x) and not solved(y) for x, y in pairs)
            b_only = sum(solved(y) and not solved(x) for x, y in pairs)
            found.append({"a": a, "b": b, "pairs": len(pairs), "a_solved": sum(
                solved(x) for x, _ in pairs), "b_solved": sum(solved(y) for _, y in pairs),
                "a_only": a_only, "b_only": b_only, "p": mcnemar_p(a_only, b_only),
                "seconds_p": _wilcoxon_p(pairs)})
    for comparison, corrected in zip(found, holm([c["p"] for c in found]), strict=True):
        comparison["p_holm"] = corrected
        better = (comparison["a"] if comparison["a_only"] > comparison["b_only"]
                  else comparison["b"])
        comparison["winner"] = better if corrected < ALPHA else None
    return found


def build_report(sweep: str, status: str, rows: Sequence[Row], *, seed: int = 0,
                 resamples: int = 2000) -> dict[str, Any]:
    """The report of a sweep (JSON-ready); see the module docstring for the rules."""
    by_variant: dict[str, list[Row]] = defaultdict(list)
    by_family: dict[str, list[Row]] = defaultdict(list)
    for row in rows:
        by_variant[str(row.get("variant"))].append(row)
        if not row.get("dataset"):
            by_family[family_of(str(row.get("problem")))].append(row)
    states = Counter(str(row.get("status")) for row in rows)
    report: dict[str, Any] = {
        "sweep": sweep, "status": status,
        "cells": {"total": len(rows), **{state: states.get(state, 0) for state in CELL_STATES}},
        "variants": [group_stats(name, group, seed=seed, resamples=resamples)
                     for name, group in by_variant.items()],
        "comparisons": comparisons(by_variant),
        "confidence": CONFIDENCE, "resamples": resamples, "seed": seed}
    if len(by_family) > 1:
        report["families"] = [group_stats(name, group, seed=seed, resamples=resamples,
                                          key="family") for name, group in by_family.items()]
    return report


def _rate(value: float | None, ci: Sequence[float] | None) -> str:
    if value is None:
        return "n/a"
    text = f"{value:.1%}"
    return f"{text} [{ci[0]:.1%}, {ci[1]:.1%}]" if ci else text


def _number(value: float | None, digits: int = 1) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def format_markdown(report: Mapping[str, Any]) -> str:
    """The report as Markdown: a table of variants, then the comparisons."""
    lines = [f"# Sweep {report['sweep']} ({report['status']})", "",
             f"{report['cells']['total']} cells; rates over judged cells with "
             f"{report['confidence']:.0%} bootstrap CIs ({report['resamples']} resamples).", "",
             "| variant | cells | judged | solved | solve rate [CI] | accuracy [CI] "
             "| median s | median tokens | cost $ | failures |",
             "| --- | ---: | ---: | ---: | --- | --- | ---: | ---: | ---: | --- |"]
    for v in report["variants"]:
        failures = ", ".join(f"{n} {reason}" for reason, n in v["failures"].items()) or "-"
        lines.append(f"| {v['variant']} | {v['cells']} | {v['judged']} | {v['solved']} | "
                     f"{_rate(v['solve_rate'], v['solve_rate_ci'])} | "
                     f"{_rate(v['accuracy_rate'], v['accuracy_rate_ci'])} | "
                     f"{_number(v['median_seconds'])} | {_number(v['median_tokens'], 0)} | "
                     f"{v['cost']:.4f} | {failures} |")
    if report["comparisons"]:
        lines += ["", "| a | b | pairs | a only | b only | McNemar p | Holm p | winner |",
                  "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |"]
        for c in report["comparisons"]:
            lines.append(f"| {c['a']} | {c['b']} | {c['pairs']} | {c['a_only']} | "
                         f"{c['b_only']} | {c['p']:.3g} | {c['p_holm']:.3g} | "
                         f"{c['winner'] or '-'} |")
    return "\n".join(lines)


CSV_FIELDS = ("variant", "cells", "judged", "solved", "solve_rate", "solve_rate_low",
              "solve_rate_high", "accuracy_rate", "accuracy_rate_low", "accuracy_rate_high",
              "median_seconds", "median_tokens", "cost")


def format_csv(report: Mapping[str, Any]) -> str:
    """One row per variant."""
    stream = io.StringIO()
    writer = csv.DictWriter(stream, fieldnames=CSV_FIELDS, extrasaction="ignore")
    writer.writeheader()
    for v in report["variants"]:
        row = dict(v)
        for name in ("solve_rate", "accuracy_rate"):
            ci = v[f"{name}_ci"] or [None, None]
            row[f"{name}_low"], row[f"{name}_high"] = ci
        writer.writerow(row)
    return stream.getvalue()


def plot_report(report: Mapping[str, Any], path: str | Path) -> Path:
    """A PNG of each variant's solve rate with its CI.

    Raises:
        ConfigurationError: matplotlib is not installed (``pip install 'srh[plot]'``).
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ConfigurationError("The plot needs matplotlib: pip install 'srh[plot]'.",
                                 setting="plot") from None
    variants = [v for v in report["variants"] if v["solve_rate"] is not None]
    path = Path(path)
    figure, axes = plt.subplots(figsize=(max(4.0, 1.2 * len(variants) + 2), 3.5), dpi=100)
    try:
        rates = [v["solve_rate"] for v in variants]
        low = [v["solve_rate"] - v["solve_rate_ci"][0] for v in variants]
        high = [v["solve_rate_ci"][1] - v["solve_rate"] for v in variants]
        axes.bar(range(len(variants)), rates, yerr=[low, high], capsize=6, color="#4a7ab5")
        axes.set_xticks(range(len(variants)), [v["variant"] for v in variants])
        axes.set_ylim(0, 1)
        axes.set_ylabel("solve rate (95% CI)")
        axes.set_title(f"Sweep {report['sweep']}")
        figure.tight_layout()
        figure.savefig(path, format="png")
    finally:
        plt.close(figure)
    return path


__all__ = ["build_report", "bootstrap_ci", "comparisons", "format_csv", "format_markdown",
           "holm", "mcnemar_p", "plot_report"]

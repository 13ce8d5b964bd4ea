"""The bounded text ``relationship_analysis`` shows the model.

Key numbers first: one ranked line per variable (collapse R2, correlations,
trend, power-law view), then bins and the residual partner for the top
variables only, then the strongest pairwise correlations.
"""

from __future__ import annotations

import math
from typing import Any

from srh_core import formats
from srh_core.tools.analysis.text import num

DETAILED_VARIABLES = 8
BINNED_VARIABLES = 4
SHOWN_PAIRS = 10
POWER_LAW_HINT_R2 = 0.99
FRACTION_HINT_R2 = 0.9
ROLE_PHRASES = {"feature": "a feature", "expression": "an expression", "target": "the target"}


def format_relationships(result: dict[str, Any]) -> str:
    """Render a ``relationship_analysis`` result (see its module docstring)."""
    lines = _header(result)
    ranked = result["variables"]
    for row in ranked[:DETAILED_VARIABLES]:
        lines += _variable_lines(row, result["y"]["name"], row["rank"] <= BINNED_VARIABLES)
    if len(ranked) > DETAILED_VARIABLES:
        lines.append(formats.further_variables_line(
            [f"{row['name']} {num(row['collapse_r2'], 3)}" for row in ranked[DETAILED_VARIABLES:]]))
    if result.get("pairwise"):
        lines += _pairwise_lines(result["pairwise"])
    lines += [f"Could not analyse {e['variable']!r}: {e['message']}" for e in result["errors"]]
    return "\n".join(lines)


def _header(result: dict[str, Any]) -> list[str]:
    y, settings = result["y"], result["settings"]
    role = "the target" if y["is_target"] else ROLE_PHRASES.get(y["role"], y["role"])
    sample = (f"a deterministic subsample of {result['n_used']} values"
              if result["subsampled"] else f"{result['n_used']} values")
    return [
        formats.relationship_head(
            y["name"], role, f"training split ({result['n_rows']} rows, {sample}; finite pairs "
            f"only). y: sign {y['sign']}, range [{num(y['min'])}, {num(y['max'])}], std "
            f"{num(y['std'])}."),
        f"Ranked by collapse R2 = {settings['n_folds']}-fold cross-validated R2 of "
        f"y ~ g(x) with x alone ({settings['collapse_model']} model, {settings['n_bins']} "
        f"{settings['binning']} bins): 1 means y is a function of x alone, <= 0 nothing.",
    ]


def _variable_lines(row: dict[str, Any], y_name: str, with_bins: bool) -> list[str]:
    warning = formats.TARGET_WARNING if row["uses_target"] else ""
    lines = [formats.relation_line(
        row["rank"], row["name"], warning, num(row["collapse_r2"], 3),
        num(row["collapse_r2_std"], 2), (num(row["pearson"], 3), num(row["spearman"], 3)),
        row["trend"], f"{formats.x_range(num(row['x_min']), num(row['x_max']))}, sign "
        f"{row['sign']}, {row['n_pairs']} pairs")]
    lines.append("   " + _loglog_text(row, y_name))
    if with_bins and row["bins"]:
        cells = "; ".join(f"[{num(b['x_lo'], 3)}, {num(b['x_hi'], 3)}]: {num(b['y_mean'], 4)}"
                          f" ({num(b['y_std'], 2)})" for b in row["bins"])
        lines.append(f"   mean (std) of y per bin of {row['name']}: {cells}")
    partner = row["residual_partner"]
    if with_bins and partner is not None:
        lines.append(f"   residual y - g({row['name']}) correlates most with {partner['name']} "
                     f"(pearson {num(partner['pearson'], 3)}, spearman "
                     f"{num(partner['spearman'], 3)})")
    return lines


def _loglog_text(row: dict[str, Any], y_name: str) -> str:
    if row["loglog_slope"] is None:
        return "log-log: n/a (x or y is not of one sign without zeros)"
    fitted = (row["loglog_r2"] or 0.0) >= FRACTION_HINT_R2
    fraction = row["loglog_slope_fraction"] if fitted else None
    near = f" (~{fraction})" if fraction is not None else ""
    text = formats.loglog_line(num(row["loglog_slope"], 4), f"{near}, R2 "
                               f"{num(row['loglog_r2'], 4)}, collapse R2 "
                               f"{num(row['loglog_collapse_r2'], 3)}")
    if (row["loglog_r2"] or 0.0) >= POWER_LAW_HINT_R2:
        exponent = fraction if fraction is not None else num(row["loglog_slope"], 4)
        text += f" -> power-law hint: |{y_name}| ~ c*|{row['name']}|^({exponent})"
    return text


def _pairwise_lines(matrix: dict[str, Any]) -> list[str]:
    names = matrix["names"]
    found = []
    for i in range(len(names)):
        for j in range(i + 1, len(names)):
            pearson, spearman = matrix["pearson"][i][j], matrix["spearman"][i][j]
            strength = max(abs(_finite(pearson)), abs(_finite(spearman)))
            found.append((strength, names[i], names[j], pearson, spearman))
    found.sort(key=lambda item: -item[0])
    shown = "; ".join(f"{a} ~ {b}: pearson {num(p, 3)}, spearman {num(s, 3)}"
                      for _, a, b, p, s in found[:SHOWN_PAIRS])
    more = f" (+{len(found) - SHOWN_PAIRS} weaker pairs)" if len(found) > SHOWN_PAIRS else ""
    return [f"Pairwise correlations, strongest first: {shown}{more}"]


def _finite(value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0.0
    return number if math.isfinite(number) else 0.0

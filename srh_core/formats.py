"""The text lines one module writes and the offline proposer reads back.

The offline proposer (:mod:`srh_core.api.offline`) sees only what a model
sees: the text of the messages. Each line it reads is written by a function
here and read by the pattern next to it, so a line is reworded in one place,
for writer and reader at once. ``tests/core/test_formats.py`` runs the real
writers (the prompt builders, the tools) and reads their text back, so a
rewording that loses a fact fails there, not silently in the proposer.

Writers: the task prompt and the progress message (:mod:`srh_core.agent.prompts`),
formula tool results (:mod:`srh_core.tools.formula`, ``power_law_fit``),
``relationship_analysis`` (:mod:`srh_core.tools.analysis.relationship_text`),
the roles of structured variables (:mod:`srh_core.context.structured`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
"""A number as the writers print it (``format(v, ".4g")`` and the like)."""

# ----------------------------------------------------------------- the task prompt
TARGET_PREFIX = "- Target: "
FEATURE_PREFIX = "  - "


def variable_text(name: str, low: str, high: str, note: str = "") -> str:
    """``x1: range [1, 5]``, with `` (note)`` when there is one (a description, a role)."""
    return f"{name}: range [{low}, {high}]" + (f" ({note})" if note else "")


def more_features_line(count: int, names: Sequence[str], unnamed: int) -> str:
    """The task prompt's line for the features not listed one by one."""
    return (f"{FEATURE_PREFIX}... and {count} more: " + ", ".join(names)
            + (f", ... ({unnamed} not named)" if unnamed else ""))


TARGET_LINE = re.compile(rf"^- Target: (\w+): range \[({NUMBER}), ({NUMBER})\]", re.M)
FEATURE_LINE = re.compile(rf"^  - (\w+): range \[({NUMBER}), ({NUMBER})\]", re.M)
VARIABLE_LINE = re.compile(r"^(- Target: |  - )(\w+): range \[[^\]]*\](?: \((.*)\))?$")
"""Groups: the prefix (target or feature), the name, the note."""
MORE_FEATURES_LINE = re.compile(r"^  - \.\.\. and \d+ more: (.+)$", re.M)

OPERATORS_PREFIX = "- Operators allowed: "
MAXSIZE_PREFIX = "- Largest formula: "
GUESS_PREFIX = "- Formula to start from: "


def operators_line(names: Sequence[str]) -> str:
    """``- Operators allowed: + - * / sin (...)``: the run's operator set."""
    return (f"{OPERATORS_PREFIX}{' '.join(names)} (a formula using another operation is not a "
            "candidate)")


def maxsize_line(maxsize: int) -> str:
    return f"{MAXSIZE_PREFIX}{maxsize} nodes (a larger formula is not a candidate)"


def guess_line(formula: str) -> str:
    return f"{GUESS_PREFIX}{formula}"


OPERATORS_LINE = re.compile(r"^- Operators allowed: (.+?) \(", re.M)
MAXSIZE_LINE = re.compile(r"^- Largest formula: (\d+) nodes", re.M)
GUESS_LINE = re.compile(r"^- Formula to start from: (.+)$", re.M)

# ------------------------------------------------------------- the progress message
def progress_line(step: int, max_depth: int, where: str, seconds_left: float | None) -> str:
    """``[Progress] Step 2 of 6 (restart 1/1, branch 1/2); 4 more after it.``"""
    remaining = max_depth - step
    return (f"{PROGRESS_MARK} Step {step} of {max_depth} ({where}); {remaining} more after it"
            + (f"; {seconds_left:.0f}s of run time left." if seconds_left is not None else "."))


def front_header(metric: str) -> str:
    return f"[Pareto front] complexity | train {metric} | validation {metric} | formula"


def front_row(complexity: int | None, train: str, validation: str, formula: str) -> str:
    return f"{complexity} | {train} | {validation} | {formula}"


PROGRESS_MARK = "[Progress]"
STEP_LINE = re.compile(r"\[Progress\] Step (\d+) of (\d+)")
SECONDS_LEFT = re.compile(r"; (\d+)s of run time left\.")
"""Group: the run time left, in whole seconds (absent without a time limit)."""
BRANCH_LINE = re.compile(r"\[Progress\] Step \d+ of \d+ \([^)]*branch (\d+)/(\d+)")
FRONT_ROW = re.compile(rf"^(\d+) \| ({NUMBER}|-) \| ({NUMBER}|-) \| (.+)$", re.M)
"""Groups: complexity, train metric, validation metric ("-" when none), formula."""

# ------------------------------------------------------------- formula tool results
def result_head(title: str, target: str, formula: str) -> list[str]:
    """The first lines of a formula tool's result: ``power_law_fit:`` then ``  y = f``."""
    return [f"{title}:", f"  {target} = {formula}"]


def split_line(split: str, metrics: str) -> str:
    """``  train: mse=..., r2=...`` (``metrics`` from ``diagnostics.metric_line``)."""
    return f"  {split}: {metrics}"


def exponent_item(name: str, value: str, interval: tuple[str, str] | None) -> str:
    return f"{name}: {value}" + (f" [{interval[0]}, {interval[1]}]" if interval else "")


def exponents_line(items: Sequence[str], scale: str) -> str:
    """``power_law_fit``'s key line: each exponent with its 95% interval, and the scale."""
    return f"exponents (95% interval): {', '.join(items)}; scale c={scale}"


POWER_LAW_RESULT = re.compile(r"^power_law_fit:\n  (.+?) = .*\n((?:  .*\n)*?)"
                              r"  exponents \(95% interval\): (.*)$", re.M)
"""Groups: the fitted target, the lines between (metrics), the exponents line's content."""
EXPONENTS_LINE = re.compile(r"^  exponents \(95% interval\): (.*)$", re.M)
EXPONENT_ITEM = re.compile(rf"(\w+): ({NUMBER}) \[({NUMBER}), ({NUMBER})\]")
SCALE = re.compile(rf"scale c=({NUMBER})")
TRAIN_R2 = re.compile(rf"^  train: mse=\S+, r2=({NUMBER})", re.M)

# ------------------------------------------------------------ relationship_analysis
RELATIONSHIP_HEAD = "(the target) on the"
"""In the first line of a relationship_analysis result whose y is the target."""
TARGET_WARNING = " (reads the target!)"


def relationship_head(y_name: str, role: str, rest: str) -> str:
    return f"Relationships with y = {y_name} ({role}) on the {rest}"


def relation_line(rank: int, name: str, warning: str, collapse: str, spread: str,
                  correlations: tuple[str, str], trend: str, rest: str) -> str:
    """One ranked variable: collapse R2, correlations, trend, then ``| x in [lo, hi], ...``."""
    pearson, spearman = correlations
    return (f"{rank}. {name}{warning}: collapse R2 {collapse}±{spread} | pearson {pearson}, "
            f"spearman {spearman} | {trend} | {rest}")


def x_range(low: str, high: str) -> str:
    return f"x in [{low}, {high}]"


def loglog_line(slope: str, rest: str) -> str:
    return f"log-log: slope {slope}{rest}"


def further_variables_line(items: Sequence[str]) -> str:
    """The ranked variables beyond the detailed ones: ``name collapse``, comma-separated."""
    return "  further variables (collapse R2): " + ", ".join(items)


RELATION_LINE = re.compile(
    rf"^\d+\. (\w+): collapse R2 ({NUMBER})\S* \| pearson ({NUMBER}|nan|None), "
    rf"spearman ({NUMBER}|nan|None) \| (\w+)", re.M)
"""Groups: name, collapse R2, pearson, spearman, trend (variables that read the target do
not match: the proposer never uses them)."""
RANKED_LINE = re.compile(rf"^\d+\. (\w+)(?: \(reads the target!\))?: collapse R2 (\S+?)(?:±\S*)? "
                         rf"\|.*?\| x in \[({NUMBER}), ({NUMBER})\]", re.M)
"""Groups: name, collapse R2 text, x low, x high."""
LOGLOG_LINE = re.compile(rf"^\s+log-log: slope ({NUMBER})", re.M)
FURTHER_VARIABLES_LINE = re.compile(r"^  further variables \(collapse R2\): (.+)$", re.M)

# ------------------------------------------------------- roles of structured variables
TIME_NOTE = "[time]"


def relation_note(nodes: int | None) -> str:
    return f"[relation over {nodes} nodes; rows (target, source)]"


def edge_field_note(relation: str) -> str:
    return f"[edge field of {relation}]"


def derivative_note(state: str) -> str:
    return f"[time derivative d{state}/dt of {state}]"


def node_field_note(nodes: int) -> str:
    return f"[node field over {nodes} nodes]"


RELATION_NOTE = re.compile(r"\[relation over (\d+) nodes; rows \(target, source\)\]")
NODE_FIELD_NOTE = re.compile(r"\[node field over (\d+) nodes\]")
EDGE_FIELD_NOTE = re.compile(r"\[edge field of (\w+)\]")
TIME_NOTE_RE = re.compile(re.escape(TIME_NOTE))
DERIVATIVE_NOTE = re.compile(r"\[time derivative d\w+/dt of (\w+)\]")

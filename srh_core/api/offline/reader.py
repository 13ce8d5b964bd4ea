"""What the offline policy reads from a conversation: only what a model sees.

It never touches data arrays or ground truth: everything comes from the
message texts the harness wrote (the task prompt, tool results, progress
messages) and from its own earlier calls. The lines it reads are written and
read in :mod:`srh_core.formats` (one place for writer and reader; the round
trips are tested). Parsing is tolerant: a text it cannot read simply leaves a
fact unknown.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from srh_core import formats

PLAN_HEADER = "Plan of this step, every sample:"
"""Heads the lines of an offline response that list every sample's calls of the step."""
_PLAN_LINE_RE = re.compile(r"^  sample \d+: (.+)$", re.M)
_PLANNED_CALL_RE = re.compile(r"\s*(\w+) ")

EXACT_RELATIVE_MSE = 1e-18
"""Train MSE over the squared target scale at or below which a fit counts as exact."""
MAX_SHOWN_FORMULA_CHARS = 160
"""Front rows print at most this many characters: a row this long may be cut short."""


@dataclass(frozen=True, slots=True)
class Variable:
    name: str
    low: float
    high: float

    @property
    def positive(self) -> bool:
        return self.low > 0

    @property
    def negative(self) -> bool:
        return self.high < 0


@dataclass(frozen=True, slots=True)
class FrontRow:
    complexity: int
    train_mse: float | None
    formula: str

    @property
    def truncated(self) -> bool:
        """The progress message may have cut the formula: it cannot be reused verbatim."""
        return len(self.formula) >= MAX_SHOWN_FORMULA_CHARS


@dataclass(frozen=True, slots=True)
class Exponent:
    """A fitted power-law exponent and its 95% interval."""

    value: float
    low: float
    high: float

    @property
    def width(self) -> float:
        return self.high - self.low

    @property
    def centre(self) -> float:
        """The free estimate (the reported value may be a snapped one)."""
        return (self.low + self.high) / 2


@dataclass(frozen=True, slots=True)
class PowerLawReport:
    """What a ``power_law_fit`` result said: the fitted expression and its exponents."""

    y: str
    exponents: dict[str, Exponent] = field(hash=False)
    scale: float | None = None
    r2: float | None = None

    @property
    def exact(self) -> bool:
        """Whether the fit explained the target to rounding (R2 shown as 1)."""
        return self.r2 is not None and self.r2 >= 1.0


@dataclass(slots=True)
class Relation:
    name: str
    collapse_r2: float
    pearson: float | None
    spearman: float | None
    trend: str
    loglog_slope: float | None = None


@dataclass(slots=True)
class ConversationView:
    """The facts the policy acts on."""

    target: Variable | None = None
    features: list[Variable] = field(default_factory=list)
    step: int = 1
    max_steps: int = 1
    front: list[FrontRow] = field(default_factory=list)
    relations: dict[str, Relation] = field(default_factory=dict)
    tried: set[str] = field(default_factory=set)
    submitted: set[str] = field(default_factory=set)
    power_laws: dict[str, PowerLawReport] = field(default_factory=dict)
    branch: int = 1
    branches: int = 1
    operators: tuple[str, ...] | None = None
    """The run's operator set, PySR's names (None: no restriction)."""
    maxsize: int | None = None
    guesses: list[str] = field(default_factory=list)
    """Formulas the user gave to start from."""

    @property
    def final_step(self) -> bool:
        return self.step >= self.max_steps

    @property
    def best(self) -> FrontRow | None:
        rows = [row for row in self.front if row.train_mse is not None]
        return min(rows, key=lambda row: (row.train_mse, row.complexity)) if rows else None

    def relative_error(self, row: FrontRow | None) -> float | None:
        """Train MSE over the squared scale of the target (None when unknown)."""
        if row is None or row.train_mse is None or self.target is None:
            return None
        scale = max(abs(self.target.low), abs(self.target.high), 1e-300) ** 2
        return row.train_mse / scale

    def exact(self, row: FrontRow | None) -> bool:
        """Whether a front row fits exactly up to rounding (relative to the target's scale)."""
        error = self.relative_error(row)
        return error is not None and error <= EXACT_RELATIVE_MSE

    @property
    def feature_names(self) -> list[str]:
        return [feature.name for feature in self.features]

    def feature(self, name: str) -> Variable | None:
        return next((f for f in self.features if f.name == name), None)


def call_signature(name: str, params: Mapping[str, Any]) -> str:
    """A stable text key of a call, to avoid repeating an identical call."""
    return name + json.dumps(dict(params), sort_keys=True, default=str)


def read_conversation(messages: Sequence[Mapping[str, Any]], parser: Any) -> ConversationView:
    """Build the view from the messages (earliest first)."""
    view = ConversationView()
    for message in messages:
        text = str(message.get("content") or "")
        role = message.get("role")
        if role == "assistant":
            _read_own_calls(view, message, text, parser)
        elif role in ("user", "tool"):
            _read_facts(view, text)
    return view


def _read_own_calls(view: ConversationView, message: Mapping[str, Any], text: str,
                    parser: Any) -> None:
    calls = parser.parse_response(dict(message) if message.get("tool_calls") else text)
    for call in calls:
        view.tried.add(call_signature(call.name, call.params))
        if call.name == "submit_formula":
            view.submitted.add(str(call.params.get("f", "")))
    if PLAN_HEADER in text:
        plan = text[text.index(PLAN_HEADER):]
        for line in _PLAN_LINE_RE.finditer(plan):
            view.tried.update(planned_signatures(line.group(1)))


def planned_signatures(line: str) -> list[str]:
    """Signatures of the calls one plan line lists (``name {json}; name {json}``)."""
    decoder, found, position = json.JSONDecoder(), [], 0
    while (match := _PLANNED_CALL_RE.match(line, position)) is not None:
        try:
            params, position = decoder.raw_decode(line, match.end())
        except ValueError:
            break
        if isinstance(params, dict):
            found.append(call_signature(match.group(1), params))
        position += 2 if line.startswith("; ", position) else 0
    return found


def _read_facts(view: ConversationView, text: str) -> None:
    if (match := formats.TARGET_LINE.search(text)) is not None:
        view.target = Variable(match.group(1), float(match.group(2)), float(match.group(3)))
        view.features = [Variable(m.group(1), float(m.group(2)), float(m.group(3)))
                         for m in formats.FEATURE_LINE.finditer(text)]
        operators = formats.OPERATORS_LINE.search(text)
        view.operators = tuple(operators.group(1).split()) if operators else None
        maxsize = formats.MAXSIZE_LINE.search(text)
        view.maxsize = int(maxsize.group(1)) if maxsize else None
        view.guesses = [m.group(1).strip() for m in formats.GUESS_LINE.finditer(text)]
    if (step := formats.STEP_LINE.search(text)) is not None:
        view.step, view.max_steps = int(step.group(1)), int(step.group(2))
        view.front = [_front_row(match) for match in formats.FRONT_ROW.finditer(text)]
    if (branch := formats.BRANCH_LINE.search(text)) is not None:
        view.branch, view.branches = int(branch.group(1)), int(branch.group(2))
    for match in formats.POWER_LAW_RESULT.finditer(text):
        exponents = {m.group(1): Exponent(float(m.group(2)), float(m.group(3)),
                                          float(m.group(4)))
                     for m in formats.EXPONENT_ITEM.finditer(match.group(3))}
        scale = formats.SCALE.search(match.group(3))
        r2 = formats.TRAIN_R2.search(match.group(2))
        y = match.group(1).strip()
        view.power_laws[y] = PowerLawReport(y, exponents,
                                            _number(scale.group(1)) if scale else None,
                                            _number(r2.group(1)) if r2 else None)
    for match in formats.RELATION_LINE.finditer(text):
        relation = Relation(match.group(1), float(match.group(2)), _number(match.group(3)),
                            _number(match.group(4)), match.group(5))
        slope = formats.LOGLOG_LINE.search(text, match.end())
        next_item = formats.RELATION_LINE.search(text, match.end())
        if slope is not None and (next_item is None or slope.start() < next_item.start()):
            relation.loglog_slope = float(slope.group(1))
        view.relations[relation.name] = relation


def _front_row(match: re.Match[str]) -> FrontRow:
    return FrontRow(int(match.group(1)), _number(match.group(2)), match.group(4).strip())


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if value == value else None

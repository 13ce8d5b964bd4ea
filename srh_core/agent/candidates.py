"""From tool results to candidates, and the choice of the continuing sample.

Formula tools return one common evaluation shape::

    {"formula": str, "is_candidate": bool, "target": str,
     "metrics": {"train": {...}, "validation": {...}},
     "all_formulas": [<same shape>, ...]}          # optional alternatives

The harness trusts the metrics (the evaluator computed them) but not the
structure: it re-parses every formula, computes complexity and canonical key
itself, and re-checks eligibility (the formula must not use the target).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from srh_core.ranking import RankingPolicy, SortKey
from srh_core.types import CandidateRecord, ToolCallResult, json_value
from srh_engine import EngineError, canonical_key, complexity, parse, symbols

logger = logging.getLogger("srh.agent")

_SKIPPED_DETAILS = frozenset({"formula", "is_candidate", "all_formulas", "metrics", "diagnostics",
                              "data_split_results"})  # the reference's view of metrics


def evaluation_entries(result: ToolCallResult) -> Iterator[Mapping[str, Any]]:
    """Yield the evaluation-shaped entries of one successful tool result."""
    if not result.ok or not isinstance(result.result, Mapping):
        return
    payload = result.result
    if "formula" in payload and "metrics" in payload:
        yield payload
    for entry in payload.get("all_formulas") or []:
        if isinstance(entry, Mapping) and "formula" in entry and "metrics" in entry:
            yield entry


def is_evaluation(result: ToolCallResult) -> bool:
    """Whether a result carries formula metrics (as opposed to analysis output)."""
    return next(evaluation_entries(result), None) is not None


LOGGED_FORMULA_CHARS = 200
"""A formula that does not parse is logged up to this many characters (a polynomial fit
of several inputs can be thousands)."""


def candidate_from_entry(
    entry: Mapping[str, Any], node_id: str, target: str | None, tool: str | None
) -> CandidateRecord | None:
    """Build a CandidateRecord from one evaluation entry, or None when not eligible."""
    if not entry.get("is_candidate"):
        return None
    if target is not None and entry.get("target", target) != target:
        return None

    try:
        expression = parse(str(entry["formula"]))
    except EngineError as error:
        text = str(entry.get("formula"))
        shown = text if len(text) <= LOGGED_FORMULA_CHARS else \
            f"{text[:LOGGED_FORMULA_CHARS]}... ({len(text)} characters)"
        logger.warning("Candidate formula %r does not parse: %s", shown, error)
        return None
    if target is not None and target in symbols(expression):
        return None
    details = {key: value for key, value in entry.items() if key not in _SKIPPED_DETAILS}
    details.update(metrics=json_value(entry.get("metrics") or {}),
                   complexity=complexity(expression), canonical_key=canonical_key(expression),
                   tool=tool)
    return CandidateRecord(formula=str(entry["formula"]), node_id=node_id, details=details)


def sample_candidates(
    calls: Sequence[Any], results: Sequence[ToolCallResult], node_id: str, target: str | None
) -> list[CandidateRecord]:
    """Every eligible candidate one sample's tool results produced, in call order."""
    candidates = []
    for call, result in zip(calls, results, strict=False):
        for entry in evaluation_entries(result):
            record = candidate_from_entry(entry, node_id, target, getattr(call, "name", None))
            if record is not None:
                candidates.append(record)
    return candidates


class SampleResults(list[list[ToolCallResult]]):
    """Tool results grouped by sample, carrying each sample's candidates once computed.

    The hooks that take a ``results_list`` (``collect_candidates``,
    ``update_conversation``) get one of these from the step functions, so a
    sample's formulas are parsed once per step, not once per hook; a list
    without ``candidates`` (a subclass's own) is read the slow way.
    """

    def __init__(self, results: Iterable[Sequence[ToolCallResult]],
                 candidates: Sequence[Sequence[CandidateRecord]] | None = None) -> None:
        super().__init__(list(group) for group in results)
        self.candidates = None if candidates is None else [list(c) for c in candidates]
        if self.candidates is not None and len(self.candidates) != len(self):
            raise ValueError(f"{len(self)} samples of results but {len(self.candidates)} of "
                             "candidates.")


def carried_candidates(results_list: Sequence[Sequence[ToolCallResult]]
                       ) -> list[list[CandidateRecord]] | None:
    """The candidates ``results_list`` carries (a :class:`SampleResults`), else None."""
    candidates = getattr(results_list, "candidates", None)
    return None if candidates is None else [list(c) for c in candidates]


def choose_sample(
    candidates_per_sample: Sequence[Sequence[CandidateRecord]],
    errors_per_sample: Sequence[int],
    policy: RankingPolicy,
) -> int:
    """Index (0-based) of the sample the branch continues with.

    The sample whose best candidate ranks best wins; ties (and samples
    without candidates) go to fewer errors (failed calls and unreadable
    calls), then the lower index.
    """

    def key(index: int) -> tuple[int, SortKey | tuple[()], int, int]:
        keys = [k for c in candidates_per_sample[index] if (k := policy.sort_key(c)) is not None]
        errors = errors_per_sample[index]
        return (0, min(keys), errors, index) if keys else (1, (), errors, index)

    return min(range(len(errors_per_sample)), key=key)

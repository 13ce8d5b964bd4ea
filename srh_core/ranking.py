"""The ranking rules, written once so every runtime agrees bit for bit.

- The ranking metric of a candidate is ``ranking_metric`` on the validation
  split when the candidate has validation metrics, else on train; it is
  negated when ``larger_is_better``.
- A candidate whose metric or complexity is missing or non-finite stays in
  the log but is never ranked.
- Sort key: ``(metric, complexity, node_id, canonical_key)``. The first two
  are the documented key; the last two only make ties deterministic.
- The ranked list holds one entry per canonical key (the best-ranked one),
  so a formula found by two branches is listed once.
- Pareto front: walk the ranked list and keep each candidate whose
  complexity is strictly lower than that of every candidate kept before.
- Best candidate (the formula a run reports), by the ``selection`` setting:
  ``"accuracy"`` takes the first of the ranked list (the lowest error);
  ``"best"`` (the default) takes PySR's "best" rule over the Pareto front,
  see :func:`select_best`. The ranked list and the front do not change.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import srh_engine as engine
from srh_core.types import CandidateRecord, SearchResult, finite_float
from srh_engine.fitting import free_constants
from srh_engine.search.selection import LOSS_FACTOR, LOSS_FLOOR, steepest

SortKey = tuple[float, int, str, str]
T = TypeVar("T")
Selection = Literal["best", "accuracy"]
SELECTIONS: tuple[Selection, ...] = ("best", "accuracy")

#: "best" considers the front candidates whose loss is within this factor of the lowest loss.
SELECTION_LOSS_FACTOR = LOSS_FACTOR
#: Losses (unexplained share of the target's variance) below this count as equally exact
#: (srh_engine.search.selection, where the rule's arithmetic lives).
SELECTION_LOSS_FLOOR = LOSS_FLOOR


@dataclass(frozen=True, slots=True)
class RankingPolicy:
    """Which metric ranks candidates, and in which direction.

    Attributes:
        metric: Metric name looked up in each split's metric dict.
        larger_is_better: True for metrics such as r2.
    """

    metric: str = "mse"
    larger_is_better: bool = False

    def ranking_split(self, candidate: CandidateRecord) -> str:
        """Return "validation" when the candidate has validation metrics, else "train"."""
        return "validation" if candidate.split_metrics("validation") else "train"

    def metric_value(self, candidate: CandidateRecord) -> float | None:
        """Return the signed ranking metric (smaller is better), or None."""
        value = finite_float(candidate.metric(self.metric, self.ranking_split(candidate)))
        if value is None:
            return None
        return -value if self.larger_is_better else value

    def sort_key(self, candidate: CandidateRecord) -> SortKey | None:
        """Return the full sort key, or None when the candidate is unrankable."""
        metric = self.metric_value(candidate)
        complexity = candidate.complexity
        if metric is None or complexity is None:
            return None
        return (metric, int(complexity), candidate.node_id, candidate.canonical_key)


def rank_candidates(
    candidates: Iterable[CandidateRecord], policy: RankingPolicy
) -> list[CandidateRecord]:
    """Rank candidates: rankable only, sorted by key, one per canonical key."""
    keyed = [(key, c) for c in candidates if (key := policy.sort_key(c)) is not None]
    keyed.sort(key=lambda item: item[0])
    seen: set[str] = set()
    ranked: list[CandidateRecord] = []
    for _, candidate in keyed:
        if candidate.canonical_key not in seen:
            seen.add(candidate.canonical_key)
            ranked.append(candidate)
    return ranked


def front_indices(ordered: Sequence[T], size: Callable[[T], float | None]) -> list[int]:
    """Indices of the Pareto front of a list ordered best first: walk it and keep each item
    whose ``size`` is strictly lower than that of every item kept before (None: never kept).

    The one front of the harness: the candidate pool's (``size`` the complexity) and any
    other trade-off of accuracy against size a tool reports.
    """
    indices: list[int] = []
    lowest = float("inf")
    for index, item in enumerate(ordered):
        measure = size(item)
        if measure is not None and measure < lowest:
            indices.append(index)
            lowest = measure
    return indices


def pareto_indices(ranked: Sequence[CandidateRecord]) -> list[int]:
    """Indices of the Pareto front in an already ranked list."""
    return front_indices(ranked, _complexity)


def pareto_front(ranked: Sequence[CandidateRecord]) -> list[CandidateRecord]:
    """The Pareto front of an already ranked list, best first."""
    return [ranked[index] for index in pareto_indices(ranked)]


def _complexity(candidate: CandidateRecord) -> int | None:
    return candidate.complexity


def selection_loss(candidate: CandidateRecord, policy: RankingPolicy) -> float | None:
    """The loss "best" compares: ``1 - r2`` on the ranking split, floored; None without r2."""
    r2 = finite_float(candidate.metric("r2", policy.ranking_split(candidate)))
    return None if r2 is None else max(1.0 - r2, SELECTION_LOSS_FLOOR)


def select_best(ranked: Sequence[CandidateRecord], policy: RankingPolicy,
                selection: Selection = "best") -> int | None:
    """The index in ``ranked`` of the formula a run reports as its best.

    ``"accuracy"``: 0, the lowest ranking metric. ``"best"`` (PySR's rule):
    walk the Pareto front from the simplest candidate up (by
    :func:`selection_complexity`); each candidate's score is
    ``-d log(loss) / d complexity`` against the next simpler one
    (the simplest against predicting the mean: loss 1, complexity 0), where
    loss is ``1 - r2`` on the ranking split (the share of variance left
    unexplained, floored at :data:`SELECTION_LOSS_FLOOR`). Among the front
    candidates whose loss is within :data:`SELECTION_LOSS_FACTOR` of the
    lowest, the highest score wins (the simpler one on a tie). A front
    candidate without a finite r2 makes the rule fall back to 0.

    Args:
        ranked: The ranked list (:func:`rank_candidates`).
        policy: The ranking policy (which split the losses are read on).
        selection: "best" or "accuracy".

    Returns:
        An index into ``ranked``, or None when it is empty.
    """
    if not ranked:
        return None
    front = pareto_indices(ranked)
    losses = _front_losses(ranked, front, policy)
    if selection == "accuracy" or losses is None:
        return 0
    complexities = [selection_complexity(ranked[i]) for i in front]
    return front[steepest(complexities, losses, SELECTION_LOSS_FACTOR)]


def ranked_result(ranked: Sequence[CandidateRecord], policy: RankingPolicy,
                  selection: Selection, *, status: str, progress: str, run_id: str,
                  stop_reason: str | None, totals: dict[str, Any]) -> SearchResult:
    """A run's :class:`SearchResult` over its ranked pool: the front and the best by
    ``selection`` (both stores build their result here, so both runtimes report alike)."""
    return SearchResult(
        status=status, progress=progress, candidates=list(ranked),  # type: ignore[arg-type]
        pareto_front=pareto_indices(ranked),
        best_candidate=select_best(ranked, policy, selection),
        run_id=run_id, stop_reason=stop_reason, totals=totals)


def selection_complexity(candidate: CandidateRecord) -> int:
    """The complexity "best" scores by: closed numeric subtrees count as one node.

    ``q1/(4*pi*epsilon*r**2)`` then counts as ``q1/(12.57*epsilon*r**2)``: writing a
    constant exactly must not make a formula look more complex than the number it
    replaces. (The front and the ranking keep the plain node count.)
    """
    complexity = int(candidate.complexity or 0)
    try:
        expression = engine.parse(candidate.formula)
    except engine.EngineError:
        return complexity
    return complexity - (engine.complexity(expression)
                         - engine.complexity(engine.fold_constants(expression)))


def _front_losses(ranked: Sequence[CandidateRecord], front: Sequence[int],
                  policy: RankingPolicy) -> list[float] | None:
    losses = [selection_loss(ranked[index], policy) for index in front]
    known = [loss for loss in losses if loss is not None]
    return known if len(known) == len(losses) else None


@dataclass(frozen=True, slots=True)
class ExactFitRule:
    """When the best candidate counts as exact, so the search may stop early.

    The rule reads the candidate's *train* metric. The default, train
    ``r2 >= 1.0``, holds when the residual sum of squares is below about
    1e-16 of the target's variance, i.e. the formula is exact up to
    floating-point rounding (a relative rms error near 1e-8). A candidate
    that is not finite on every train row never counts as exact, whatever
    its metric on the rows where it is. ``threshold = 0.0`` with ``mse``
    stops only on a fit exact to the last bit; an unreachable threshold
    (``r2`` above 1) disables early stopping.
    """

    metric: str = "r2"
    threshold: float = 1.0
    larger_is_better: bool = True

    def reached(self, candidate: CandidateRecord | None) -> bool:
        if candidate is None:
            return False
        train = candidate.split_metrics("train")
        n, n_finite = train.get("n_samples"), train.get("n_finite")
        if isinstance(n, int) and isinstance(n_finite, int) and n_finite < n:
            return False
        value = finite_float(train.get(self.metric))
        if value is None:
            return False
        if not (value >= self.threshold if self.larger_is_better else value <= self.threshold):
            return False
        # as many free values as rows pass through any data
        return not (isinstance(n, int) and fitted_constants(candidate.formula) >= n)


def fitted_constants(formula: str) -> int:
    """How many numbers of ``formula`` a fit could have chosen (not structural integers
    or named constants, :func:`srh_engine.fitting.free_constants`); 0 when it does not
    parse."""
    try:
        return len(free_constants(engine.parse(formula))[1])
    except engine.EngineError:
        return 0

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
- Best candidate: the first of the ranked list.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from srh_core.types import CandidateRecord, finite_float

SortKey = tuple[float, int, str, str]


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


def pareto_indices(ranked: Sequence[CandidateRecord]) -> list[int]:
    """Indices of the Pareto front in an already ranked list."""
    indices: list[int] = []
    lowest = float("inf")
    for index, candidate in enumerate(ranked):
        complexity = candidate.complexity
        if complexity is not None and complexity < lowest:
            indices.append(index)
            lowest = complexity
    return indices


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
        return value >= self.threshold if self.larger_is_better else value <= self.threshold

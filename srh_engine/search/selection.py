"""PySR's "best" rule: the formula whose loss falls fastest with complexity.

One implementation for the search's own front (:attr:`ExpressionSearchResult.selected
<srh_engine.search.ExpressionSearchResult.selected>`) and a run's reported best
(:func:`srh_core.ranking.select_best`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["LOSS_FACTOR", "LOSS_FLOOR", "steepest"]

LOSS_FACTOR = 1.5
"""Only formulas whose loss is within this factor of the lowest may be chosen."""
LOSS_FLOOR = 1e-14
"""Losses (unexplained share of the target's variance) below this count as equally exact:
r2 itself is rounded to ~1e-16, so smaller differences are floating-point noise."""


def steepest(complexities: Sequence[int], losses: Sequence[float],
             factor: float = LOSS_FACTOR) -> int:
    """Position of the chosen formula on a Pareto front.

    Walk the front from the simplest formula up; each formula's score is
    ``-d log(loss) / d complexity`` against the next simpler one (the simplest
    against predicting the mean: loss 1, complexity 0). Among the formulas whose
    loss is within ``factor`` of the lowest, the highest score wins (the simpler
    on a tie).

    Args:
        complexities: Each formula's complexity.
        losses: Each formula's loss, the unexplained share of the variance (floored at
            :data:`LOSS_FLOOR` here).
        factor: The eligibility factor.

    Returns:
        An index into the inputs (0 for an empty or one-formula front).
    """
    floored = [max(float(loss), LOSS_FLOOR) for loss in losses]
    if not floored:
        return 0
    eligible = factor * min(floored)
    walk = sorted(zip(complexities, floored, range(len(floored)), strict=True))
    best, best_score = 0, -math.inf
    previous_loss, previous_complexity = 1.0, 0
    for complexity, loss, index in walk:
        score = -math.log(loss / previous_loss) / max(complexity - previous_complexity, 1)
        if loss <= eligible and score > best_score:
            best, best_score = index, score
        previous_loss, previous_complexity = loss, complexity
    return best

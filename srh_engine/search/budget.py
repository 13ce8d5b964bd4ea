"""The search's budget: a wall-clock deadline and, optionally, a count of evaluations.

Phases get shares of what is left (:meth:`Budget.share`). With an
evaluation count the search is deterministic for a seed: every phase stops
at a count, never at a time, as long as the clock does not run out first.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

__all__ = ["Budget", "Counter"]


@dataclass(slots=True)
class Counter:
    """Expressions evaluated so far in one search."""

    value: int = 0


@dataclass(frozen=True, slots=True)
class Budget:
    """Stop at ``deadline`` (``time.monotonic()``) or when ``counter`` reaches ``until``."""

    deadline: float
    counter: Counter
    until: int | None = None

    def over(self, pending: int = 0) -> bool:
        """Whether the budget is spent (``pending``: evaluations not yet counted)."""
        if time.monotonic() > self.deadline:
            return True
        return self.until is not None and self.counter.value + pending >= self.until

    def share(self, fraction: float) -> Budget:
        """A sub-budget of ``fraction`` of what is left (time and evaluations)."""
        now = time.monotonic()
        deadline = now + fraction * max(self.deadline - now, 0.0)
        until = None if self.until is None else \
            self.counter.value + int(fraction * max(self.until - self.counter.value, 0))
        return Budget(deadline, self.counter, until)

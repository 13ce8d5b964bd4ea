"""PySR's nested_constraints and size constraints in the native search."""

from __future__ import annotations

import numpy as np
import pytest

import srh_engine as engine
from srh_engine.constraints import constraint_violations
from srh_engine.search import search

RNG = np.random.default_rng(11)
X1, X2 = RNG.uniform(0.5, 2.0, 300), RNG.uniform(0.5, 2.0, 300)
LIMITS = {"nested_constraints": {"sin": {"*": 0}}, "constraints": {"sin": 1}}


def test_the_search_keeps_pysr_constraints():
    y = np.sin(X1 * X2) + X1
    result = search(np.column_stack([X1, X2]), y, ["a", "b"], time_budget=3, seed=0,
                    workers=1, **LIMITS)
    assert result.front
    assert all(not constraint_violations(entry.expression, *LIMITS.values())
               for entry in result.front), [e.formula for e in result.front]
    free = search(np.column_stack([X1, X2]), y, ["a", "b"], time_budget=3, seed=0, workers=1)
    assert any(constraint_violations(entry.expression, *LIMITS.values())
               for entry in free.front)  # without them the front has such formulas


@pytest.mark.parametrize(("formula", "sizes", "broken"), [
    ("x**2", {"square": 1}, []), ("(x + y)**2", {"square": 1}, 1), ("-x", {"neg": 1}, []),
    ("x/(y + 1)", {"/": (-1, 1)}, 1), ("x/(y + 1)", {"/": [1, -1]}, [])],
    ids=["square-leaf", "square-sum", "neg", "divisor", "dividend"])
def test_sizes_count_engine_nodes_as_pysr_operators(formula, sizes, broken):
    found = constraint_violations(engine.parse(formula), None, sizes)
    assert (len(found) == broken) if isinstance(broken, int) else found == broken

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
    free = search(np.column_stack([X1, X2]), y, ["a", "b"], time_budget=20, seed=0,
                  workers=1)  # ends once exact (about 1 s unloaded)
    assert any(constraint_violations(entry.expression, *LIMITS.values())
               for entry in free.front)  # without them the front has such formulas


@pytest.mark.parametrize(("formula", "sizes", "broken"), [
    ("x**2", {"square": 1}, []), ("(x + y)**2", {"square": 1}, 1), ("-x", {"neg": 1}, []),
    ("x/(y + 1)", {"/": (-1, 1)}, 1), ("x/(y + 1)", {"/": [1, -1]}, [])],
    ids=["square-leaf", "square-sum", "neg", "divisor", "dividend"])
def test_sizes_count_engine_nodes_as_pysr_operators(formula, sizes, broken):
    found = constraint_violations(engine.parse(formula), None, sizes)
    assert (len(found) == broken) if isinstance(broken, int) else found == broken


ENUMERATED = [
    ({"sin": {"*": 0, "sin": 0}}, {"sin": 1}),
    ({"exp": {"exp": 0}, "/": {"exp": 1}}, {"square": 3, "/": [-1, 3]}),
    (None, {"*": [3, 3], "exp": 4, "^": [1, 1]}),
]


@pytest.mark.parametrize(("limits", "inputs"), [(ENUMERATED[0], None), (ENUMERATED[1], "a - b"),
                                               (ENUMERATED[2], "a - b")],
                         ids=["sin", "exp-div-expression-input", "sizes-expression-input"])
def test_the_enumeration_never_keeps_a_form_that_breaks_the_constraints(limits, inputs):
    from srh_engine.nodes import Symbol
    from srh_engine.search.enumeration import Enumeration
    from srh_engine.search.operators import resolve_operators, to_expression

    binary, unary = resolve_operators(["+", "-", "*", "/", "sin", "exp", "square", "sqrt"])
    leaves = [Symbol("a"), Symbol("b")] if inputs is None else [engine.parse(inputs),
                                                                  Symbol("c")]
    columns = np.column_stack([X1[:32], X2[:32]])
    targets = np.stack([np.sin(X1[:32] * X2[:32])])

    def forms(constrained: bool) -> list:
        enumeration = Enumeration(columns, targets, binary, unary, seed=0,
                                  level_cap=300, limits=limits if constrained else None,
                                  inputs=leaves)
        for level in range(2, 8):
            enumeration.grow(level, lambda _: False)
        trees = [enumeration.tree(i) for size in enumeration.levels
                 for i in enumeration.forms_of_size(size)]
        trees += [enumeration.tree(item.recipe) for item in enumeration.best]
        return [to_expression(tree, leaves) for tree in trees]

    broken = [e for e in forms(True) if constraint_violations(e, *limits)]
    assert broken == []
    # the same enumeration without the limits keeps many forms that break them
    assert sum(bool(constraint_violations(e, *limits)) for e in forms(False)) > 30

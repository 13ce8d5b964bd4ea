"""A target that is arcsin, arccos, arctan or tanh of a simpler form: the form is searched
for the function's inverse of the target (``sin(y)``, ``cos(y)``, ``tan(y)``,
``arctanh(y)``), on targets inside the inverse's range only."""

from __future__ import annotations

import numpy as np
import pytest

from srh_engine import evaluate, parse
from srh_engine.search import search
from srh_engine.search.views import INVERSES, target_transforms

pytestmark = pytest.mark.usefixtures("blas_one_thread")

RNG = np.random.default_rng(11)


def test_each_bounded_inverse_only_inside_its_range():
    angle = RNG.uniform(0.2, 1.4, 200)
    assert {"sin", "tan", "cos", "arctanh"} - set(target_transforms(angle / 1.5)) == set()
    assert {"sin", "tan", "cos"} <= set(target_transforms(angle))
    assert "arctanh" not in target_transforms(angle)  # tanh never reaches 1.4
    signed = angle - 0.8
    assert "cos" not in target_transforms(signed) and "sin" in target_transforms(signed)
    wide = RNG.uniform(0.2, 2.0, 200)
    assert {"sin", "tan", "arctanh"} & set(target_transforms(wide)) == set()
    assert "cos" in target_transforms(wide)
    assert {"sin", "tan", "cos", "arctanh"} & set(target_transforms(wide + 2.0)) == set()
    tiny = 0.01 * angle  # arcsin(y) is y within 2e-5 there: nothing to gain
    assert {"sin", "tan", "cos", "arctanh"} & set(target_transforms(tiny)) == set()
    for name, values in target_transforms(angle / 1.5).items():
        assert np.allclose(INVERSES[name](values), angle / 1.5), name


@pytest.mark.parametrize("truth", ["arcsin(a/(a + b))", "arccos(a*b/5)", "arctan(a*b)",
                                   "tanh(a/b)"])
def test_a_bounded_function_of_a_simple_form_is_found(truth):
    expression = parse(truth)
    columns = {"a": RNG.uniform(0.5, 2.0, 400), "b": RNG.uniform(0.5, 2.0, 400)}
    y = np.asarray(evaluate(expression, columns), dtype=float)
    X = np.column_stack([columns["a"], columns["b"]])
    result = search(X, y, ["a", "b"], time_budget=60, seed=0, workers=1,
                    max_evaluations=20000)
    fresh = {"a": RNG.uniform(0.5, 2.0, 200), "b": RNG.uniform(0.5, 2.0, 200)}
    want = np.asarray(evaluate(expression, fresh), dtype=float)
    errors = []
    for entry in result.front:
        got = np.asarray(evaluate(parse(entry.formula), fresh), dtype=float)
        errors.append(float(np.max(np.abs(got - want) / np.abs(want))))
    assert min(errors) < 1e-6, [entry.formula for entry in result.front][-3:]


def test_an_inverse_around_its_own_function_is_written_as_the_argument():
    from srh_engine.rendering import to_str
    from srh_engine.search.core import _unfolded
    from srh_engine.search.results import FrontEntry
    from srh_engine.transform import complexity

    a, b = RNG.uniform(1.0, 2.0, 100), RNG.uniform(3.0, 4.0, 100)  # a/b - 1 < 0
    values = {"a": a, "b": b}

    def written(text):
        expression = parse(text)
        entry = FrontEntry(expression, complexity(expression), 0.0, 1.0)
        return to_str(_unfolded(entry, values, merge=False).expression)

    assert written("arccos(cos(a/b - 1))*b") == "(1 - a/b)*b"  # arccos(cos(w)) = |w|
    assert written("arcsin(sin(a/b))*b") == "a/b*b"
    assert written("arcsin(sin(a*b))") == "arcsin(sin(a*b))"  # a*b beyond pi/2: kept
    assert written("arcsin(0.5*sin(a))") == "arcsin(0.5*sin(a))"  # a real slope: kept

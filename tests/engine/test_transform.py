"""Tree queries and rewrites: folding, replace, parameters, complexity, symbols."""

from __future__ import annotations

import numpy as np
import pytest

from srh_engine import (
    Binary,
    GroupedParameter,
    Number,
    Parameter,
    Symbol,
    bind_parameters,
    complexity,
    copy,
    count_parameters,
    fold_constants,
    param,
    parameter_values,
    parse,
    replace,
    symbols,
    unbound_parameters,
)

x, y = Symbol("x"), Symbol("y")

FOLDS = [
    ("(2 + 3)*x", "5*x"),
    ("2*x*3", "2*x*3"),
    ("x*(2*3)", "x*6"),
    ("2**3 + x", "8 + x"),
    ("2**-1 + x", "0.5 + x"),
    ("1/4*x", "0.25*x"),
    ("sin(0)*x + -(2)", "0.0*x - 2"),
    ("log(0) + x", "log(0) + x"),
    ("2*pi*x", "6.283185307179586*x"),
    ("(1 + 1.5)*x", "2.5*x"),
    ("-(3 - 5)*x", "2*x"),
]


@pytest.mark.parametrize(("source", "folded"), FOLDS, ids=[f[0] for f in FOLDS])
def test_fold_constants(source: str, folded: str) -> None:
    assert fold_constants(parse(source)).to_str() == folded
    assert parse(source).fold_constants().to_str() == folded


def test_fold_constants_keeps_parameters_and_symbols() -> None:
    expression = parse('param("a", 2.0)*3 + x*1')
    assert fold_constants(expression) == expression


def test_replace_is_identity_based() -> None:
    first, second = Symbol("x"), Symbol("x")
    expression = Binary("+", first, Binary("*", Number(2), second))
    replaced = replace(expression, second, y)
    assert replaced == Binary("+", x, Binary("*", Number(2), y))
    assert replaced.left is first
    assert expression.replace(Symbol("z"), y) is expression


def test_copy_is_deep_and_equal() -> None:
    expression = parse('sin(x)*param("a", 1.0) + grouped_param(g, name="k")')
    duplicate = copy(expression)
    assert duplicate == expression and duplicate is not expression
    originals = {id(node) for node in expression.iter_preorder()}
    assert not originals & {id(node) for node in duplicate.iter_preorder()}
    assert expression.copy() == expression


def test_bind_and_unbound_parameters() -> None:
    expression = parse('param("b")*x + param("a")*param("b") + grouped_param(g, name="k")')
    assert unbound_parameters(expression) == ["b", "a", "k"]
    bound = bind_parameters(expression, {"a": 1.5, "b": 2, "k": {"u": 1.0}, "unused": 3.0})
    assert unbound_parameters(bound) == []
    assert parameter_values(bound) == {"b": 2.0, "a": 1.5, "k": {"u": 1.0}}
    assert bound.unbound_parameters() == [] and expression.parameter_values() == {}


def test_bind_scalar_to_grouped_family_sets_default() -> None:
    bound = bind_parameters(GroupedParameter(Symbol("g"), "k"), {"k": 2.0})
    assert bound == GroupedParameter(Symbol("g"), "k", default=2.0)


def test_count_parameters() -> None:
    expression = parse('param("a")*x + param("a") + param("b", 1.0)')
    assert count_parameters(expression) == 2
    grouped = parse('grouped_param(g, name="k")*x + param("c")')
    assert count_parameters(grouped) == 2
    assert count_parameters(grouped, {"g": np.array([1, 2, 2, 5])}) == 4
    assert count_parameters(grouped, parameters={"k": {1: 1.0, 2: 2.0}}) == 3
    assert grouped.count_parameters({"x": 1.0}) == 2


COMPLEXITY = [
    ("x", 1),
    ("-2", 1),
    ("-x", 2),
    ("x + 1", 3),
    ("sin(2*x)", 4),
    ("arctan2(y, x)", 3),
    ('param("a")*exp(-param("b")*x) + param("c")', 9),
    ('grouped_param(g, name="k")*x', 4),
]


@pytest.mark.parametrize(("source", "expected"), COMPLEXITY, ids=[c[0] for c in COMPLEXITY])
def test_complexity_counts_every_node(source: str, expected: int) -> None:
    assert complexity(parse(source)) == expected
    assert parse(source).complexity() == expected


def test_symbols_in_first_appearance_order() -> None:
    expression = parse('y*sin(x) + param("a")*x + pi + grouped_param(g)')
    assert symbols(expression) == ("y", "x", "g")
    assert expression.symbols() == ("y", "x", "g")


def test_traversal_orders() -> None:
    expression = parse("x + 2*y")
    assert [type(n).__name__ for n in expression.iter_preorder()] == [
        "Binary", "Symbol", "Binary", "Number", "Symbol"]
    assert [type(n).__name__ for n in expression.iter_postorder()] == [
        "Symbol", "Number", "Symbol", "Binary", "Binary"]
    assert expression.operands == (x, Binary("*", Number(2), y))


def test_transforms_work_on_trees_deeper_than_the_recursion_limit() -> None:
    expression = x
    for _ in range(3000):
        expression = expression + 1
    assert complexity(expression) == 6001
    assert fold_constants(expression) == expression
    assert bind_parameters(expression * param("a"), {"a": 2.0}).operands[1] == Parameter("a", 2.0)

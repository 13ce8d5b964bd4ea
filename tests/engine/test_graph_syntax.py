"""Indexed syntax: parsing, sugar, rendering, keys, and the parser's limits."""

from __future__ import annotations

import pytest

import srh_engine as engine
from srh_engine import Index, Indexed, ParseError, Reduction, Symbol
from srh_engine.parser import MAX_DEPTH, MAX_NODES
from srh_engine.source import MAX_PAREN_DEPTH, MAX_SOURCE_LENGTH


@pytest.mark.parametrize("text", [
    "x[i]", "A[i, j]", "sum[j](A[i, j], w[i, j]*sin(x[j] - x[i]))", "sum[j](x[i]*x[j])",
    "sum[j, k](T[i, j, k], x[j]*x[k])", "gather(A[i, j], x[i] + x[j])",
    "gather(A[i, j], x[i] + x[j])[i, j]", "(x + y)[i]", "sum[j](A[i, j] + 0.5*B[i, j], x[j])",
    "delay(x, 0.5)", 'param("a")*delay(x, param("tau", 1.0))', "-x[i]**2",
], ids=lambda text: text[:30])
def test_round_trip_through_text(text: str) -> None:
    expression = engine.parse(text)
    assert engine.parse(engine.to_str(expression)) == expression
    assert engine.to_str(expression, latex=True)


def test_sum_builds_a_reduction_bound_by_its_relation() -> None:
    expression = engine.parse("sum[j](A[i, j], x[j])")
    assert expression == Reduction((Index("j"),), Indexed(Symbol("x"), (Index("j"),)),
                                   Indexed(Symbol("A"), (Index("i"), Index("j"))))


@pytest.mark.parametrize(("sugar", "lowered"), [
    ("aggr(A * targ(x) * sour(x))", "sum[j](A[i, j], x[i]*x[j])"),
    ("aggr(A, targ(x) * sour(x))", "sum[j](A[i, j], x[i]*x[j])"),
    ("aggr(A, targ(A, x) * sour(A, x))", "sum[j](A[i, j], x[i]*x[j])"),
    ("aggr(A, sour(x**2) - targ(x))", "sum[j](A[i, j], x[j]**2 - x[i])"),
    ("x[i] + aggr(A, sour(x))", "x[i] + sum[j](A[i, j], x[j])"),
    ("aggr(A, sour(aggr(A, sour(x))))", "sum[j](A[i, j], sum[j1](A[j, j1], x[j1]))"),
    ("aggr(A1 + A2, sour(x))", "sum[j](A1[i, j] + A2[i, j], x[j])"),
], ids=["product", "two-argument", "explicit-relation", "expression", "node-wise",
        "nested", "relation-algebra"])
def test_aggr_sugar_lowers_to_indexed_sums(sugar: str, lowered: str) -> None:
    assert engine.parse(sugar) == engine.parse(lowered)
    assert engine.to_str(engine.parse(sugar)) == engine.to_str(engine.parse(lowered))


def test_builders_match_the_parser() -> None:
    A, x = Symbol("A"), Symbol("x")
    assert engine.aggr(A * engine.targ(x) * engine.sour(x)) == \
        engine.parse("aggr(A * targ(x) * sour(x))")
    assert engine.desugar(engine.Aggregate(A, engine.sour(x))) == engine.parse("aggr(A, sour(x))")
    assert engine.reduction("j", Indexed(x, ("j",))) == engine.parse("sum[j](x[j])")
    assert engine.gather(Indexed(A, ("i", "j")), 1) == engine.parse("gather(A[i, j], 1)")
    assert engine.delay(x, 2) == engine.parse("delay(x, 2)")


@pytest.mark.parametrize(("text", "construct"), [
    ("x[0]", "subscript"), ("x[0:10]", "subscript"), ("x[i + 1]", "subscript"),
    ("x[i, i]", "subscript"), ("x[__i]", "subscript"), ("sum[j]", "reduction"),
    ("sum(x)", "reduction"), ("sum[j](A[i, j], x, y)", "argument count"),
    ("sum[j](f=x)", "keyword argument"), ("sour(x)", "structure"), ("targ(A, x)", "structure"),
    ("gather(x)", "argument count"), ("delay(x)", "argument count"),
    ("aggr(2*sour(x))", "aggr"), ("gather", "function used as a value"),
], ids=lambda value: value if isinstance(value, str) and len(value) < 25 else None)
def test_rejected_structured_syntax_names_the_construct(text: str, construct: str) -> None:
    with pytest.raises(ParseError) as caught:
        engine.parse(text)
    assert caught.value.construct == construct


@pytest.mark.parametrize("text", [
    "not " * 400 + "x", "~" * 400 + "x", "-" * 400 + "x", "(" * (MAX_PAREN_DEPTH + 1) + "x"
    + ")" * (MAX_PAREN_DEPTH + 1), "x" + "+x" * MAX_NODES, "x" * (MAX_SOURCE_LENGTH + 1),
    "sin(" * (MAX_DEPTH // 2 + 1) + "x" + ")" * (MAX_DEPTH // 2 + 1),
    "lambda: " * 300 + "x", "x[" * 60 + "i" + "]" * 60, "sum[j](" * 120 + "x[j]" + ")" * 120,
    "x if " * 80 + "y" + " else z" * 80, "10**" * 400 + "10",
], ids=["not", "invert", "minus", "brackets", "nodes", "length", "calls", "lambda",
        "subscripts", "sums", "conditional", "power-tower"])
def test_every_input_over_a_limit_is_a_parse_error(text: str) -> None:
    with pytest.raises(ParseError) as caught:
        engine.parse(text)
    assert len(str(caught.value)) < 2_000  # quoted source is shortened, never unparsed


def test_canonical_key_is_invariant_under_index_renaming() -> None:
    def key(text: str) -> str:
        return engine.canonical_key(engine.parse(text))

    assert key("sum[j](A[i, j], x[j])") == key("sum[k](A[i, k], x[k])")
    assert key("sum[j, k](T[i, j, k], x[j]*x[k])") == key("sum[k, j](T[i, j, k], x[k]*x[j])")
    assert key("aggr(A, sour(x))") == key("sum[q](A[p, q], x[q])")
    assert key("sum[j](A[i, j], x[j]) + x[i]") == key("x[i] + sum[j](A[i, j], x[j])")
    assert key("sum[j](A[i, j], x[j])") != key("sum[j](A[i, j], x[i])")
    assert key("sum[j](A[i, j], x[j])") != key("sum[i](A[i, j], x[i])")


def test_fit_constants_leave_relation_weights_fixed() -> None:
    import numpy as np

    data = {"A": np.array([[0, 1], [1, 0]]), "B": np.array([[0, 1]]),
            "x": np.array([[1.0, 2.0], [3.0, 5.0]])}
    formula = engine.parse("0.7*sum[j](A[i, j] + 0.5*B[i, j], x[j])")
    target = 3.0 * engine.evaluate(engine.parse("sum[j](A[i, j] + 0.5*B[i, j], x[j])"), data,
                                   num_nodes=2)
    fitted = engine.fit(formula, data, target, num_nodes=2, fit_constants=True)
    assert "0.5*B[i, j]" in engine.to_str(fitted.expression)
    assert fitted.loss < 1e-20

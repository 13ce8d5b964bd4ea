"""Indexed evaluation: shapes, set semantics, relation algebra, errors, delay."""

from __future__ import annotations

import numpy as np
import pytest

import srh_engine as engine
from srh_engine import EvaluationError, RelationField
from srh_engine.graph_relations import compile_table

RNG = np.random.default_rng(7)
N = 5
A = np.array([[0, 1], [1, 2], [2, 0], [0, 1], [3, 3]])  # (0, 1) twice; node 4 isolated
B = np.array([[0, 1], [4, 0]])
X = RNG.normal(size=(3, N))
W = RNG.uniform(size=(3, len(A)))
DATA = {"A": A, "B": B, "x": X, "w": W, "u": RNG.normal(size=(3, 1))}


def evaluate(text: str, **options: object) -> np.ndarray:
    return engine.evaluate(engine.parse(text), DATA, num_nodes=N, **options)


def test_free_indices_become_dense_axes_in_order_of_appearance() -> None:
    assert evaluate("x[i]").shape == (3, N)
    np.testing.assert_allclose(evaluate("x[i] - x[j]"), X[:, :, None] - X[:, None, :])
    np.testing.assert_allclose(evaluate("x[j] - x[i]"), X[:, :, None] - X[:, None, :])
    assert evaluate("sum[j](x[j])").shape == (3,)


def test_relation_sum_counts_each_distinct_row_once_and_keeps_isolated_nodes() -> None:
    got = evaluate("sum[j](A[i, j], x[j])")
    expected = np.stack([X[:, 1], X[:, 2], X[:, 0], X[:, 3], 0 * X[:, 0]], axis=-1)
    np.testing.assert_allclose(got, expected)


def test_edge_field_reads_the_first_row_of_a_repeated_entry() -> None:
    got = evaluate("sum[j](A[i, j], w[i, j])")
    np.testing.assert_allclose(got[:, 0], W[:, 0])
    np.testing.assert_allclose(evaluate("gather(A[i, j], w[i, j])"), W)  # its own row


def test_gather_keeps_table_rows_and_aligns_with_bare_edge_fields() -> None:
    got = evaluate("gather(A[i, j], x[i] - x[j]) + w")
    np.testing.assert_allclose(got, X[:, A[:, 0]] - X[:, A[:, 1]] + W)


def test_relation_algebra_adds_on_the_union_and_multiplies_on_the_intersection() -> None:
    union = evaluate("sum[j](A[i, j] + 0.5*B[i, j], 1)")
    np.testing.assert_allclose(union, [1.5, 1.0, 1.0, 1.0, 0.5])
    np.testing.assert_allclose(evaluate("sum[j](A[i, j]*B[i, j], 1)"), [1, 0, 0, 0, 0])
    np.testing.assert_allclose(evaluate("sum[j](A[j, i], 1)"), [1, 1, 1, 1, 0])


def test_per_sample_values_broadcast_from_a_singleton_axis() -> None:
    np.testing.assert_allclose(evaluate("u*x[i]"), DATA["u"] * X)
    np.testing.assert_allclose(evaluate("u + sum[i](x[i])"), DATA["u"][:, 0] + X.sum(-1))


def test_relation_field_names_the_relation_of_an_ambiguous_edge_field() -> None:
    data = {**DATA, "C": A.copy(), "v": W}
    with pytest.raises(EvaluationError, match="cannot tell which relation"):
        engine.evaluate(engine.parse("sum[j](A[i, j], v[i, j])"), data, num_nodes=N)
    data["v"] = RelationField(W, relation="C")
    got = engine.evaluate(engine.parse("sum[j](A[i, j], v[i, j])"), data, num_nodes=N)
    np.testing.assert_allclose(got, evaluate("sum[j](A[i, j], w[i, j])"))


@pytest.mark.parametrize(("text", "message"), [
    ("x + x[i]", "last axis is structural"),
    ("sum[j](A[i, j], w)", "last axis is structural"),
    ("sum[j](A[i, j], sum[j](x[j]))", "rebinds"),
    ("sum[k](A[i, j], x[k])", "binds only"),
    ("gather(A[i, j], x[k])", "does not bind"),
    ("x[i]*gather(A[i, j], x[i])", "entry field"),
    ("sum[j](A[i, j] + 1, x[j])", "dense"),
    ("sum[j](exp(A[i, j]), x[j])", "not relation algebra"),
    ("sum[j](A[i, j], u[j])", "must have shape"),
    ("gather(A[i, j], x[i]) + gather(B[i, j], x[i])", "different relations"),
], ids=["bare-node-field", "bare-edge-field", "rebind", "unbound-sum", "unbound-gather",
        "entry-field", "dense", "function-of-relation", "node-shape", "mixed-relations"])
def test_bad_indexed_formulas_are_typed_errors(text: str, message: str) -> None:
    with pytest.raises(EvaluationError, match=message):
        evaluate(text)


def test_missing_num_nodes_and_bad_endpoints_are_typed_errors() -> None:
    with pytest.raises(EvaluationError, match="num_nodes"):
        engine.evaluate(engine.parse("x[i]"), DATA)
    with pytest.raises(EvaluationError, match="outside"):
        engine.evaluate(engine.parse("sum[j](A[i, j], x[j])"), {**DATA, "A": A + 3},
                        num_nodes=N)


def test_read_only_tables_are_compiled_once() -> None:
    table = A.copy()
    table.setflags(write=False)
    assert compile_table("A", table, N) is compile_table("A", table, N)
    writable = A.copy()
    assert compile_table("A", writable, N) is not compile_table("A", writable, N)


def test_a_context_like_object_supplies_data_target_and_num_nodes() -> None:
    class Context:
        data = {**DATA, "y": 2.5 * X}
        num_nodes = N
        target = "y"

    np.testing.assert_allclose(engine.parse("x[i]").evaluate(Context()), X)
    assert engine.parse('param("a")*x[i]').fit(Context()).parameters == {"a": 2.5}


# ---------------------------------------------------------------------- delay
TIME = np.linspace(0.0, 4.0, 81)


def test_delay_interpolates_on_the_sample_times_and_is_nan_before_the_history() -> None:
    values = {"s": np.sin(TIME)}
    got = engine.evaluate(engine.parse("delay(s, 0.525)"), values, time=TIME)
    inside = TIME >= 0.525
    assert np.isnan(got[~inside]).all()
    np.testing.assert_allclose(got[inside], np.interp(TIME[inside] - 0.525, TIME, np.sin(TIME)))
    np.testing.assert_allclose(engine.evaluate(engine.parse("delay(s, 2)"), {"s": TIME}),
                               [np.nan, np.nan, *TIME[:-2]])


def test_delay_uses_a_custom_resolver_and_checks_time() -> None:
    def hold(value: np.ndarray, delta: float, time: np.ndarray) -> np.ndarray:
        return np.full_like(value, 7.0)

    assert (engine.evaluate(engine.parse("delay(s, 1)"), {"s": TIME},
                            delay_resolver=hold) == 7.0).all()
    with pytest.raises(EvaluationError, match="strictly increasing"):
        engine.evaluate(engine.parse("delay(s, 1)"), {"s": TIME}, time=TIME[::-1])


def test_delay_and_its_lag_are_fitted() -> None:
    values = {"s": np.sin(TIME)}
    target = 1.5 * np.sin(TIME - 0.8)
    template = engine.parse('param("a")*delay(s, param("tau", 1.2))')
    fitted = engine.fit(template, values, target, time=TIME)
    assert fitted.parameters["tau"] == pytest.approx(0.8, abs=2e-3)
    assert fitted.parameters["a"] == pytest.approx(1.5, abs=1e-2)


def test_delay_works_on_node_fields_of_a_graph() -> None:
    got = evaluate("delay(x[i], 1) + sum[j](A[i, j], delay(x[j], 1))")
    assert np.isnan(got[0]).all() and np.isfinite(got[1:]).all()
    np.testing.assert_allclose(got[1:, 4], X[:-1, 4])

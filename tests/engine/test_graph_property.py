"""Property tests: indexed formulas on random graphs and hypergraphs against NumPy."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import srh_engine as engine
from srh_engine.graph_evaluation import analyse
from srh_engine.problem import LeastSquaresProblem
from tests.engine.graph_strategies import (
    Graph,
    distinct_rows,
    edge_formulas,
    graphs,
    node_formulas,
    node_sum,
)

PROPERTY = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(graph=graphs(), formula=node_formulas())
def test_node_formulas_match_numpy(graph: Graph, formula: tuple) -> None:
    text, reference = formula
    expression = engine.parse(text)
    got = np.asarray(engine.evaluate(expression, graph.data, num_nodes=graph.num_nodes))
    expected = reference(graph.data)
    if "i" not in analyse(expression).free[id(expression)]:
        got = got[..., None]  # no free node index (a constant, a total): equal everywhere
    np.testing.assert_allclose(np.broadcast_to(got, expected.shape), expected, rtol=1e-12,
                               atol=1e-12)


@PROPERTY
@given(graph=graphs(), formula=node_formulas())
def test_text_round_trip_keeps_values_and_key(graph: Graph, formula: tuple) -> None:
    expression = engine.parse(formula[0])
    again = engine.parse(engine.to_str(expression))
    # The printer folds a negative number into its operator (``x[i] + -1.5`` is read back
    # as ``x[i] - 1.5``): the key and the values stay, and the text is a fixed point.
    assert engine.canonical_key(again) == engine.canonical_key(expression)
    assert engine.parse(engine.to_str(again)) == again
    np.testing.assert_array_equal(
        engine.evaluate(again, graph.data, num_nodes=graph.num_nodes),
        engine.evaluate(expression, graph.data, num_nodes=graph.num_nodes))
    assert engine.to_str(expression, latex=True)


@PROPERTY
@given(graph=graphs(), message=edge_formulas("i", "j", 2))
def test_gather_is_the_message_on_every_row(graph: Graph, message: tuple) -> None:
    text, reference = message
    table = graph.data["A"]
    got = engine.evaluate(engine.parse(f"gather(A[i, j], {text})"), graph.data,
                          num_nodes=graph.num_nodes)
    rows = np.arange(len(table))
    expected = reference(graph.data, table[:, 0], table[:, 1], rows)
    np.testing.assert_allclose(np.broadcast_to(got, expected.shape), expected, atol=1e-12)


@PROPERTY
@given(graph=graphs(), message=edge_formulas("i", "j", 1))
def test_aggr_sugar_equals_its_indexed_form(graph: Graph, message: tuple) -> None:
    text = message[0].replace("[i]", "[I]").replace("[j]", "[J]")
    sugar = text.replace("w[i, j]", "1").replace("x[I]", "targ(x)").replace(
        "y[I]", "targ(y)").replace("x[J]", "sour(x)").replace("y[J]", "sour(y)")
    if "[" in sugar:  # nested sums are not written with sugar here
        return
    lowered = engine.parse(f"aggr(A, {sugar})")
    explicit = engine.parse(f"sum[j](A[i, j], {sugar.replace('targ(x)', 'x[i]')})".replace(
        "targ(y)", "y[i]").replace("sour(x)", "x[j]").replace("sour(y)", "y[j]"))
    values = [engine.evaluate(e, graph.data, num_nodes=graph.num_nodes)
              for e in (lowered, explicit)]
    np.testing.assert_allclose(values[0], values[1], atol=1e-12)
    assert engine.canonical_key(lowered) == engine.canonical_key(explicit)


@PROPERTY
@given(graph=graphs(max_nodes=6, max_edges=14), a=st.floats(-2, 2), b=st.floats(-2, 2))
def test_fit_recovers_coupling_constants(graph: Graph, a: float, b: float) -> None:
    data = graph.data
    rows, first = distinct_rows(data["A"])
    assume(data["x"].size >= 4)
    coupling = node_sum(data, rows[:, 0], data["w"][:, first] * np.tanh(
        data["x"][:, rows[:, 1]] - data["x"][:, rows[:, 0]]), graph.num_nodes)
    assume(np.abs(coupling).max(initial=0.0) > 0.05)  # b is identifiable
    target = a * data["x"] + b * coupling
    template = engine.parse('param("a")*x[i] + param("b")*sum[j](A[i, j], w[i, j]*tanh(x[j] '
                            '- x[i]))')
    fitted = engine.fit(template, data, target, num_nodes=graph.num_nodes)
    np.testing.assert_allclose(fitted.evaluate(data, num_nodes=graph.num_nodes), target,
                               atol=1e-8)
    assert fitted.loss < 1e-16


@PROPERTY
@given(graph=graphs(max_nodes=5, max_edges=10), message=edge_formulas("i", "j", 1),
       theta=st.tuples(st.floats(0.2, 2.0), st.floats(-2.0, -0.2)))
def test_jacobian_matches_central_differences(graph: Graph, message: tuple,
                                              theta: tuple) -> None:
    formula = engine.parse(f'param("a")*sum[j](A[i, j], param("b")*{message[0]} + '
                           f'sin(param("b")*x[j]) + gather(A[i, j], param("a")*x[j])[i, j]) + '
                           'delay(param("a")*x[i], 0.5)')
    data = graph.data
    target = np.zeros_like(data["x"])
    problem = LeastSquaresProblem(formula, data, target, {}, num_nodes=graph.num_nodes)
    point = np.array(theta)
    with np.errstate(all="ignore"):
        analytic = problem.jacobian(point)
        step = 1e-6
        numeric = np.column_stack([
            (problem.residuals(point + step * unit) - problem.residuals(point - step * unit))
            / (2 * step) for unit in np.eye(2)])
    np.testing.assert_allclose(analytic, numeric, rtol=1e-5, atol=1e-6)

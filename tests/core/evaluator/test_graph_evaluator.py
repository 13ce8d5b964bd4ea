"""Graph-aligned evaluation: GraphEvaluator, splits that keep relations, payloads."""

from __future__ import annotations

import argparse

import numpy as np
import pytest

import srh_engine as engine
from srh_core.context import AgentContext
from srh_core.errors import ConfigurationError
from srh_core.evaluator import DefaultEvaluator, GraphEvaluator

RNG = np.random.default_rng(3)
NODES = 6
EDGES = np.array([[0, 1], [1, 2], [2, 3], [3, 4], [4, 5], [5, 0], [0, 3]])
X = RNG.normal(size=(40, NODES))
W = RNG.uniform(0.5, 1.5, size=(40, len(EDGES)))
T = np.linspace(0, 1, 40)
TRUTH = "0.3*x[i] + 1.5*t*sum[j](A[i, j], w[i, j]*(x[j] - x[i]))"


def graph_context(evaluator: object = None) -> AgentContext:
    y = engine.evaluate(engine.parse(TRUTH), {"x": X, "A": EDGES, "t": T[:, None],
                                              "w": engine.RelationField(W, "A")},
                        num_nodes=NODES)
    return AgentContext(args=argparse.Namespace(validation_fraction=0.25),
                        data={"x": X, "A": EDGES, "w": W, "t": T, "y": y}, target="y",
                        relation_names={"A"}, num_nodes=NODES, variable_structures={"w": "A"},
                        evaluator=evaluator or GraphEvaluator())


def test_split_slices_samples_and_shares_relation_arrays() -> None:
    context = graph_context()
    train, validation = context.train_split, context.validation_split
    assert train.data["A"] is context.data["A"] and validation.data["A"] is context.data["A"]
    assert train.data["x"].shape == (30, NODES) and validation.data["w"].shape == (10, 7)


@pytest.mark.parametrize("evaluator", [GraphEvaluator(), DefaultEvaluator()],
                         ids=["graph", "default"])
def test_graph_formulas_fit_on_train_and_score_on_validation(evaluator: object) -> None:
    context = graph_context(evaluator)
    template = engine.parse('param("a")*x[i] + param("b")*t*sum[j](A[i, j], w[i, j]*(x[j] - '
                            'x[i]))')
    fitted = context.evaluator.fit_candidate(template, context.train_split)
    assert engine.parameter_values(fitted) == pytest.approx({"a": 0.3, "b": 1.5})
    scores = context.evaluator.evaluate_candidate(fitted, context.validation_split)
    assert scores["mse"] < 1e-25 and scores["n_samples"] == 10 * NODES


def test_graph_evaluator_requires_graph_data() -> None:
    plain = AgentContext(data={"x": T, "y": 2 * T}, target="y", evaluator=GraphEvaluator())
    with pytest.raises(ConfigurationError, match="graph data"):
        plain.train_split  # noqa: B018 - the split runs the check


def test_graph_evaluator_travels_in_a_payload() -> None:
    context = graph_context()
    rebuilt = AgentContext.from_payload(context.to_payload())
    assert type(rebuilt.evaluator).__name__ == "GraphEvaluator"
    assert rebuilt.num_nodes == NODES and rebuilt.relation_names == {"A"}
    scores = rebuilt.evaluator.evaluate_candidate(engine.parse(TRUTH), rebuilt.train_split)
    assert scores["mse"] < 1e-25

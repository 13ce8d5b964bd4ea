"""Hypothesis strategies for graph and hypergraph formulas, each paired with NumPy.

A strategy draws formula *text* (so the parser is exercised too) together with
a reference function written directly with NumPy (``np.unique`` for the
relation's distinct rows, ``np.add.at`` for the sums), independent of the
engine's keys, plans and ``reduceat`` kernels.

Shapes: node fields ``(L, N)``, the edge field ``w`` ``(L, E)``, the relation
``A`` ``(E, 2)`` and the hyper-relation ``T`` ``(H, 3)``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import strategies as st

Data = dict[str, Any]
NodeRef = Callable[[Data], np.ndarray]
EdgeRef = Callable[[Data, np.ndarray, np.ndarray, np.ndarray], np.ndarray]


@dataclass(frozen=True)
class Graph:
    """Random graph data: values for the engine and the node count."""

    data: Data
    num_nodes: int


@st.composite
def graphs(draw: Any, max_nodes: int = 7, max_edges: int = 18) -> Graph:
    """A random graph (repeated rows and isolated nodes allowed) and a hypergraph."""
    n = draw(st.integers(1, max_nodes))
    e = draw(st.integers(0, max_edges))
    h = draw(st.integers(0, 8))
    samples = draw(st.integers(1, 3))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    data = {
        "A": rng.integers(0, n, size=(e, 2)),
        "T": rng.integers(0, n, size=(h, 3)),
        "x": rng.normal(size=(samples, n)),
        "y": rng.uniform(0.5, 2.0, size=(samples, n)),
        "w": rng.uniform(-1.0, 1.0, size=(samples, e)),
    }
    return Graph(data, n)


def distinct_rows(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct rows of a relation and, for each, the first row holding it."""
    if not len(table):
        return np.zeros((0, table.shape[1]), dtype=int), np.zeros(0, dtype=int)
    rows, first = np.unique(table, axis=0, return_index=True)
    return rows, first


def node_sum(data: Data, targets: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """Sum per-entry values into their target nodes with ``np.add.at``."""
    out = np.zeros((values.shape[0], n))
    np.add.at(out, (slice(None), targets), values)
    return out


_OPERATORS = {"+": np.add, "-": np.subtract, "*": np.multiply}
_FUNCTIONS = {"sin": np.sin, "cos": np.cos, "tanh": np.tanh}


def _combine(draw: Any, left: tuple[str, Any], right: tuple[str, Any],
             arity: int) -> tuple[str, Any]:
    operator = draw(st.sampled_from(sorted(_OPERATORS)))
    function = _OPERATORS[operator]
    left_ref, right_ref = left[1], right[1]
    if arity == 1:
        return f"({left[0]} {operator} {right[0]})", lambda d: function(left_ref(d),
                                                                         right_ref(d))
    return f"({left[0]} {operator} {right[0]})", \
        lambda d, t, s, r: function(left_ref(d, t, s, r), right_ref(d, t, s, r))


@st.composite
def node_formulas(draw: Any, index: str = "i", depth: int = 2) -> tuple[str, NodeRef]:
    """A node-valued formula of ``index`` and its reference ``(L, N)`` function."""
    choices = ["x", "y", "number"] + (["binary", "function", "relation", "hyper", "dense"]
                                      if depth > 0 else [])
    kind = draw(st.sampled_from(choices))
    if kind in ("x", "y"):
        return f"{kind}[{index}]", lambda d, k=kind: d[k]
    if kind == "number":
        value = draw(st.sampled_from([0.5, 2.0, -1.5]))
        return repr(value), lambda d, v=value: np.full_like(d["x"], v)
    if kind == "binary":
        return _combine(draw, draw(node_formulas(index, depth - 1)),
                        draw(node_formulas(index, depth - 1)), 1)
    if kind == "function":
        name = draw(st.sampled_from(sorted(_FUNCTIONS)))
        text, ref = draw(node_formulas(index, depth - 1))
        return f"{name}({text})", lambda d: _FUNCTIONS[name](ref(d))
    source = f"k{depth}"
    if kind == "relation":
        text, message = draw(edge_formulas(index, source, depth - 1))
        return f"sum[{source}](A[{index}, {source}], {text})", _relation_sum(message)
    if kind == "hyper":
        return _hyper_sum(index, depth)
    text, inner = draw(node_formulas(source, depth - 1))
    return f"sum[{source}]({text})", lambda d: np.repeat(
        inner(d).sum(axis=-1, keepdims=True), d["x"].shape[-1], axis=-1)


def _relation_sum(message: EdgeRef) -> NodeRef:
    def ref(d: Data) -> np.ndarray:
        rows, first = distinct_rows(d["A"])
        values = message(d, rows[:, 0], rows[:, 1], first)
        return node_sum(d, rows[:, 0], np.broadcast_to(values, (d["x"].shape[0], len(rows))),
                        d["x"].shape[-1])

    return ref


def _hyper_sum(index: str, depth: int) -> tuple[str, NodeRef]:
    j, k = f"p{depth}", f"q{depth}"

    def ref(d: Data) -> np.ndarray:
        rows, _ = distinct_rows(d["T"])
        x, y = d["x"], d["y"]
        values = x[:, rows[:, 1]] * y[:, rows[:, 2]] - x[:, rows[:, 0]]
        return node_sum(d, rows[:, 0], values, x.shape[-1])

    return f"sum[{j}, {k}](T[{index}, {j}, {k}], x[{j}]*y[{k}] - x[{index}])", ref


@st.composite
def edge_formulas(draw: Any, target: str, source: str, depth: int) -> tuple[str, EdgeRef]:
    """A message over ``(target, source)`` and its reference on given entries."""
    choices = ["target", "source", "weight", "number"] + (
        ["binary", "function", "nested"] if depth > 0 else [])
    kind = draw(st.sampled_from(choices))
    if kind in ("target", "source"):
        name = draw(st.sampled_from(["x", "y"]))
        at = target if kind == "target" else source
        pick = 0 if kind == "target" else 1
        return f"{name}[{at}]", lambda d, t, s, r, n=name, p=pick: d[n][:, (t, s)[p]]
    if kind == "weight":
        return f"w[{target}, {source}]", lambda d, t, s, r: d["w"][:, r]
    if kind == "number":
        return "0.5", lambda d, t, s, r: np.full((d["x"].shape[0], len(t)), 0.5)
    if kind == "binary":
        return _combine(draw, draw(edge_formulas(target, source, depth - 1)),
                        draw(edge_formulas(target, source, depth - 1)), 2)
    if kind == "function":
        name = draw(st.sampled_from(sorted(_FUNCTIONS)))
        text, ref = draw(edge_formulas(target, source, depth - 1))
        return f"{name}({text})", lambda d, t, s, r: _FUNCTIONS[name](ref(d, t, s, r))
    text, inner = draw(node_formulas(source, depth - 1))  # a node field read at the source
    return text, lambda d, t, s, r: inner(d)[:, s]

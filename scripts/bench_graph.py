#!/usr/bin/env python
"""Benchmark: indexed aggregations of srh_engine against hand-written NumPy.

Run alone::

    .venv/bin/python scripts/bench_graph.py [--edges 100000] [--nodes 10000]
        [--repeat 15] [--json out.json]

Each case is one formula and the NumPy a careful user would write for it
(``np.bincount`` of per-edge messages into target nodes; for leading sample
axes, one ``bincount`` over flattened offsets), in two spellings: the usual
fancy indexing ``x[s]`` (``numpy ms``, the reference of the ratio) and
``np.take(x, s)`` (``take ms``, faster; the engine gathers with ``np.take``).
The edge list is random and duplicate-free, so the hand-written code (which
does not deduplicate) computes the same numbers; the rows are shuffled, so the
engine cannot rely on sorted input. Both are checked to agree before timing.

Timings (median of ``--repeat`` runs, each the best of 3 calls):

* ``warm evaluate``: ``srh_engine.evaluate(...)`` called again with the same
  read-only relation array (the relation's sort is cached; analysis and plans
  are rebuilt on every call);
* ``fit loop``: the same evaluation inside one fitting environment, as every
  iteration of ``fit`` runs it (plans cached too);
* ``cold``: the first call on a fresh table (validation and one sort of E keys).

Target: warm evaluate within 1.5x of hand-written NumPy at 10^5 edges.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import srh_engine as engine  # noqa: E402
from srh_engine.evaluation import Env, evaluate_node  # noqa: E402

TARGET = 1.5


@dataclass(frozen=True)
class Row:
    case: str
    edges: int
    numpy_ms: float
    take_ms: float
    engine_ms: float
    fit_loop_ms: float
    cold_ms: float
    ratio: float
    fit_loop_ratio: float
    take_ratio: float


def unique_edges(rng: np.random.Generator, nodes: int, edges: int, arity: int) -> np.ndarray:
    """A shuffled table of ``edges`` distinct rows over ``nodes`` nodes."""
    keys = np.unique(rng.integers(0, nodes ** arity, size=int(edges * 1.2)))
    keys = rng.permutation(keys)[:edges]
    columns = np.unravel_index(keys, (nodes,) * arity)
    table = np.stack(columns, axis=1).astype(np.int64)
    table.setflags(write=False)
    return table


def flat_bincount(targets: np.ndarray, values: np.ndarray, nodes: int) -> np.ndarray:
    """Sum ``values (L, E)`` into ``(L, nodes)`` with one bincount."""
    samples = values.shape[0]
    offsets = (targets + nodes * np.arange(samples)[:, None]).ravel()
    return np.bincount(offsets, weights=values.ravel(), minlength=samples * nodes).reshape(
        samples, nodes)


def cases(rng: np.random.Generator, nodes: int, edges: int
          ) -> list[tuple[str, str, dict, Callable[[], Any], Callable[[], Any]]]:
    A = unique_edges(rng, nodes, edges, 2)
    T = unique_edges(rng, nodes, edges, 3)
    t, s = A[:, 0], A[:, 1]
    x = rng.normal(size=nodes)
    x8 = rng.normal(size=(8, nodes))
    w = rng.uniform(size=edges)
    for array in (x, x8, w):
        array.setflags(write=False)
    h0, h1, h2 = T[:, 0], T[:, 1], T[:, 2]

    def take(values: np.ndarray, index: np.ndarray) -> np.ndarray:
        return np.take(values, index, axis=-1)

    return [
        ("diffusion", "sum[j](A[i, j], x[j] - x[i])", {"A": A, "x": x},
         lambda: np.bincount(t, weights=x[s] - x[t], minlength=nodes),
         lambda: np.bincount(t, weights=take(x, s) - take(x, t), minlength=nodes)),
        ("kuramoto", "sum[j](A[i, j], sin(x[j] - x[i]))", {"A": A, "x": x},
         lambda: np.bincount(t, weights=np.sin(x[s] - x[t]), minlength=nodes),
         lambda: np.bincount(t, weights=np.sin(take(x, s) - take(x, t)), minlength=nodes)),
        ("weighted", "sum[j](A[i, j], w[i, j]*tanh(x[j] - x[i]))", {"A": A, "x": x, "w": w},
         lambda: np.bincount(t, weights=w * np.tanh(x[s] - x[t]), minlength=nodes),
         lambda: np.bincount(t, weights=w * np.tanh(take(x, s) - take(x, t)),
                             minlength=nodes)),
        ("aggr sugar, 8 samples", "aggr(A, sin(sour(x) - targ(x)))", {"A": A, "x": x8},
         lambda: flat_bincount(t, np.sin(x8[:, s] - x8[:, t]), nodes),
         lambda: flat_bincount(t, np.sin(take(x8, s) - take(x8, t)), nodes)),
        ("hyperedges", "sum[j, k](T[i, j, k], x[j]*x[k])", {"T": T, "x": x},
         lambda: np.bincount(h0, weights=x[h1] * x[h2], minlength=nodes),
         lambda: np.bincount(h0, weights=take(x, h1) * take(x, h2), minlength=nodes)),
    ]


def best_of(function: Callable[[], Any], calls: int = 3) -> float:
    best = float("inf")
    for _ in range(calls):
        started = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - started)
    return best


def median_ms(function: Callable[[], Any], repeat: int) -> float:
    return 1e3 * statistics.median(best_of(function) for _ in range(repeat))


def measure(name: str, text: str, values: dict, numpy: Callable[[], Any],
            numpy_take: Callable[[], Any], nodes: int, repeat: int) -> Row:
    expression = engine.parse(text)
    got = engine.evaluate(expression, values, num_nodes=nodes)
    np.testing.assert_allclose(got, numpy(), rtol=1e-10, atol=1e-10)
    env = Env(values, {}, num_nodes=nodes)
    with np.errstate(all="ignore"):
        evaluate_node(expression, env)
        fit_loop = median_ms(lambda: evaluate_node(expression, env), repeat)
    warm = median_ms(lambda: engine.evaluate(expression, values, num_nodes=nodes), repeat)
    hand = median_ms(numpy, repeat)
    hand_take = median_ms(numpy_take, repeat)
    fresh = {name: (value.copy() if value.dtype.kind in "iu" else value)
             for name, value in values.items()}
    started = time.perf_counter()
    engine.evaluate(expression, fresh, num_nodes=nodes)
    cold = 1e3 * (time.perf_counter() - started)
    edges = len(values.get("A", values.get("T")))
    return Row(name, edges, hand, hand_take, warm, fit_loop, cold, warm / hand,
               fit_loop / hand, warm / hand_take)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--edges", type=int, default=100_000)
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    load = Path("/proc/loadavg").read_text().split()[:3] if Path("/proc/loadavg").exists() \
        else []
    rows = [measure(name, text, values, numpy, numpy_take, args.nodes, args.repeat)
            for name, text, values, numpy, numpy_take in cases(rng, args.nodes, args.edges)]
    print(f"{'case':24} {'edges':>7} {'numpy ms':>9} {'take ms':>8} {'engine ms':>10} "
          f"{'fit-loop ms':>12} {'cold ms':>8} {'ratio':>6} {'fit ratio':>9} {'vs take':>8}")
    for row in rows:
        print(f"{row.case:24} {row.edges:>7} {row.numpy_ms:9.3f} {row.take_ms:8.3f} "
              f"{row.engine_ms:10.3f} {row.fit_loop_ms:12.3f} {row.cold_ms:8.2f} "
              f"{row.ratio:6.2f} {row.fit_loop_ratio:9.2f} {row.take_ratio:8.2f}")
    worst = max(row.ratio for row in rows)
    print(f"worst warm ratio {worst:.2f} (target <= {TARGET}); loadavg {' '.join(load)}")
    document = {"target": TARGET, "worst_ratio": worst, "loadavg": load,
                "platform": platform.platform(), "numpy": np.__version__,
                "nodes": args.nodes, "rows": [asdict(row) for row in rows]}
    if args.json:
        Path(args.json).write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(document))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Network-dynamics problems: ``dx_i/dt = f(x, A)`` on a fixed random graph.

Each problem has a known indexed formula (diffusion, Kuramoto coupling,
epidemic spreading, gene regulation) on a directed random graph drawn once
from the problem's ``graph`` entry (``nodes``, ``edge_probability``, ``seed``;
no self-loops; rows ``(target, source)``): the graph is part of the problem,
the search seed only changes the trajectories. Node constants listed in
``fields`` (e.g. natural frequencies ``omega``) are drawn once per problem too.

Data: ``trajectories`` initial states drawn from ``initial`` (search data
``default_rng([seed, 0])``, judging ``[seed, 1]``), integrated jointly over
all nodes with ``solve_ivp``; features are the node field ``x (n, N)``, the
relation ``A (E, 2)`` (declared as a relation, with ``num_nodes``), the node
constants ``(n, N)`` and the time ``t``; the target is the exact derivative
``(n, N)``. They travel as a :class:`~srh_core.context.structured.StructuredData`.

Judging is as for the ODE problems (:mod:`.dynamics`): the fresh-point error
relative to the derivative's scale, and the rollout error of the node field
integrated with the formula from each fresh initial state.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from srh_core.context import AgentContext
from srh_core.context.structured import StructuredData
from srh_core.evaluator.dynamics import SystemRightHandSide
from srh_core.problems.dynamics import (
    TIME,
    StateRange,
    _predict,
    _ranges,
    draw_trajectory,
    judgement,
    relative_rollout_error,
    trajectory_counts,
    with_noise,
)
from srh_engine import parse

RELATION = "A"


@dataclass(frozen=True, slots=True)
class GraphSpec:
    nodes: int
    edge_probability: float
    seed: int

    def edges(self) -> np.ndarray:
        """Directed edges ``(target, source)`` of a seeded Erdos-Renyi graph, no self-loops."""
        rng = np.random.default_rng([self.seed, 7])
        chosen = rng.random((self.nodes, self.nodes)) < self.edge_probability
        np.fill_diagonal(chosen, False)
        targets, sources = np.nonzero(chosen)
        return np.stack([targets, sources], axis=1).astype(np.int64)


@dataclass(frozen=True)
class NetworkProblem:
    """One network-dynamics problem (see the module docstring)."""

    name: str
    id: str
    output: str
    state: str
    formula: str
    graph: GraphSpec
    initial: StateRange
    fields: tuple[StateRange, ...] = ()
    t_end: float = 5.0
    trajectories: int = 3
    kind: str = "network"

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> NetworkProblem:
        """Build from a suite entry (see ``network.json``)."""
        graph = dict(data["graph"])
        initial = dict(data["initial"])
        return cls(name=str(data.get("name") or data["id"]), id=str(data["id"]),
                   output=str(data["output"]), state=str(data.get("state", "x")),
                   formula=str(data["formula"]),
                   graph=GraphSpec(int(graph["nodes"]), float(graph["edge_probability"]),
                                   int(graph["seed"])),
                   initial=StateRange(str(data.get("state", "x")), float(initial["low"]),
                                      float(initial["high"])),
                   fields=_ranges(data.get("fields", ())), t_end=float(data.get("t_end", 5.0)),
                   trajectories=int(data.get("trajectories", 3)))

    @property
    def num_nodes(self) -> int:
        return self.graph.nodes

    @property
    def feature_names(self) -> list[str]:
        return [self.state, RELATION, *(f.name for f in self.fields), TIME]

    @cached_property
    def edges(self) -> np.ndarray:
        return self.graph.edges()

    @cached_property
    def constants(self) -> dict[str, np.ndarray]:
        """Node constants, one value per node, drawn once per problem."""
        rng = np.random.default_rng([self.graph.seed, 11])
        return {f.name: rng.uniform(f.low, f.high, size=self.num_nodes) for f in self.fields}

    def expression(self) -> Any:
        return parse(self.formula)

    # ---------------------------------------------------------------- data
    def simulate(self, n: int, rng: np.random.Generator) -> tuple[dict[str, np.ndarray],
                                                                  np.ndarray]:
        """Node states ``(n, N)``, times and exact derivatives over the trajectories."""
        fixed = {RELATION: self.edges, **{k: v[None, :] for k, v in self.constants.items()}}
        rhs = SystemRightHandSide({self.state: self.expression()}, fixed, (self.num_nodes,),
                                  self.num_nodes)
        counts = trajectory_counts(n, self.trajectories)
        pieces = [self._trajectory(rhs, max(count, 2), rng) for count in counts if count]
        states = np.concatenate([p[0] for p in pieces])
        derivatives = np.concatenate([p[2] for p in pieces])
        values = {self.state: states, TIME: np.concatenate([p[1] for p in pieces])}
        return values, derivatives

    def _trajectory(self, rhs: Any, count: int, rng: np.random.Generator
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return draw_trajectory(
            rhs, np.linspace(0.0, self.t_end, count),
            lambda: rng.uniform(self.initial.low, self.initial.high, size=self.num_nodes),
            lambda states, derivatives: bool(np.all(np.isfinite(derivatives))),
            f"Problem {self.name!r}")

    def values(self, states: Mapping[str, np.ndarray]) -> Any:
        """The run's features: states, relation, node constants per sample, time."""
        n = len(states[TIME])
        arrays = {self.state: states[self.state], RELATION: self.edges,
                  **{k: np.repeat(v[None, :], n, axis=0) for k, v in self.constants.items()},
                  TIME: states[TIME]}
        descriptions = {self.state: "node state", RELATION: "directed edges of the graph",
                        **{f.name: "node constant" for f in self.fields}}
        return StructuredData(arrays, relation_names=[RELATION], num_nodes=self.num_nodes,
                              variable_descriptions=descriptions, time=TIME,
                              derivatives={self.output: self.state})

    def sample(self, n: int = 2000, seed: int = 0, noise: float = 0.0) -> tuple[Any, np.ndarray]:
        """Search data (a StructuredData) and the exact derivative ``(n, N)``."""
        rng = np.random.default_rng([seed, 0])
        states, y = self.simulate(max(n // self.num_nodes, 2 * self.trajectories), rng)
        return self.values(states), with_noise(y, noise, rng)

    # ------------------------------------------------------------- judging
    def judge(self, formula: str, seed: int = 0, n: int = 1000) -> Any:
        """Fresh-point error and rollout error of a node-derivative formula."""
        states, truth = self.simulate(max(n // self.num_nodes, 2 * self.trajectories),
                                      np.random.default_rng([seed, 1]))
        values = self.values(states)
        engine_view = {k: (v[:, None] if np.ndim(v) == 1 and k != RELATION else v)
                       for k, v in values.items()}
        return judgement(truth, _predict(formula, engine_view, self.num_nodes),
                         lambda: self.rollout_error(formula, values))

    def rollout_error(self, formula: str, values: Any) -> float | None:
        """Relative rollout RMSE of the node field under ``formula`` (None when it fails)."""
        context = AgentContext(data=dict(values), relation_names=set(values.relation_names),
                               num_nodes=values.num_nodes)
        return relative_rollout_error(formula, context, self.state, values[self.state])

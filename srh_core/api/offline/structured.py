"""The offline proposer on structured targets: time derivatives and graph (node) targets.

It reads, like the rest of the offline policy, only the conversation: the
task prompt shows each variable's description, where structured data carries
a bracketed role note (:mod:`srh_core.context.structured`): ``[time]``,
``[time derivative dx/dt of x]``, ``[relation over N nodes; ...]``,
``[node field over N nodes]``, ``[edge field of A]``.

- A derivative target ``dx/dt`` on ordinary data: before the general plan,
  the libraries ODE right-hand sides are usually made of, over the states and
  inputs and leaving the time out (an autonomous system does not read it):
  sparse monomials of degree 2 and 3 (``sindy``), with sin/cos, polynomials
  of the sines and cosines of the states, and ratios of polynomials of the
  states (and of their sines and cosines). Then the general plan continues.
- A node target on graph data: the general plan's tools ignore the relation,
  so this plan replaces it: ``sindy`` with graph libraries (node terms and
  coupling sums ``sum[j](A[i, j], m)``), from linear couplings up to degree 2
  and 3 with sin/cos of differences, then the general closing (snap, submit).
  Every response says what these tools cannot do: couplings that are not
  linear in their constants (saturating or Hill-type terms) cannot be found.

Hook: :meth:`srh_core.api.offline.api.OfflineAPI._generate` calls
:func:`structured_plan` first and uses :func:`~srh_core.api.offline.policy.plan_step`
when it returns None.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from srh_core import formats
from srh_core.api.offline.moves import Move
from srh_core.api.offline.policy import MOVES_PER_SAMPLE, Proposal, explain, submit_best
from srh_core.api.offline.reader import ConversationView

__all__ = ["Structure", "read_structure", "structured_plan"]


GRAPH_LIMITS = ("the graph tools fit sums of node terms and couplings that are linear in "
                "their constants (polynomial and sin/cos messages); saturating or Hill-type "
                "couplings such as x[j]**2/(1 + x[j]**2) are outside what they can find")
"""What this plan says it cannot do on graph targets."""


@dataclass(slots=True)
class Structure:
    """The roles the task prompt declares."""

    target: str | None = None
    time: str | None = None
    state: str | None = None
    relations: list[str] = field(default_factory=list)
    node_fields: list[str] = field(default_factory=list)
    edge_fields: list[str] = field(default_factory=list)
    variables: list[str] = field(default_factory=list)

    @property
    def graph(self) -> bool:
        return bool(self.relations) and self.target is not None

    @property
    def derivative(self) -> bool:
        return self.state is not None


def read_structure(messages: Sequence[Mapping[str, Any]]) -> Structure | None:
    """Roles from the task prompt's variable lines, or None when it declares none."""
    task = next((str(m.get("content") or "") for m in messages if m.get("role") == "user"
                 and formats.TARGET_PREFIX in str(m.get("content") or "")), "")
    structure, target_line = Structure(), True
    for line in task.splitlines():
        match = formats.VARIABLE_LINE.match(line)
        if match is None:
            continue
        name, note = match.group(2), match.group(3) or ""
        if match.group(1) == formats.TARGET_PREFIX and target_line:
            structure.target, target_line = name, False
            if (found := formats.DERIVATIVE_NOTE.search(note)) is not None:
                structure.state = found.group(1)
            continue
        structure.variables.append(name)
        _assign(structure, name, note)
    roles = (structure.time, structure.state, structure.relations)
    return structure if any(roles) else None


def _assign(structure: Structure, name: str, note: str) -> None:
    if formats.RELATION_NOTE.search(note):
        structure.relations.append(name)
    elif formats.EDGE_FIELD_NOTE.search(note):
        structure.edge_fields.append(name)
    elif formats.NODE_FIELD_NOTE.search(note):
        structure.node_fields.append(name)
    elif formats.TIME_NOTE_RE.search(note):
        structure.time = name


def derivative_moves(structure: Structure) -> list[Move]:
    """Libraries of the states and inputs (never the time) for a derivative target.

    The right-hand sides of ODE models are mostly sums of monomials, of sines
    and cosines of the states, and ratios of polynomials (saturation); each is
    tried with the tools that fit such libraries exactly.
    """
    inputs = [name for name in structure.variables if name != structure.time]
    if not inputs or len(inputs) > 4:
        return []
    trig = [f"{f}({name})" for name in inputs for f in ("sin", "cos")]
    what = f"d{structure.state}/dt"
    moves = [
        Move("call_sindy", {"x": inputs, "poly_degree": 2}, 0.0,
             f"{what} as a sparse sum of monomials of the states (no time), degree 2"),
        Move("call_sindy", {"x": inputs, "poly_degree": 3}, 0.1,
             f"{what}: monomials up to degree 3"),
        Move("call_sindy", {"x": inputs, "poly_degree": 2, "include_trig": True}, 0.2,
             f"{what}: monomials and sin/cos of the states"),
        Move("polynomial_fit", {"x": trig, "max_degree": 2}, 0.3,
             f"{what} as a polynomial of sines and cosines of the states"),
        Move("rational_fit", {"x": inputs, "numerator_degree": 2, "denominator_degree": 1},
             0.4, f"{what} as a ratio of polynomials of the states (saturation)"),
        Move("rational_fit", {"x": inputs, "numerator_degree": 3, "denominator_degree": 1},
             0.5, f"{what}: a ratio of polynomials, numerator degree 3"),
        Move("rational_fit", {"x": inputs, "numerator_degree": 2, "denominator_degree": 2},
             0.6, f"{what}: a ratio of quadratics"),
        Move("rational_fit", {"x": inputs, "numerator_degree": 3, "denominator_degree": 2},
             0.7, f"{what}: a ratio of polynomials of degrees 3 and 2"),
        Move("polynomial_fit", {"x": trig, "max_degree": 3}, 0.8,
             f"{what}: a cubic polynomial of sines and cosines of the states"),
        Move("rational_fit", {"x": [*inputs, *trig], "numerator_degree": 2,
                              "denominator_degree": 1}, 0.9,
             f"{what}: a ratio of polynomials of the states and their sines and cosines"),
    ]
    return moves


def graph_moves(structure: Structure) -> list[Move]:
    """Graph libraries of increasing size for a node target."""
    binary = structure.relations[:1]
    inputs = [name for name in structure.node_fields if name != structure.target]
    if not binary or not inputs:
        return []
    base = {"x": inputs, "relation": binary[0]}
    plans = [({"poly_degree": 1, "coupling_degree": 1}, 0.0, "linear node terms and couplings"),
             ({"poly_degree": 1, "coupling_degree": 1, "include_trig": True}, 0.1,
              "linear terms and sin/cos of differences across edges (phase coupling)"),
             ({"poly_degree": 2, "coupling_degree": 2}, 0.2, "quadratic node terms and couplings"),
             ({"poly_degree": 2, "coupling_degree": 2, "include_trig": True}, 0.4,
              "quadratic terms with sin/cos couplings"),
             ({"poly_degree": 3, "coupling_degree": 2}, 0.6, "cubic node terms"),
             ({"poly_degree": 2, "coupling_degree": 3}, 0.8, "cubic couplings")]
    return [Move("call_sindy", {**base, **params}, tier, f"graph library: {why}")
            for params, tier, why in plans]


def structured_plan(messages: Sequence[Mapping[str, Any]], view: ConversationView, n: int,
                    rng: np.random.Generator) -> tuple[Proposal, ...] | None:
    """This step's K responses for a structured target, or None to use the general plan."""
    structure = read_structure(messages)
    if structure is None or view.target is None or any(view.exact(r) for r in view.front):
        return None  # nothing structured, or exact already: the general plan closes
    if structure.graph:
        moves = _untried(view, graph_moves(structure))
        return _proposals(view, moves, n, rng, "graph target", GRAPH_LIMITS, final=True)
    if structure.derivative:
        moves = _untried(view, derivative_moves(structure))
        if moves:
            return _proposals(view, moves, n, rng, "derivative target", "", final=False)
    return None


def _untried(view: ConversationView, moves: list[Move]) -> list[Move]:
    return [move for move in moves if move.signature not in view.tried]


def _proposals(view: ConversationView, moves: list[Move], n: int, rng: np.random.Generator,
               mode: str, limits: str, final: bool) -> tuple[Proposal, ...]:
    keys = [move.tier + 0.05 * rng.random() for move in moves]
    ordered = [m for _, m in sorted(zip(keys, moves, strict=True), key=lambda kv: kv[0])]
    dealt = [tuple(ordered[k * MOVES_PER_SAMPLE:(k + 1) * MOVES_PER_SAMPLE]) for k in range(n)]
    if final and (view.final_step or not ordered):
        dealt[0] = tuple(submit_best(view)) + dealt[0][:MOVES_PER_SAMPLE - 1]
    return tuple(Proposal(explain(view, dealt, k, mode, limits), dealt[k]) for k in range(n))



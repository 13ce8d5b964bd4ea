"""The offline proposer on derivative and graph targets (reads only the conversation)."""

from __future__ import annotations

import numpy as np

from srh_core.api.offline.reader import read_conversation
from srh_core.api.offline.structured import GRAPH_LIMITS, read_structure, structured_plan
from srh_core.parsers import BaseParser

GRAPH_TASK = """Find dx.

- Target: dx: range [-1, 1] ([time derivative dx/dt of x])
- Features (4):
  - x: range [-3, 3] ([node field over 12 nodes] node state)
  - A: range [0, 11] ([relation over 12 nodes; rows (target, source)] edges)
  - omega: range [-1, 1] ([node field over 12 nodes] node constant)
  - t: range [0, 4] ([time])
- Samples: 1992"""

ODE_TASK = """Find dx.

- Target: dx: range [-5, 5] ([time derivative dx/dt of x])
- Features (3):
  - x: range [0.2, 3] (state of the system)
  - y: range [0.2, 3] (state of the system)
  - t: range [0, 10] ([time])
- Samples: 2000"""

PLAIN_TASK = """Find y.

- Target: y: range [1, 2]
- Features (1):
  - x: range [0, 1]
- Samples: 100"""


def messages(task: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": "Find formulas."}, {"role": "user", "content": task},
            {"role": "user", "content": "[Progress] Step 1 of 4 (R=1, branch 1/1)"}]


def plan(task: str, n: int = 2) -> tuple | None:
    conversation = messages(task)
    view = read_conversation(conversation, BaseParser.create("json"))
    return structured_plan(conversation, view, n, np.random.default_rng(0))


def test_role_notes_are_read_from_the_task_prompt() -> None:
    graph = read_structure(messages(GRAPH_TASK))
    assert graph is not None and graph.graph and graph.state == "x"
    assert graph.relations == ["A"] and graph.node_fields == ["x", "omega"]
    assert graph.time == "t"
    ode = read_structure(messages(ODE_TASK))
    assert ode is not None and not ode.graph and ode.derivative
    assert read_structure(messages(PLAIN_TASK)) is None


def test_graph_targets_get_graph_libraries_and_an_honest_note() -> None:
    proposals = plan(GRAPH_TASK)
    moves = [move for proposal in proposals for move in proposal.moves]
    assert moves and all(move.tool == "call_sindy" for move in moves)
    assert all(move.params["relation"] == "A" and move.params["x"] == ["x", "omega"]
               for move in moves)
    assert all(GRAPH_LIMITS in proposal.text for proposal in proposals)
    assert proposals[0].moves != proposals[1].moves


def test_derivative_targets_leave_the_time_out() -> None:
    moves = [move for proposal in plan(ODE_TASK) for move in proposal.moves]
    assert moves[0].tool == "call_sindy"
    assert all("t" not in move.params["x"] for move in moves)
    assert plan(PLAIN_TASK) is None

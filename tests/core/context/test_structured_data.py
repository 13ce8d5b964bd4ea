"""StructuredData through a run's commit, role notes, and manifest round trips with relations."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest

from srh_core.context import AgentContext, load_context_data
from srh_core.context.manifest_writer import save_context_data
from srh_core.context.structured import StructuredData, commit_run_data
from srh_core.errors import ContextManifestError

EDGES = np.array([[0, 1], [1, 2], [2, 0]])


def graph_features() -> StructuredData:
    rng = np.random.default_rng(0)
    return StructuredData({"x": rng.normal(size=(8, 3)), "A": EDGES,
                           "w": rng.uniform(size=(8, 3)), "t": np.arange(8.0)},
                          relation_names=["A"], num_nodes=3, variable_structures={"w": "A"},
                          variable_descriptions={"x": "temperature"}, time="t",
                          derivatives={"dx": "x"})


def test_commit_keeps_the_layout_and_writes_role_notes() -> None:
    context = AgentContext()
    commit_run_data(context, graph_features(), {"dx": np.ones((8, 3))})
    assert context.relation_names == {"A"} and context.num_nodes == 3
    assert context.variable_structures == {"w": "A"} and context.target == "dx"
    notes = context.variable_descriptions
    assert notes["x"] == "[node field over 3 nodes] temperature"
    assert notes["A"].startswith("[relation over 3 nodes; rows (target, source)]")
    assert notes["w"] == "[edge field of A]" and notes["t"] == "[time]"
    assert notes["dx"] == "[time derivative dx/dt of x]"


def test_plain_mappings_commit_as_before() -> None:
    context = AgentContext()
    commit_run_data(context, {"x": np.arange(4.0)}, {"y": np.arange(4.0)})
    assert context.num_nodes is None and context.variable_descriptions == {"x": "", "y": ""}


def test_structured_data_pickles_with_its_layout() -> None:
    again = pickle.loads(pickle.dumps(graph_features()))
    assert isinstance(again, StructuredData) and again.num_nodes == 3
    assert again.derivatives == {"dx": "x"} and set(again) == {"x", "A", "w", "t"}


def test_manifest_round_trip_keeps_relations_and_structures(tmp_path: Path) -> None:
    context = AgentContext()
    commit_run_data(context, graph_features(), {"dx": np.ones((8, 3))})
    save_context_data(context, tmp_path / "graph", description="a ring")
    loaded = load_context_data(tmp_path / "graph")
    again = AgentContext()
    again.commit_context_data(loaded)
    assert again.layout == context.layout
    assert again.variable_descriptions == context.variable_descriptions
    for name, value in context.data.items():
        np.testing.assert_array_equal(again.data[name], value)
        assert again.data[name].dtype == value.dtype
    with pytest.raises(ContextManifestError, match="exists"):
        save_context_data(context, tmp_path / "graph")

"""nd2 and sr4mdl: optional backends that say how to install them, and never make up results."""

from __future__ import annotations

import json

import numpy as np
import pytest

from srh_core.agent import SRAgent
from srh_core.cli import main
from srh_core.context import AgentContext
from srh_core.tools.base import BaseTool
from srh_core.tools.neural import ND2, SR4MDL, graph_arrays

BACKENDS = [pytest.param("nd2", ND2, id="nd2"), pytest.param("sr4mdl", SR4MDL, id="sr4mdl")]


@pytest.fixture
def context() -> AgentContext:
    rng = np.random.default_rng(0)
    x1 = rng.uniform(1, 3, 40)
    context = AgentContext()
    context.commit_data({"x1": x1, "y": 2 * x1}, target="y")
    return context


@pytest.fixture(autouse=True)
def nothing_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ND2_HOME", "ND2_CHECKPOINT", "SR4MDL_HOME", "SR4MDL_CHECKPOINT"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize(("name", "backend"), BACKENDS)
def test_a_missing_backend_answers_how_to_install_it(name, backend, context) -> None:
    reason = BaseTool.get_class(name).availability()
    assert reason is not None and backend.repository in reason
    assert backend.home_variable in reason and "checkpoint" in reason
    params = {"binary_operators": ["+"], "unary_operators": []} if name == "sr4mdl" else {}
    result = BaseTool.create(name, context)(**params)
    assert not result.ok and result.meta_data["error_type"] == "BackendUnavailableError"
    assert backend.repository in result.result_str and "formula" not in result.result


@pytest.mark.parametrize(("name", "backend"), BACKENDS)
def test_a_clone_and_checkpoint_without_torch_is_still_unavailable(
        name, backend, tmp_path, monkeypatch) -> None:
    (tmp_path / backend.marker).write_text("")
    (tmp_path / "weights").mkdir()
    (tmp_path / "weights" / "checkpoint.pth").write_bytes(b"")
    monkeypatch.setenv(backend.home_variable, str(tmp_path))
    status = backend.status()
    assert status["installed"] and status["checkpoint_available"]
    if status["torch"]:
        pytest.skip("torch is installed here")
    reason = backend.unavailable()
    assert reason is not None and "pip install torch" in reason
    assert "a clone of" not in reason and "its trained checkpoint" not in reason


def test_the_catalogue_lists_them_unavailable_and_a_run_does_not_offer_them(capsys) -> None:
    assert main(["tool", "list", "--json"]) == 0
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)["tools"]}
    assert rows["nd2"]["unavailable"] and rows["sr4mdl"]["unavailable"]
    assert "nd2" not in SRAgent(llm_provider="offline").enabled_tool_names()
    assert SRAgent(llm_provider="offline", tools=["sr4mdl", "evaluate_formula"]
                   ).enabled_tool_names() == ["evaluate_formula"]


def test_an_edge_list_gives_an_adjacency_and_back() -> None:
    edges = np.array([[0, 1], [1, 2], [2, 0]])
    arrays = graph_arrays({"G": edges, "x": np.zeros((5, 3))})
    assert arrays["A"].tolist() == [[0, 1, 0], [0, 0, 1], [1, 0, 0]]
    assert graph_arrays({"A": arrays["A"]})["G"].tolist() == [[0, 1], [1, 2], [2, 0]]

"""validate_context_data on directories written here: valid, broken in several ways, outside."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from srh_core.context import AgentContext
from srh_core.context.manifest import load_context_data
from srh_core.context.manifest_writer import save_context_data
from srh_core.errors import ContextManifestError
from srh_core.tools.base import BaseTool


def validate(context: AgentContext, **params):
    return BaseTool.create("validate_context_data", context)(**params)


@pytest.fixture
def workspace(tmp_path: Path) -> AgentContext:
    folder = tmp_path / "ws"
    folder.mkdir()
    x = np.linspace(1, 2, 30)
    source = AgentContext(data={"x": x, "y": 3 * x}, target="y",
                          variable_descriptions={"x": "length in m"})
    save_context_data(source, folder / "context.data")
    (tmp_path / "outside").mkdir()
    return AgentContext(data={"a": [1.0, 2.0], "b": [1.0, 2.0]}, target="b",
                        workspace=str(folder))


def test_a_valid_directory_is_the_one_the_loader_loads(workspace: AgentContext) -> None:
    result = validate(workspace)
    assert result.ok, result.result_str
    assert result.result["ok"] and result.result["errors"] == []
    assert result.result["target"] == "y" and result.result["n_samples"] == 30
    assert set(result.result["variables"]) == {"x", "y"}
    assert "valid; it can be committed" in result.result_str
    assert workspace.target == "b"  # the live context is untouched


def test_every_problem_is_reported_with_its_repair(workspace: AgentContext) -> None:
    folder = Path(workspace.workspace.path if hasattr(workspace.workspace, "path")
                  else workspace.workspace) / "context.data"
    manifest = json.loads((folder / "manifest.json").read_text())
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    np.save(folder / "x.npy", np.linspace(0, 1, 7))          # a length that disagrees
    manifest["variables"]["z"] = {"file": "missing.npy", "description": ""}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    changed = {p.name: p.read_bytes() for p in folder.iterdir()}
    result = validate(workspace, path="context.data")
    assert result.ok  # the tool ran; the verdict is in the result
    report = result.result
    assert report["ok"] is False and len(report["errors"]) >= 2, report["errors"]
    text = " ".join(f"{e['location']} {e['message']}" for e in report["errors"])
    assert "missing.npy" in text and "x" in text
    assert report["repairs"] and all(": " in line for line in report["repairs"])
    assert "problem(s); nothing was changed" in result.result_str
    assert "repair:" in result.result_str
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == changed != before
    with pytest.raises(ContextManifestError):  # the loader refuses it too: ok means loadable
        load_context_data(folder)


@pytest.mark.parametrize(("path", "message"), [("../outside", "outside"),
                                               ("nothing.here", "not a directory"),
                                               ("", "workspace-relative directory")])
def test_bad_paths_are_clear_errors(workspace: AgentContext, path: str, message: str) -> None:
    result = validate(workspace, path=path)
    assert not result.ok and message in result.result_str, result.result_str


def test_without_a_workspace_it_is_not_offered() -> None:
    context = AgentContext(data={"a": [1.0, 2.0], "b": [1.0, 2.0]}, target="b")
    assert BaseTool.get_class("validate_context_data").availability(context)

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from srh_core.context import (
    AgentContext,
    inspect_context_data,
    load_context_data,
    update_context_data_descriptions,
)
from srh_core.errors import ContextManifestError, DataError

N = 8


def write_store(root: Path, manifest: Any = None, arrays: dict | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    x = np.linspace(0.0, 1.0, N)
    for name, value in (arrays if arrays is not None else {"x": x, "y": 2 * x}).items():
        np.save(root / f"{name}.npy", value)
    if manifest is None:
        manifest = {
            "target": "y",
            "variables": {
                "x": {"file": "x.npy", "description": "input", "axes": ["sample"]},
                "y": {"file": "y.npy", "description": "response", "axes": ["sample"]},
            },
            "axes": {"sample": {"size": N, "description": "sample index"}},
        }
    text = manifest if isinstance(manifest, str) else json.dumps(manifest)
    (root / "manifest.json").write_text(text, encoding="utf-8")
    return root


def simple_manifest(**variables: dict) -> dict:
    base = {"x": {"file": "x.npy", "description": "input"},
            "y": {"file": "y.npy", "description": "response"}}
    return {"target": "y", "variables": {**base, **variables}}


def test_valid_directory_loads_and_commits(tmp_path: Path) -> None:
    loaded = load_context_data(write_store(tmp_path / "store"))
    assert loaded["target"] == "y"
    assert list(loaded["data"]) == ["x", "y", "sample"]
    assert loaded["variable_axes"] == {"x": ("sample",), "y": ("sample",)}
    assert loaded["variable_descriptions"]["sample"] == "sample index"
    context = AgentContext()
    summary = context.commit_context_data(loaded)
    assert summary["target"] == "y" and summary["features"] == ["x"]
    assert context.axis_names() == ("sample",) and context.n_samples == N


def test_inspect_valid_directory_reports_ok(tmp_path: Path) -> None:
    report = inspect_context_data(write_store(tmp_path / "store"))
    assert report["ok"] is True and report["errors"] == []
    assert report["variables"]["x"]["shape"] == [N]
    assert report["n_samples"] == N and report["target"] == "y"
    json.dumps(report, allow_nan=False)


def _escape_setup(root: Path) -> None:
    write_store(root, simple_manifest(x={"file": "../outside.npy", "description": "escape"}))
    np.save(root.parent / "outside.npy", np.ones(N))


def _absolute_setup(root: Path) -> None:
    write_store(root, simple_manifest(x={"file": str(root / "x.npy"), "description": "abs"}))


def _symlink_setup(root: Path) -> None:
    write_store(root, simple_manifest(x={"file": "link.npy", "description": "link"}))
    np.save(root.parent / "target.npy", np.ones(N))
    (root / "link.npy").symlink_to(root.parent / "target.npy")


def _pickled_setup(root: Path) -> None:
    write_store(root, simple_manifest())
    np.save(root / "x.npy", np.array([{"a": 1}] * N, dtype=object), allow_pickle=True)


def _manifest_setup(text: Any) -> Any:
    return lambda root: write_store(root, text)


def _arrays_setup(**arrays: Any) -> Any:
    def setup(root: Path) -> None:
        write_store(root, simple_manifest(), {"x": np.ones(N), "y": np.ones(N), **arrays})
    return setup


INVALID = [
    pytest.param(lambda root: root.mkdir(), "manifest.json", "missing", "Create it",
                 id="missing-manifest"),
    pytest.param(_manifest_setup('{"variables": {'), "manifest.json", "not valid JSON",
                 "valid UTF-8 JSON", id="bad-json"),
    pytest.param(_manifest_setup('{"variables": {}, "variables": {}}'), "manifest.json",
                 "duplicate JSON key", "valid UTF-8 JSON", id="duplicate-key"),
    pytest.param(_manifest_setup({**simple_manifest(), "target": "yy"}), "manifest.target",
                 "Did you mean 'y'", "Name one of the variables", id="unknown-target"),
    pytest.param(_manifest_setup(simple_manifest(w={"file": "w.npy", "description": "?"})),
                 "variables.w.file", "does not exist", "Add the file", id="missing-file"),
    pytest.param(_escape_setup, "variables.x.file", "relative path inside", "plain file name",
                 id="path-escape"),
    pytest.param(_absolute_setup, "variables.x.file", "relative path inside", "plain file name",
                 id="absolute-path"),
    pytest.param(_symlink_setup, "variables.x.file", "symlink escape", "Copy the file",
                 id="symlink-escape"),
    pytest.param(_pickled_setup, "variables.x.file", "pickled", "numeric array", id="pickled"),
    pytest.param(_arrays_setup(x=np.ones(N - 1)), "variables.x", "has 7 samples",
                 "one entry per sample", id="wrong-length"),
    pytest.param(_arrays_setup(x=np.array(["a"] * N)), "variables.x", "numeric",
                 "Convert it", id="non-numeric"),
    pytest.param(_arrays_setup(y=np.full(N, np.inf)), "variables.y", "infinite",
                 "Replace inf", id="infinite"),
    pytest.param(_manifest_setup({**simple_manifest(), "colour": "red"}), "manifest.colour",
                 "Extra inputs", "Remove the field", id="extra-root-field"),
    pytest.param(_manifest_setup(simple_manifest(w={"description": "no file"})),
                 "variables.w.file", "Field required", "Add the required field",
                 id="missing-field"),
    pytest.param(_manifest_setup({"variables": {"x": {"file": "x.npy", "axes": ["t"]}}}),
                 "variables.x.axes", "Undeclared axes", "Declare the axes", id="undeclared-axis"),
]


@pytest.mark.parametrize(("setup", "location", "phrase", "hint"), INVALID)
def test_inspect_reports_each_error_with_a_hint(
    tmp_path: Path, setup: Any, location: str, phrase: str, hint: str
) -> None:
    root = tmp_path / "store"
    setup(root)
    report = inspect_context_data(root)
    assert report["ok"] is False
    matching = [e for e in report["errors"] if e["location"] == location]
    assert matching, report["errors"]
    assert phrase in matching[0]["message"]
    assert hint in matching[0]["hint"]
    with pytest.raises(ContextManifestError) as info:
        load_context_data(root)
    assert any(phrase in line for line in info.value.errors)


def test_inspect_lists_every_error_at_once(tmp_path: Path) -> None:
    manifest = simple_manifest(
        a={"file": "a.npy", "description": "missing"},
        b={"file": "../b.npy", "description": "escape"},
        c={"file": "c.npy", "description": "short"},
    )
    manifest["target"] = "why"
    write_store(tmp_path / "s", manifest, {"x": np.ones(N), "y": np.ones(N), "c": np.ones(3)})
    report = inspect_context_data(tmp_path / "s")
    locations = sorted(e["location"] for e in report["errors"])
    assert locations == ["manifest.target", "variables.a.file", "variables.b.file",
                         "variables.c"]


def test_inspect_warns_about_stray_files_and_missing_descriptions(tmp_path: Path) -> None:
    manifest = {"variables": {"x": {"file": "x.npy"}, "y": {"file": "y.npy"}}}
    root = write_store(tmp_path / "s", manifest)
    np.save(root / "stray.npy", np.ones(2))
    report = inspect_context_data(root)
    assert report["ok"] is True
    text = " ".join(report["warnings"])
    assert "stray.npy" in text and "no target" in text and "No description" in text


def test_missing_directory_is_an_error(tmp_path: Path) -> None:
    report = inspect_context_data(tmp_path / "absent")
    assert report["errors"][0]["location"] == "directory"


def test_update_descriptions_replaces_the_file_atomically(tmp_path: Path) -> None:
    root = write_store(tmp_path / "s")
    manifest_path = root / "manifest.json"
    os.chmod(manifest_path, 0o640)
    before = manifest_path.stat().st_ino
    result = update_context_data_descriptions(root, {"x": "  new text ", "sample": "row"})
    assert result["written"] == "atomic"
    assert result["variable_descriptions"]["x"] == "new text"
    assert manifest_path.stat().st_ino != before
    assert oct(manifest_path.stat().st_mode & 0o777) == oct(0o640)
    saved = json.loads(manifest_path.read_text())
    assert saved["variables"]["x"]["description"] == "new text"
    assert saved["axes"]["sample"] == {"size": N, "description": "row"}
    assert saved["target"] == "y"
    assert not [p for p in root.iterdir() if p.name.startswith(".manifest-")]


def test_update_descriptions_falls_back_to_in_place_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write_store(tmp_path / "s")

    def read_only_directory(*args: Any, **kwargs: Any) -> Any:
        raise PermissionError("read-only directory")

    monkeypatch.setattr(tempfile, "mkstemp", read_only_directory)
    before = (root / "manifest.json").stat().st_ino
    result = update_context_data_descriptions(root, {"y": "updated"})
    assert result["written"] == "in_place"
    assert (root / "manifest.json").stat().st_ino == before
    assert load_context_data(root)["variable_descriptions"]["y"] == "updated"


def test_update_descriptions_fails_cleanly_when_nothing_is_writable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write_store(tmp_path / "s")
    original = (root / "manifest.json").read_text()

    def read_only_directory(*args: Any, **kwargs: Any) -> Any:
        raise PermissionError("read-only directory")

    monkeypatch.setattr(tempfile, "mkstemp", read_only_directory)
    monkeypatch.setattr(os, "access", lambda *args, **kwargs: False)
    with pytest.raises(ContextManifestError, match="Cannot write"):
        update_context_data_descriptions(root, {"y": "updated"})
    assert (root / "manifest.json").read_text() == original


def test_update_descriptions_rejects_unknown_names(tmp_path: Path) -> None:
    root = write_store(tmp_path / "s")
    with pytest.raises(DataError, match="Did you mean 'x'") as info:
        update_context_data_descriptions(root, {"xx": "?"})
    assert info.value.variable == "xx"


def test_update_descriptions_refuses_an_invalid_store(tmp_path: Path) -> None:
    root = write_store(tmp_path / "s", {**simple_manifest(), "target": "nope"})
    with pytest.raises(ContextManifestError):
        update_context_data_descriptions(root, {"x": "?"})


def test_relation_variables_are_loaded_with_graph_metadata(tmp_path: Path) -> None:
    edges = np.array([[0, 1], [1, 2], [2, 0]])
    manifest = {
        "target": "y", "num_nodes": 3,
        "variables": {
            "y": {"file": "y.npy", "description": "node value"},
            "A": {"file": "A.npy", "description": "edges", "kind": "relation"},
            "w": {"file": "w.npy", "description": "edge weight", "structure": "A"},
        },
    }
    arrays = {"y": np.ones((4, 3)), "A": edges, "w": np.ones((4, 3))}
    loaded = load_context_data(write_store(tmp_path / "g", manifest, arrays))
    assert loaded["relation_names"] == ["A"] and loaded["variable_structures"] == {"w": "A"}
    context = AgentContext()
    context.commit_context_data(loaded)
    assert context.relation_names == {"A"} and context.num_nodes == 3
    assert context.schema()["variables"]["A"]["role"] == "relation"


HOSTILE = [
    pytest.param('{"variables": {"x": "x.npy"}}', id="spec-not-object"),
    pytest.param('{"variables": {"x": {"file": "x\\u0000.npy"}}}', id="nul-in-file-name"),
    pytest.param('{"variables": {"x": {"file": "x.npy", "axes": ["a"]}}, '
                 '"axes": {"a": {"values": [[1]]}}}', id="nested-axis-values"),
    pytest.param('{"variables": {"x": {"file": "x.npy", "kind": "relation"}}}',
                 id="relation-without-num-nodes"),
    pytest.param('{"variables": {"x": {"file": "x.npy"}}, "axes": {"x": {"size": 3}}}',
                 id="variable-and-axis-share-name"),
    pytest.param('{"variables": {"x": {"file": "x.npy", "structure": "x"}}, "num_nodes": 2}',
                 id="self-structure"),
    pytest.param(b"\xff\xfe", id="not-utf8"),
]


@pytest.mark.parametrize("content", HOSTILE)
def test_inspect_never_raises_on_hostile_manifests(tmp_path: Path, content: str | bytes) -> None:
    root = tmp_path / "s"
    root.mkdir()
    np.save(root / "x.npy", np.ones(3))
    if isinstance(content, bytes):
        (root / "manifest.json").write_bytes(content)
    else:
        (root / "manifest.json").write_text(content)
    report = inspect_context_data(root)
    assert report["ok"] is False and report["errors"]
    assert all(error["message"] and error["hint"] for error in report["errors"])
    json.dumps(report, allow_nan=False)

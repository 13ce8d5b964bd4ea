"""Workspace path resolution, mounts, lock rules and file helpers."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from srh_core.errors import WorkspaceError
from srh_core.workspace import Workspace


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    source = tmp_path / "outside"
    source.mkdir()
    (source / "train.csv").write_text("x,y\n1,2\n")
    return source


@pytest.fixture
def ws(tmp_path: Path, outside: Path) -> Workspace:
    workspace = Workspace(tmp_path / "ws", read_only_mounts={"inputs": outside})
    workspace.write_text("data.csv", "a\n")
    workspace.write_text("context.data/manifest.json", "{}", make_parents=True)
    workspace.lock("context.data")
    return workspace


def test_plain_paths_resolve_inside_the_root(ws: Workspace) -> None:
    assert ws.resolve("data.csv") == ws.root / "data.csv"
    assert ws.resolve("new/dir/file.txt", for_write=True) == ws.root / "new/dir/file.txt"
    assert ws.resolve("") == ws.root == ws.resolve(".") == ws.resolve("./")
    assert ws.resolve("inputs/train.csv").read_text() == "x,y\n1,2\n"


@pytest.mark.parametrize(("path", "fragment"), [
    ("/etc/passwd", "absolute"),
    ("../secret", "'..'"),
    ("a/../../secret", "'..'"),
    ("a/..", "'..'"),
    ("data\x00.csv", "NUL"),
    ("x" * 2000, "longer than 1024"),
    ("a/" + "y" * 300, "longer than 255"),
], ids=["absolute", "parent", "nested_parent", "trailing_parent", "nul", "long", "segment"])
def test_escapes_are_refused_with_the_rule(ws: Workspace, path: str, fragment: str) -> None:
    with pytest.raises(WorkspaceError) as caught:
        ws.resolve(path)
    assert fragment in str(caught.value)
    assert caught.value.path is not None
    assert "relative" in str(caught.value) or "segment" in str(caught.value)


def test_non_string_paths_are_refused(ws: Workspace) -> None:
    with pytest.raises(WorkspaceError, match="str"):
        ws.resolve(b"data.csv")  # type: ignore[arg-type]


def test_symlink_pointing_outside_is_refused_everywhere(ws: Workspace, tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("secret")
    os.symlink(tmp_path, ws.root / "escape")
    os.symlink(tmp_path / "secret.txt", ws.root / "secret_link")
    for path in ("escape", "escape/secret.txt", "secret_link", "escape/missing/new.txt"):
        with pytest.raises(WorkspaceError, match="symlink"):
            ws.resolve(path)


def test_symlink_inside_the_workspace_is_followed(ws: Workspace) -> None:
    os.symlink("data.csv", ws.root / "alias.csv")
    assert ws.resolve("alias.csv") == ws.root / "data.csv"
    assert ws.read_text("alias.csv") == "a\n"


def test_symlink_in_a_mount_pointing_out_of_it_is_refused(
    ws: Workspace, outside: Path, tmp_path: Path
) -> None:
    os.symlink(tmp_path / "ws" / "data.csv", outside / "sneaky")
    with pytest.raises(WorkspaceError, match="read-only mount"):
        ws.resolve("inputs/sneaky")


def test_read_only_mount_cannot_be_written(ws: Workspace) -> None:
    for path in ("inputs/train.csv", "inputs/new.csv", "inputs"):
        with pytest.raises(WorkspaceError, match="read-only mount"):
            ws.resolve(path, for_write=True)
    with pytest.raises(WorkspaceError, match="read-only mount"):
        ws.write_text("inputs/train.csv", "overwritten")
    with pytest.raises(WorkspaceError, match="cannot be removed"):
        ws.resolve_removable("inputs")
    assert ws.read_text("inputs/train.csv") == "x,y\n1,2\n"


@pytest.mark.parametrize(("name", "fragment"), [
    ("a/b", "one plain path segment"),
    ("..", "'..'"),
    ("*", "one plain path segment"),
    ("data.csv", "already has an entry"),
])
def test_bad_mount_names_are_refused(ws: Workspace, outside: Path, name: str,
                                     fragment: str) -> None:
    with pytest.raises(WorkspaceError, match=fragment.replace("*", r"\*")):
        ws.mount(name, outside)


def test_mount_source_must_be_an_outside_directory(ws: Workspace, tmp_path: Path) -> None:
    with pytest.raises(WorkspaceError, match="not an existing directory"):
        ws.mount("x", tmp_path / "missing")
    with pytest.raises(WorkspaceError, match="overlaps"):
        ws.mount("self", ws.root / "context.data")
    with pytest.raises(WorkspaceError, match="overlaps"):
        ws.mount("parent", tmp_path)


def test_reopening_a_workspace_keeps_its_mount(tmp_path: Path, outside: Path) -> None:
    Workspace(tmp_path / "ws2", read_only_mounts={"inputs": outside})
    again = Workspace(tmp_path / "ws2", read_only_mounts={"inputs": outside})
    assert again.mounts == {"inputs": outside.resolve()}


def test_locked_paths_can_be_read_but_not_changed(ws: Workspace) -> None:
    assert ws.read_text("context.data/manifest.json") == "{}"
    for path in ("context.data", "context.data/manifest.json", "context.data/new.npy"):
        with pytest.raises(WorkspaceError, match="locked"):
            ws.resolve(path, for_write=True)
        with pytest.raises(WorkspaceError, match="locked"):
            ws.resolve_removable(path)
    with pytest.raises(WorkspaceError, match="locked"):
        ws.write_text("context.data/manifest.json", "[]")


def test_directory_containing_a_locked_file_cannot_be_removed(ws: Workspace) -> None:
    ws.write_text("results/best.json", "1", make_parents=True)
    ws.lock("results/best.json")
    with pytest.raises(WorkspaceError, match="contains the locked path 'results/best.json'"):
        ws.resolve_removable("results")
    assert ws.resolve_removable("data.csv") == ws.root / "data.csv"


def test_glob_locks_match_one_segment(ws: Workspace) -> None:
    ws.lock("*.json")
    assert ws.is_locked("top.json")
    assert not ws.is_locked("sub/deep.json")
    assert ws.is_locked("context.data/anything")
    ws.unlock("context.data")
    assert not ws.is_locked("context.data/anything")
    assert ws.lock_patterns == ("*.json",)


def test_symlink_to_a_locked_file_does_not_unlock_it(ws: Workspace) -> None:
    os.symlink("context.data/manifest.json", ws.root / "manifest_alias")
    with pytest.raises(WorkspaceError, match="locked"):
        ws.write_text("manifest_alias", "[]")
    assert ws.resolve_removable("manifest_alias") == ws.root / "manifest_alias"


def test_locked_paths_lists_existing_matches(ws: Workspace) -> None:
    assert ws.locked_paths() == [ws.root / "context.data"]
    with pytest.raises(WorkspaceError, match="root itself"):
        ws.lock(".")


def test_file_helpers(ws: Workspace) -> None:
    ws.write_text("notes/a.txt", "hello", make_parents=True)
    assert ws.exists("notes/a.txt") and not ws.exists("notes/b.txt")
    assert ws.list("notes") == ["a.txt"]
    assert ws.list() == ["context.data/", "data.csv", "inputs/", "notes/"]
    with pytest.raises(WorkspaceError, match="more than the 3 allowed"):
        ws.read_text("notes/a.txt", max_bytes=3)
    with pytest.raises(WorkspaceError, match="parent directory"):
        ws.write_text("missing/a.txt", "x")
    with pytest.raises(WorkspaceError, match="not an existing file"):
        ws.read_text("notes")
    with pytest.raises(WorkspaceError, match="root cannot be removed"):
        ws.resolve_removable(".")


def test_tree_is_bounded(ws: Workspace) -> None:
    for index in range(30):
        ws.write_text(f"many/f{index:02}.txt", "", make_parents=True)
    tree = ws.tree(max_entries=10)
    lines = tree.splitlines()
    assert len(lines) == 11 and "more entries not shown" in lines[-1]
    assert "inputs/ [read-only mount]" in ws.tree()
    with pytest.raises(WorkspaceError, match=r"\[1, 10000\]"):
        ws.tree(max_entries=0)


def test_root_must_be_a_directory(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(WorkspaceError, match="not a directory"):
        Workspace(tmp_path / "file")
    with pytest.raises(WorkspaceError, match="not a directory"):
        Workspace(tmp_path / "absent", create=False)

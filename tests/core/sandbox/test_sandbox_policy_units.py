"""Unit tests of the pieces that run inside the child, called in-process."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from srh_core.sandbox import audit_hook, confine
from srh_core.sandbox.policy import interpreter_roots, sandbox_paths


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "real" / "sub").mkdir(parents=True)
    (tmp_path / "real" / "sub" / "f.txt").write_text("x")
    os.symlink(tmp_path / "real", tmp_path / "abs_link")
    os.symlink("real/sub", tmp_path / "rel_link")
    os.symlink("loop_b", tmp_path / "loop_a")
    os.symlink("loop_a", tmp_path / "loop_b")
    return tmp_path


@pytest.mark.parametrize("relative", [
    "real/sub/f.txt", "abs_link/sub/f.txt", "rel_link/f.txt", "rel_link/../sub/f.txt",
    "missing/dir/../file", "abs_link/missing", ".", "real/./sub//f.txt",
])
def test_hook_realpath_matches_os_realpath(tree: Path, relative: str) -> None:
    path = f"{tree}/{relative}"
    assert audit_hook._realpath(path) == os.path.realpath(path)


def test_hook_realpath_refuses_symlink_loops(tree: Path) -> None:
    with pytest.raises(PermissionError):
        audit_hook._realpath(f"{tree}/loop_a/x")


def test_lock_patterns_match_segment_by_segment(tmp_path: Path) -> None:
    root = str(tmp_path)
    policy = audit_hook.build_policy({
        "read_roots": [], "write_roots": [root], "workspace": root, "pid": 1,
        "lock_patterns": ["context.data", "*.json"],
    })
    assert audit_hook._locked(f"{root}/context.data/manifest.json", policy)
    assert audit_hook._locked(f"{root}/a.json", policy)
    assert not audit_hook._locked(f"{root}/sub/a.json", policy)
    assert not audit_hook._locked(f"{root}/context.database", policy)
    assert not audit_hook._locked(root, policy)


def test_seccomp_program_is_well_formed() -> None:
    program = confine.seccomp_program(os.getpid())
    assert len(program) % 8 == 0
    assert 10 < len(program) // 8 < 4096


def test_interpreter_roots_cover_numpy_and_never_the_file_system_root() -> None:
    import numpy

    roots = interpreter_roots()
    assert "/" not in roots
    assert any(os.path.realpath(numpy.__file__).startswith(root + "/") for root in roots)


def test_paths_without_workspace_write_only_the_run_directory(tmp_path: Path) -> None:
    paths = sandbox_paths(tmp_path, None)
    assert paths.write_roots == (os.path.realpath(tmp_path),)
    assert paths.cwd == tmp_path / "work"
    assert paths.workspace is None

"""Run directories stay inside their root: ids are checked, resolved paths are checked."""

from __future__ import annotations

from pathlib import Path

import pytest

from srh_core.embedded.run_dir import path_inside, run_path
from srh_core.errors import ConfigurationError


@pytest.mark.parametrize("run_id", ["..", ".", "a/b", "a\\b", "/etc", "", " a", "a" * 65,
                                    ".hidden", "../runs2"],
                         ids=["dotdot", "dot", "slash", "backslash", "absolute", "empty",
                              "space", "too-long", "leading-dot", "escape"])
def test_bad_run_ids_never_name_a_directory(tmp_path: Path, run_id: str) -> None:
    with pytest.raises(ConfigurationError, match="'run_id' setting must be a string matching"):
        run_path(tmp_path / "runs", run_id)


def test_a_good_run_id_is_a_child_of_the_runs_directory(tmp_path: Path) -> None:
    assert run_path(tmp_path / "runs", "a.b-c_1") == (tmp_path / "runs" / "a.b-c_1").resolve()


@pytest.mark.parametrize("relative", ["..", "../x", "a/../..", "/tmp/elsewhere", ".", "link/x"],
                         ids=["parent", "sibling", "climb", "absolute", "root-itself",
                              "symlink-out"])
def test_paths_that_leave_their_root_are_refused(tmp_path: Path, relative: str) -> None:
    root = tmp_path / "runs"
    root.mkdir()
    (root / "link").symlink_to(tmp_path)
    with pytest.raises(ConfigurationError, match="must stay inside"):
        path_inside(root, relative)


def test_paths_inside_are_kept(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    assert path_inside(root, "team/run-1") == (root / "team" / "run-1").resolve()
    assert path_inside(root, str(root / "abs")) == (root / "abs").resolve()

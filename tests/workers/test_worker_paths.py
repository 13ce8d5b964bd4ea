"""A worker writes run directories only inside its SRH_RUNS_DIR, whatever the run asks."""

from __future__ import annotations

import logging
from pathlib import Path

import fakeredis
import pytest
from pydantic import ValidationError

from srh_core.agent import SearchSettings
from srh_core.errors import ConfigurationError
from srh_workers.flow.run_view import WorkerRunView
from srh_workers.flow.steps import checked_run_dir
from srh_workers.spec import RunSpec


def _runtime(tmp_path: Path, **values: object) -> WorkerRunView:
    settings = SearchSettings.build(run_id="r1", **values)
    spec = RunSpec(run_id="r1", settings=settings.model_dump(), description="", target="y",
                   features=["x"])
    return WorkerRunView(fakeredis.FakeRedis(), spec, tmp_path / "runs")


def test_the_run_directory_is_under_the_workers_runs_dir(tmp_path: Path) -> None:
    runs = (tmp_path / "runs").resolve()
    assert _runtime(tmp_path).run_dir == runs / "r1"
    assert _runtime(tmp_path, save_path="team/r1").run_dir == runs / "team" / "r1"


@pytest.mark.parametrize("save_path", ["..", "../../etc", "/etc/srh", "a/../.."])
def test_a_save_path_outside_is_refused_and_logged(tmp_path: Path, save_path: str,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    runtime = _runtime(tmp_path, save_path=save_path)
    with pytest.raises(ConfigurationError, match="must stay inside"):
        _ = runtime.run_dir
    with caplog.at_level(logging.ERROR, logger="srh.workers"):
        assert checked_run_dir(runtime) is None
    assert "the run directory is not written" in caplog.text


@pytest.mark.parametrize("run_id", ["..", ".", "a/b", "../x"])
def test_a_spec_with_a_path_like_run_id_does_not_load(run_id: str) -> None:
    with pytest.raises(ValidationError, match="run_id"):
        RunSpec(run_id=run_id, settings={}, description="", target="y", features=[])

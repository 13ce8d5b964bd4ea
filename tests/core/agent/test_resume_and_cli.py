"""Interrupt and resume, the time limit, the srh CLI (as a subprocess) and the estimator."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from srh_core.agent import SRAgent
from srh_core.estimator import NotFittedError, SRHarnessRegressor
from srh_core.types import SearchResult
from srh_engine import parse

ROOT = Path(__file__).resolve().parents[3]
SETTINGS = {"max_restart_loop": 2, "global_width": 2, "max_refinement_depth": 3,
            "local_sample_size": 2, "early_stop": False, "seed": 1}


def data():
    rng = np.random.default_rng(2)
    m, v = rng.uniform(1, 5, 300), rng.uniform(1, 5, 300)
    return {"m": m, "v": v}, {"E": 0.5 * m * v**2}


class InterruptAfter:
    """An observer that presses Ctrl-C after ``steps`` steps."""

    def __init__(self, steps: int) -> None:
        self.steps = steps

    def __call__(self, event):
        if event["event"] == "step":
            self.steps -= 1
            if self.steps == 0:
                raise KeyboardInterrupt


def test_interrupt_then_resume_gives_the_uninterrupted_run(tmp_path):
    full = SearchResult.from_dict(SRAgent(run_id="r", **SETTINGS).run(*data(), "E"))
    agent = SRAgent(run_id="r", save_path=str(tmp_path / "run"), **SETTINGS)
    agent.observers.append(InterruptAfter(5))
    cut = SearchResult.from_dict(agent.run(*data(), "E"))
    assert cut.status == "interrupted" and cut.stop_reason == "interrupted by the user"
    saved = json.loads((tmp_path / "run" / "result.json").read_text())
    assert saved["status"] == "interrupted"
    resumed = SearchResult.from_dict(SRAgent.resume(tmp_path / "run"))
    assert resumed.status == "completed"
    assert resumed.progress.endswith("24/24 nodes")
    lines = (tmp_path / "run" / "nodes.jsonl").read_text().splitlines()
    assert len({json.loads(line)["node_id"] for line in lines}) == len(lines) == 24
    assert [c.formula for c in resumed.candidates] == [c.formula for c in full.candidates]


def test_resume_of_a_finished_run_returns_its_result(tmp_path):
    SRAgent(run_id="done", save_path=str(tmp_path / "run"), max_refinement_depth=1).run(
        *data(), "E")
    again = SRAgent.resume(tmp_path / "run")
    assert again["status"] in ("completed", "early_stopped")


def srh(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "srh_core", *args], cwd=ROOT, text=True,
                          capture_output=True, timeout=timeout)


def check_result_shape(result: dict) -> None:
    assert set(result) >= {"status", "progress", "candidates", "pareto_front", "best_candidate"}
    assert result["status"] in ("completed", "early_stopped", "interrupted", "failed")
    for candidate in result["candidates"]:
        assert set(candidate) >= {"formula", "node_id", "complexity", "metrics"}
        parse(candidate["formula"])
        assert isinstance(candidate["complexity"], int)
        for split, metrics in candidate["metrics"].items():
            assert split in ("train", "validation") and "mse" in metrics
    assert all(0 <= i < len(result["candidates"]) for i in result["pareto_front"])


@pytest.mark.slow
def test_cli_run_json_prints_exactly_the_result(tmp_path):
    done = srh("run", "--problem", "feynman-I.14.4", "-L", "2", "-K", "2", "--json",
               "--out", str(tmp_path / "run"))
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)  # stdout holds the JSON and nothing else
    check_result_shape(result)
    assert "solved=" in done.stderr
    shown = srh("show", str(tmp_path / "run"), "--json")
    assert json.loads(shown.stdout) == result
    table = srh("show", str(tmp_path / "run"))
    assert "Pareto front" in table.stdout and "Best formula" in table.stdout


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "message"),
    [(["run", "--problem", "feynman-X"], "Unknown problem"),
     (["run", "--data", "missing.csv", "--target", "y"], "missing.csv"),
     (["run", "--problem", "feynman-I.14.4", "-K", "0"], "local_sample_size"),
     (["show", "no-such-dir"], "not a run directory")],
    ids=["unknown-problem", "missing-data", "bad-setting", "not-a-run-dir"])
def test_cli_reports_bad_input_clearly(args, message):
    done = srh(*args, timeout=60)
    assert done.returncode == 2 and message in done.stderr and done.stdout == ""


def test_cli_lists_problems():
    done = srh("problems", "--json", timeout=60)
    names = [p["name"] for p in json.loads(done.stdout)["problems"]]
    assert "feynman-I.6.2a" in names and len(names) == 40


def test_estimator_follows_scikit_learn_conventions():
    X, y = data()
    matrix = np.column_stack([X["m"], X["v"]])
    model = SRHarnessRegressor(max_refinement_depth=3, local_sample_size=2)
    assert (model.get_params()["max_refinement_depth"], model.get_params()["seed"]) == (3, 0)
    with pytest.raises(NotFittedError):
        model.predict(matrix)
    model.fit(matrix, y["E"], variable_names=["m", "v"])
    assert model.n_features_in_ == 2 and model.pareto_front_
    assert model.score(matrix, y["E"]) > 0.999999
    fresh = np.column_stack([np.linspace(1, 5, 7), np.linspace(2, 3, 7)])
    np.testing.assert_allclose(model.predict(fresh), 0.5 * fresh[:, 0] * fresh[:, 1] ** 2,
                               rtol=1e-8)
    assert model.set_params(max_refinement_depth=4) is model
    with pytest.raises(ValueError, match="Did you mean"):
        model.set_params(max_refinment_depth=4)

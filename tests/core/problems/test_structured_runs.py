"""End to end, embedded: `srh run --problem` on a Strogatz ODE and on a graph problem."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from srh_core.cli import main


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    code = main(["run", *args, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return {"result": json.loads(out), "stderr": err}


def test_a_strogatz_problem_ranked_by_rollout(capsys: pytest.CaptureFixture[str],
                                               tmp_path: Path) -> None:
    config = tmp_path / "settings.toml"
    config.write_text('[search]\nrollout_state = "y"\nranking_metric = "rollout_rmse"\n')
    run = run_cli(capsys, "--problem", "strogatz-lv2", "--samples", "400", "-L", "2", "-K",
                  "2", "--config", str(config), "--out", str(tmp_path / "run"))
    result = run["result"]
    best = result["candidates"][result["best_candidate"]]
    assert best["metrics"]["train"]["rollout_rmse"] < 5e-3  # observed x interpolated
    assert "solved=True" in run["stderr"]
    judgement = json.loads((tmp_path / "run" / "judgement.json").read_text())
    assert judgement["solved"] and judgement["rollout_error"] < 1e-3


def test_a_graph_problem(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    run = run_cli(capsys, "--problem", "network-kuramoto", "--samples", "400", "-L", "2",
                  "-K", "2", "--out", str(tmp_path / "run"))
    result = run["result"]
    formula = result["candidates"][result["best_candidate"]]["formula"]
    assert "sum[j](A[i, j], sin(x[j] - x[i]))" in formula
    assert "solved=True" in run["stderr"]  # judged on fresh trajectories by the CLI
    # the run directory keeps the graph's layout, so a resumed run searches the same data
    from srh_core.agent import SRAgent
    from srh_core.embedded.run_dir import RunDirectory, resumed_inputs
    from srh_core.embedded.runner import make_context

    run_dir = RunDirectory(tmp_path / "run")
    problem = run_dir.problem()
    assert problem["layout"]["relation_names"] and problem["layout"]["num_nodes"]
    X, y, layout = resumed_inputs(problem, run_dir.arrays())
    context = make_context(SRAgent(settings=run_dir.settings()), X, y, layout)
    assert sorted(context.relation_names) == problem["layout"]["relation_names"]
    assert context.num_nodes == problem["layout"]["num_nodes"]
    assert context.variable_descriptions == problem["layout"]["variable_descriptions"]
    assert list(context.feature_names()) == problem["features"]

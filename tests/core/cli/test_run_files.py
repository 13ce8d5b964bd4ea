"""``srh run --data DIR`` with a graph manifest; ``--evaluator FILE`` embedded and shipped."""

from __future__ import annotations

import json
from pathlib import Path

import fakeredis
import numpy as np
import pytest

from srh_core.agent.settings import SearchSettings
from srh_core.cli import main
from srh_core.context import AgentContext
from srh_core.context.manifest_writer import save_context_data
from srh_core.context.structured import commit_run_data
from srh_core.errors import ConfigurationError
from srh_core.problems import load_suite
from tests.support.evaluators import MAX_ERROR_EVALUATOR

EVALUATOR = MAX_ERROR_EVALUATOR


def test_a_graph_manifest_runs_with_its_relation_and_nodes(tmp_path: Path, capsys):
    problem = load_suite("network").get("network-diffusion")
    X, y = problem.sample(200, seed=0)
    context = AgentContext()
    commit_run_data(context, X, {problem.output: y})
    save_context_data(context, tmp_path / "context.data")
    out = tmp_path / "run"
    code = main(["run", "--data", str(tmp_path / "context.data"), "-L", "2", "--out", str(out),
                 "--json"])
    result = json.loads(capsys.readouterr().out)
    assert code == 0 and result["status"] in ("completed", "early_stopped"), result
    layout = json.loads((out / "problem.json").read_text())["layout"]
    assert layout["relation_names"] == ["A"] and layout["num_nodes"] == problem.num_nodes
    assert result["best_candidate"] is not None


def test_a_manifest_without_a_target_needs_one(tmp_path: Path, capsys):
    x = np.linspace(1, 2, 30)
    save_context_data(AgentContext(data={"x": x, "y": 2 * x}), tmp_path / "d")
    assert main(["run", "--data", str(tmp_path / "d"), "-L", "1"]) == 2
    assert "names no target" in capsys.readouterr().err
    assert main(["run", "--data", str(tmp_path / "d"), "--target", "z", "-L", "1"]) == 2
    assert "variables: x, y" in capsys.readouterr().err


def test_the_evaluator_file_scores_every_candidate(tmp_path: Path, capsys):
    (tmp_path / "mine.py").write_text(EVALUATOR)
    out = tmp_path / "run"
    code = main(["run", "--equation", "y = 2*x1 + x2", "--samples", "200", "-L", "2",
                 "--evaluator", str(tmp_path / "mine.py"), "--out", str(out), "--json"])
    result = json.loads(capsys.readouterr().out)
    assert code == 0, result
    metrics = result["candidates"][result["best_candidate"]]["metrics"]
    assert all("max_abs_error" in block for block in metrics.values()), metrics
    settings = json.loads((out / "run.json").read_text())["agent"]
    assert settings["evaluator"] == str((tmp_path / "mine.py").resolve())


def test_a_broken_evaluator_file_is_a_usage_error(tmp_path: Path, capsys):
    (tmp_path / "none.py").write_text("x = 1\n")
    assert main(["run", "--equation", "y = x1", "-L", "1", "--out", str(tmp_path / "r"),
                 "--evaluator", str(tmp_path / "none.py")]) == 2
    assert "exactly one subclass of DefaultEvaluator" in capsys.readouterr().err


def test_a_cluster_ships_a_custom_evaluator_only_when_it_loads(tmp_path: Path):
    from srh_core.errors import EvaluatorLoadError
    from srh_core.evaluator.sandboxed import MAX_SOURCE_BYTES, EvaluatorSource
    from srh_workers.spec import RunSpec
    from srh_workers.submit import submit_run

    def submit(path: Path) -> None:
        settings = SearchSettings.build(evaluator=str(path), run_id="ev1")
        submit_run(client, lambda action: None, settings, {"x": np.arange(10.0)},
                   {"y": np.arange(10.0)})

    client = fakeredis.FakeRedis()
    with pytest.raises(EvaluatorLoadError, match="existing .py file"):
        submit(tmp_path / "missing.py")
    (tmp_path / "none.py").write_text("x = 1\n")
    with pytest.raises(EvaluatorLoadError, match="exactly one subclass"):
        submit(tmp_path / "none.py")
    (tmp_path / "huge.py").write_text(EVALUATOR + "#" * MAX_SOURCE_BYTES)
    with pytest.raises(EvaluatorLoadError, match="at most"):
        submit(tmp_path / "huge.py")
    assert client.keys() == []
    (tmp_path / "mine.py").write_text(EVALUATOR)
    submit(tmp_path / "mine.py")
    spec = RunSpec.model_validate_json(client.get("srh:{ev1}:spec"))
    assert spec.evaluator_source == EvaluatorSource.read(tmp_path / "mine.py")
    assert "evaluator_source" not in repr(spec)
    bare = RunSpec(run_id="ev2", settings=spec.settings, description="", target="y",
                   features=["x"])
    with pytest.raises(ConfigurationError, match="no evaluator source"):
        bare.search_settings()  # a worker, given a spec that names a file it cannot have
    damaged = spec.evaluator_source.model_copy(update={"source": EVALUATOR + "# changed"})
    with pytest.raises(EvaluatorLoadError, match="digest"):
        damaged.checked()


def test_a_sweep_names_its_evaluator_relative_to_the_sweep_file(tmp_path: Path):
    from srh_core.sweep import cells, load_sweep
    from srh_core.sweep.runner import cell_data

    (tmp_path / "mine.py").write_text(EVALUATOR)
    sweep = tmp_path / "sweep.toml"
    sweep.write_text('[sweep]\nname = "ev"\nproblems = ["feynman-I.14.4"]\nseeds = [0]\n'
                     'samples = 100\n\n[settings]\nevaluator = "mine.py"\n')
    spec = load_sweep(sweep)
    settings = cell_data(spec, cells(spec)[0]).settings
    assert settings.evaluator == str(tmp_path / "mine.py")


def test_stream_asks_the_model_to_stream_and_the_run_records_it(tmp_path: Path):
    out = tmp_path / "r"
    assert main(["run", "--equation", "y = x1", "-L", "1", "--out", str(out), "--stream",
                 "--json"]) == 0
    assert json.loads((out / "run.json").read_text())["agent"]["llm_stream"] is True

"""A shipped evaluator runs in the sandbox and scores exactly as the file loaded in-process."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest

import srh_engine as engine
from srh_core.context import AgentContext
from srh_core.errors import EvaluatorLoadError
from srh_core.evaluator import load_custom_evaluator
from srh_core.evaluator import sandboxed as sandboxed_module
from srh_core.evaluator.sandboxed import EvaluatorSource, SandboxedEvaluator
from srh_core.tools.evaluate import EvaluateTool
from tests.support.evaluators import MAX_ERROR_EVALUATOR

pytestmark = pytest.mark.skipif(not Path("/proc").exists(), reason="the sandbox needs Linux")


def context_with(evaluator) -> AgentContext:
    rng = np.random.default_rng(11)
    x1, x2 = rng.uniform(1, 5, (2, 90))
    context = AgentContext(args={"validation_fraction": 0.25, "split_random_state": 3},
                           evaluator=evaluator)
    context.commit_data({"x1": x1, "x2": x2, "y": 1.7 * x1 * x2 + rng.normal(0, 0.1, 90)},
                        target="y")
    return context


@pytest.fixture(scope="module")
def max_error_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    file = tmp_path_factory.mktemp("evaluator") / "max_error.py"
    file.write_text(MAX_ERROR_EVALUATOR)
    return file


@pytest.fixture(scope="module")
def shipped(max_error_file: Path) -> SandboxedEvaluator:
    """One loaded evaluator for the module: each load is a sandboxed process."""
    return SandboxedEvaluator(EvaluatorSource.read(max_error_file))


def test_the_sandboxed_evaluator_scores_as_the_local_load(
        max_error_file: Path, shipped: SandboxedEvaluator) -> None:
    file, sandboxed = max_error_file, shipped
    assert sandboxed.class_name == "MaxErrorEvaluator"
    local, shipped = context_with(load_custom_evaluator(file)), context_with(sandboxed)
    assert np.array_equal(local.train_split.data["x1"], shipped.train_split.data["x1"])
    assert np.array_equal(local.validation_split.data["y"], shipped.validation_split.data["y"])
    call = {"f": 'param("a")*x1*x2', "fit": True}
    expected = EvaluateTool(context=local)(**call)
    got = EvaluateTool(context=shipped)(**call)
    assert expected.ok and got.ok, got.result_str
    assert got.result["formula"] == expected.result["formula"]
    assert got.result["data_split_results"] == expected.result["data_split_results"]
    assert "max_abs_error" in got.result["data_split_results"]["train"]["metrics"]


def test_a_shipped_file_that_fails_in_the_sandbox_is_a_typed_error(tmp_path: Path) -> None:
    file = tmp_path / "bad.py"
    file.write_text(MAX_ERROR_EVALUATOR + "\nimport socket\nsocket.socket()\n")
    with pytest.raises(EvaluatorLoadError, match="failed in the sandbox"):
        SandboxedEvaluator(EvaluatorSource.read(file))


def test_the_data_is_saved_once_per_revision_and_a_refresh_reaches_the_file(
        max_error_file: Path, shipped: SandboxedEvaluator,
        monkeypatch: pytest.MonkeyPatch) -> None:
    file, sandboxed = max_error_file, shipped
    saved: list[int] = []
    save = sandboxed_module.save_context_data

    def counted(context: AgentContext, directory: str | Path, **options) -> Path:
        saved.append(context.revision)
        return save(context, directory, **options)

    monkeypatch.setattr(sandboxed_module, "save_context_data", counted)
    context, local = context_with(sandboxed), load_custom_evaluator(file)
    f, y = engine.parse("1.7*x1*x2"), engine.Symbol("y")
    scores = [sandboxed.evaluate(f, y, context)["max_abs_error"] for _ in range(2)]
    assert saved == [context.revision]
    assert scores == [local.evaluate(f, y, context)["max_abs_error"]] * 2

    x1, x2 = context.data["x1"], context.data["x2"]
    context.commit_data({"x1": x1, "x2": x2, "y": 1.7 * x1 * x2 + 1.0}, target="y")
    refreshed = sandboxed.evaluate(f, y, context)["max_abs_error"]
    assert saved == [context.revision - 1, context.revision]
    assert refreshed == local.evaluate(f, y, context)["max_abs_error"] != scores[0]

    clone = pickle.loads(pickle.dumps(sandboxed))  # a context carrying it still pickles
    assert (clone.shipped, clone.class_name) == (sandboxed.shipped, "MaxErrorEvaluator")

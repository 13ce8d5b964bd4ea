"""read_source on the installed packages; validate_evaluator loading model files in the sandbox
(a valid evaluator and a non-finite custom metric: tests/core/agent/test_authoring_agents.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from srh_core.context import AgentContext
from srh_core.tools.base import BaseTool
from tests.support.evaluators import MAX_ERROR_EVALUATOR

GOOD_EVALUATOR = MAX_ERROR_EVALUATOR
ESCAPING = GOOD_EVALUATOR.replace("metrics = super()", 'open("/etc/hostname").read()\n'
                                  '        metrics = super()')


def read_source(**params):
    return BaseTool.create("read_source")(**params)


def test_read_source_lists_reads_and_finds_symbols():
    listing = read_source()
    assert listing.ok and "srh_core" in listing.result["entries"]
    file = read_source(path="srh_core/evaluator/default.py")
    assert file.ok and "class DefaultEvaluator" in file.result["source"]
    found = read_source(path="srh_core/evaluator", symbol="DefaultEvaluator.evaluate_candidate",
                        include_references=True)
    assert found.ok, found.result_str
    definition = found.result["definitions"][0]
    assert definition["path"] == "srh_core/evaluator/default.py"
    assert definition["source"].lstrip().startswith("def evaluate_candidate")


@pytest.mark.parametrize("params", [
    {"path": "../etc"}, {"path": "srh_core/../../pyproject.toml"}, {"path": "tests"},
    {"path": "srh_core/nothing.py"}, {"symbol": "x", "include_implementation": False},
], ids=["parent", "escape", "other-dir", "missing", "empty-query"])
def test_read_source_refuses_what_is_not_package_source(params):
    result = read_source(**params)
    assert not result.ok and result.result_str.startswith("Invalid arguments")


@pytest.fixture
def context(tmp_path: Path) -> AgentContext:
    (tmp_path / "context.evaluator").mkdir()
    x = np.linspace(1.0, 2.0, 40)
    return AgentContext(data={"x": x, "y": 3 * x + 0.01 * np.sin(9 * x)}, target="y",
                        workspace=str(tmp_path), args={"validation_fraction": 0.25})


def validate(context: AgentContext, source: str, name: str = "mine.py"):
    (Path(context.workspace) / "context.evaluator" / name).write_text(source)
    return BaseTool.create("validate_evaluator", context)(
        f='param("a")*x', fit=True, evaluator_file=f"context.evaluator/{name}")


def test_the_evaluator_runs_confined(context):
    result = validate(context, ESCAPING)
    assert result.ok and not result.result["valid"]
    assert "PermissionError" in result.result_str or "not allowed" in result.result_str


def test_a_file_that_does_not_load_says_why(context):
    result = validate(context, "import nothing_here\n")
    assert result.ok and not result.result["valid"] and not result.result["loaded"]
    assert "did not load" in result.result_str and "nothing_here" in result.result_str


@pytest.mark.parametrize("path", ["mine.py", "context.evaluator/../x.py", "/tmp/x.py",
                                  "context.evaluator/x.txt", "context.evaluator/missing.py"])
def test_paths_outside_context_evaluator_are_refused(context, path):
    result = BaseTool.create("validate_evaluator", context)(f="x", evaluator_file=path)
    assert not result.ok
    assert "evaluator_file" in result.result_str or "not a file" in result.result_str

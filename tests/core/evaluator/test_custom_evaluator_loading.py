from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import srh_engine as engine
from srh_core.context import AgentContext, context_from_payload
from srh_core.errors import ConfigurationError, EvaluatorLoadError
from srh_core.evaluator import DefaultEvaluator, load_custom_evaluator
from srh_core.evaluator.loading import MODULE_PREFIX

HEADER = "from srh_core.evaluator import DefaultEvaluator\n\n"
ONE = HEADER + """
from dataclasses import dataclass


@dataclass
class Settings:
    scale: float = 10.0


class ScaledEvaluator(DefaultEvaluator):
    @classmethod
    def evaluate_candidate(cls, f, context):
        metrics = super().evaluate_candidate(f, context)
        metrics["scaled_mse"] = Settings().scale * metrics["mse"]
        return metrics
"""


def write(tmp_path: Path, text: str, name: str = "custom_evaluator.py") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_one_subclass_is_loaded_and_used(tmp_path: Path) -> None:
    path = write(tmp_path, ONE)
    evaluator = load_custom_evaluator(path)
    assert isinstance(evaluator, DefaultEvaluator)
    assert type(evaluator).__name__ == "ScaledEvaluator"
    assert type(evaluator).source_path == str(path.resolve())  # type: ignore[attr-defined]
    assert not [name for name in sys.modules if name.startswith(MODULE_PREFIX)]
    context = AgentContext(data={"x": np.arange(5.0), "y": np.arange(5.0)}, target="y",
                           evaluator=evaluator)
    metrics = context.evaluator.evaluate_candidate(engine.parse("x + 1"), context)
    assert metrics["scaled_mse"] == pytest.approx(10.0)


def test_loading_twice_gives_independent_classes(tmp_path: Path) -> None:
    path = write(tmp_path, ONE)
    assert type(load_custom_evaluator(path)) is not type(load_custom_evaluator(path))


def test_imported_subclasses_do_not_count(tmp_path: Path) -> None:
    write(tmp_path, ONE, "base_evaluator.py")
    text = (f"import sys\nsys.path.insert(0, {str(tmp_path)!r})\n"
            "from base_evaluator import ScaledEvaluator\n\n"
            "class Mine(ScaledEvaluator):\n    pass\n")
    try:
        evaluator = load_custom_evaluator(write(tmp_path, text))
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("base_evaluator", None)
    assert type(evaluator).__name__ == "Mine"


@pytest.mark.parametrize(
    ("text", "phrase", "found"),
    [
        pytest.param(HEADER + "class NotOne:\n    pass\n", "found 0: []", [], id="zero"),
        pytest.param(HEADER + "class A(DefaultEvaluator):\n    pass\n\n\n"
                     "class B(DefaultEvaluator):\n    pass\n", "found 2: ['A', 'B']",
                     ["A", "B"], id="two"),
    ],
)
def test_not_exactly_one_subclass(tmp_path: Path, text: str, phrase: str, found: list) -> None:
    with pytest.raises(EvaluatorLoadError, match="exactly one") as info:
        load_custom_evaluator(write(tmp_path, text))
    assert phrase in str(info.value) and info.value.found == found


def test_syntax_error_is_wrapped(tmp_path: Path) -> None:
    with pytest.raises(EvaluatorLoadError, match="SyntaxError") as info:
        load_custom_evaluator(write(tmp_path, HEADER + "class Broken(DefaultEvaluator)\n"))
    assert isinstance(info.value.__cause__, SyntaxError)
    assert isinstance(info.value, ConfigurationError) and info.value.setting == "evaluator"
    assert not [name for name in sys.modules if name.startswith(MODULE_PREFIX)]


def test_import_time_exception_is_wrapped(tmp_path: Path) -> None:
    with pytest.raises(EvaluatorLoadError, match="ZeroDivisionError") as info:
        load_custom_evaluator(write(tmp_path, "1 / 0\n"))
    assert isinstance(info.value.__cause__, ZeroDivisionError)


@pytest.mark.parametrize(
    ("name", "create", "phrase"),
    [
        pytest.param("absent.py", False, "does not exist", id="missing"),
        pytest.param("evaluator.txt", True, "must be a .py file", id="not-python"),
    ],
)
def test_bad_paths(tmp_path: Path, name: str, create: bool, phrase: str) -> None:
    path = tmp_path / name
    if create:
        path.write_text(ONE)
    with pytest.raises(EvaluatorLoadError, match=phrase):
        load_custom_evaluator(path)


def test_payload_reloads_a_custom_evaluator_from_its_file(tmp_path: Path) -> None:
    evaluator = load_custom_evaluator(write(tmp_path, ONE))
    context = AgentContext(data={"y": np.ones(3)}, target="y", evaluator=evaluator)
    rebuilt = context_from_payload(context.to_payload())
    assert type(rebuilt.evaluator).__name__ == "ScaledEvaluator"
    assert type(rebuilt.evaluator) is not type(evaluator)

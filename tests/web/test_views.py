"""The workbench's view of a run's best formula follows the run's ``selection``."""

from __future__ import annotations

from srh_core.types import CandidateRecord
from srh_web import views


def record(formula: str, complexity: int, loss: float) -> CandidateRecord:
    return CandidateRecord(formula, f"run:{formula}", {
        "metrics": {"train": {"mse": loss, "r2": 1.0 - loss}},
        "complexity": complexity, "canonical_key": formula})


POOL = [record("overfit", 100, 0.99e-4), record("truth", 5, 1.0e-4), record("mean", 1, 1.0)]


def test_the_best_shown_is_the_one_the_run_reports():
    assert views.front_view(POOL, "mse", False, "best")["best"]["formula"] == "truth"
    assert views.front_view(POOL, "mse", False, "accuracy")["best"]["formula"] == "overfit"
    assert views.front_view([], "mse", False)["best"] is None


def test_runs_from_before_the_setting_show_the_most_accurate():
    assert views.settings_view({})["selection"] == "accuracy"
    assert views.settings_view({"selection": "best"})["selection"] == "best"

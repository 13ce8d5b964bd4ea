"""The rule that picks a run's reported best formula (``selection``)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from srh_core import AgentContext, BaseTool
from srh_core.agent.candidates import sample_candidates
from srh_core.agent.settings import SearchSettings
from srh_core.errors import ConfigurationError
from srh_core.ranking import (
    SELECTION_LOSS_FLOOR,
    RankingPolicy,
    pareto_indices,
    rank_candidates,
    select_best,
    selection_complexity,
)
from srh_core.state import SearchRunState
from srh_core.types import CandidateRecord, ToolCall


def record(formula: str, complexity: int, loss: float, *, r2: bool = True) -> CandidateRecord:
    metrics = {"mse": loss, **({"r2": 1.0 - loss} if r2 else {})}
    return CandidateRecord(formula, f"run:{formula}", {
        "metrics": {"train": metrics}, "complexity": complexity, "canonical_key": formula})


@pytest.fixture(scope="module")
def noisy_candidates() -> list[CandidateRecord]:
    """x1*x2**2 with 1% noise, scored by the real tools: the truth and a degree-5 polynomial."""
    rng = np.random.default_rng(0)
    x1, x2 = rng.uniform(1, 5, (2, 500))
    truth = x1 * x2**2
    y = truth + rng.normal(0.0, 0.01 * truth.std(), truth.shape)
    # no validation split: the polynomial's span holds the truth, so its error is lower for sure
    context = AgentContext(args={"validation_fraction": 0.0},
                           data={"x1": x1, "x2": x2, "y": y}, target="y")
    calls = [ToolCall("evaluate_formula", {"f": "x1*x2**2"}),
             ToolCall("polynomial_fit", {"max_degree": 5, "simplify": False})]
    results = [BaseTool.create(call.name, context)(**call.params) for call in calls]
    return sample_candidates(calls, results, "run:R1-C1-L1-K1", "y")


def test_on_noisy_data_the_truth_wins_under_best_and_loses_under_accuracy(
        noisy_candidates, tmp_path):
    policy = RankingPolicy()
    ranked = rank_candidates(noisy_candidates, policy)
    overfit, truth = ranked
    assert truth.formula == "x1*x2**2" and truth.complexity == 5
    assert overfit.complexity > 100 and pareto_indices(ranked) == [0, 1]
    state = SearchRunState(tmp_path, "mse", False, run_id="run")
    for candidate in noisy_candidates:
        state.push_candidate(candidate)
    assert state.result("completed", "done", selection="accuracy").best.formula == overfit.formula
    best = state.result("completed", "done", selection="best")
    assert best.best.formula == "x1*x2**2"
    saved = json.loads((tmp_path / "result.json").read_text())
    assert saved["candidates"][saved["best_candidate"]]["formula"] == "x1*x2**2"
    assert best.pareto_front == [0, 1] and best.candidates[0].formula == overfit.formula


def test_among_exact_fits_the_simplest_wins():
    ranked = rank_candidates([record("overfit", 40, 1e-30), record("truth", 5, 1e-22),
                              record("c", 1, 1.0)], RankingPolicy())
    assert [c.formula for c in ranked] == ["overfit", "truth", "c"]
    assert ranked[select_best(ranked, RankingPolicy())].formula == "truth"
    assert select_best(ranked, RankingPolicy(), "accuracy") == 0


@pytest.mark.parametrize(("front", "expected"), [
    ([("a", 3, 0.10), ("b", 7, 0.001)], "b"),          # a real gain in accuracy is taken
    ([("a", 3, 1.2e-4), ("b", 60, 1.0e-4)], "a"),      # within 1.5x: the steep drop wins
    ([("a", 3, 2.0e-4), ("b", 60, 1.0e-4)], "b"),      # a is not within 1.5x of the lowest
], ids=["gain", "within-factor", "outside-factor"])
def test_the_score_and_the_loss_factor(front, expected):
    ranked = rank_candidates([record(*entry) for entry in front], RankingPolicy())
    assert ranked[select_best(ranked, RankingPolicy())].formula == expected


def test_exact_constants_do_not_count_against_a_formula():
    # the truth written exactly has 11 nodes, 9 with 4*pi folded: a simpler near miss
    # (10 nodes) on the front must not win over it
    ranked = rank_candidates([
        record("q1/(4*pi*epsilon*r**2)", 11, 1.4837e-4),
        record("arcsin(0.0794*q1/epsilon/r**2)", 10, 1.5057e-4),
        record("0.0193", 1, 1.0)], RankingPolicy())
    assert [c.complexity for c in ranked] == [11, 10, 1]
    assert selection_complexity(ranked[0]) == 9
    assert ranked[select_best(ranked, RankingPolicy())].formula == "q1/(4*pi*epsilon*r**2)"


def test_fallbacks_and_the_floor():
    assert select_best([], RankingPolicy()) is None
    ranked = rank_candidates([record("a", 9, 0.1), record("b", 3, 0.2, r2=False)],
                             RankingPolicy())
    assert select_best(ranked, RankingPolicy()) == 0  # no r2 on the front: the most accurate
    assert 0 < SELECTION_LOSS_FLOOR < 1e-12


def test_the_setting_is_validated():
    assert SearchSettings().selection == "best"
    assert SearchSettings.build(selection="accuracy").selection == "accuracy"
    with pytest.raises(ConfigurationError, match="'selection' setting must be one of"):
        SearchSettings.build(selection="aic")

"""The offline provider with more features than a fit takes: screen first, then fit the few."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from srh_core.agent import SRAgent
from srh_core.agent.prompts import user_prompt
from srh_core.api.offline.reader import ConversationView, Variable
from srh_core.api.offline.screening import (
    SCREENING_MARK,
    all_feature_names,
    screened_plan,
    select_features,
)
from srh_core.problems import Problem
from srh_core.tools.formula import MAX_INPUTS

N_SAMPLES = 600
N_FEATURES = 50


def noisy_problem(formula: str, relevant: dict[str, tuple[float, float]], seed: int
                  ) -> tuple[Problem, dict[str, np.ndarray], np.ndarray]:
    """``formula``'s variables hidden among noise features, in a shuffled column order."""
    target = Problem.from_dict({"id": "y", "output": "y", "formula": formula, "variables": [
        {"name": n, "low": lo, "high": hi} for n, (lo, hi) in relevant.items()]})
    X, y = target.sample(N_SAMPLES, seed=seed)
    rng = np.random.default_rng([seed, 1])  # not the stream the problem sampled from
    for index in range(N_FEATURES - len(relevant)):
        X[f"n{index}"] = rng.uniform(1, 5, N_SAMPLES)
    order = rng.permutation(list(X))
    return target, {name: X[name] for name in order}, y


def tool_results(agent: SRAgent) -> list[dict[str, Any]]:
    return [result for node in agent.store.records(include_detail=True)
            for result in node["detail"]["tool_results"]]


@pytest.mark.parametrize(("formula", "relevant"), [
    ("1.5*a*b**2/c", {"a": (1, 5), "b": (1, 3), "c": (1, 4)}),
    ("a*exp(-b/c)", {"a": (1, 3), "b": (1, 2), "c": (1, 3)}),
], ids=["monomial", "exponential"])
def test_fifty_features_of_which_three_matter_are_solved(formula: str,
                                                         relevant: dict) -> None:
    target, X, y = noisy_problem(formula, relevant, seed=3)
    agent = SRAgent(max_refinement_depth=6, local_sample_size=2, run_id="screen")
    result = agent.run(X, {"y": y}, "Find y")
    best = result["candidates"][result["best_candidate"]]["formula"]
    assert target.judge(best).solved, best
    failures = [r["result_str"] for r in tool_results(agent) if not r["ok"]]
    assert not any(f"at most {MAX_INPUTS}" in text or "at most 40" in text for text in failures)


def test_the_prompt_names_every_feature_and_the_screen_reads_them() -> None:
    features = {f"v{i}": np.linspace(1, 2, 5) for i in range(60)}
    prompt = user_prompt("task", features, "y", np.ones(5), {}, [], "mse")
    view = ConversationView(features=[Variable(f"v{i}", 1, 2) for i in range(40)])
    assert all_feature_names([{"role": "user", "content": prompt}], view) == list(features)


def test_the_first_step_screens_in_groups_dealt_over_the_samples() -> None:
    names = [f"v{i}" for i in range(90)]
    view = ConversationView(target=Variable("y", 1, 2), step=1, max_steps=5,
                            features=[Variable(name, 1, 2) for name in names])
    tools = [type("Meta", (), {"name": "relationship_analysis",
                               "parameters": {"properties": {"variables": {}}}})()]
    proposals = screened_plan([], view, 2, np.random.default_rng(0), tools,
                              plan=lambda *args: pytest.fail("planned before screening"))
    groups = [move.params["variables"] for p in proposals for move in p.moves]
    assert [len(g) for g in groups] == [40, 10, 40]  # groups 1 and 3 to sample 1
    assert sorted(sum(groups, [])) == sorted(names)
    assert [len(p.moves) for p in proposals] == [2, 1]
    assert all(SCREENING_MARK in p.text for p in proposals)


def test_few_features_are_left_to_the_policy_unchanged() -> None:
    view = ConversationView(features=[Variable(f"v{i}", 1, 2) for i in range(MAX_INPUTS)])
    marker = object()
    assert screened_plan([], view, 1, np.random.default_rng(0), [],
                         plan=lambda *args: marker) is marker


@pytest.mark.parametrize(("scores", "kept"), [
    ({"a": 0.4, "b": 0.1, **{f"n{i}": 0.001 * (i % 5) for i in range(30)}}, ["a", "b"]),
    ({f"v{i}": 0.02 * i for i in range(30)}, [f"v{i}" for i in range(29, 29 - MAX_INPUTS, -1)]),
    ({f"n{i}": 0.0 for i in range(30)}, [f"n{i}" for i in range(MAX_INPUTS)]),
], ids=["two-stand-out", "no-bulk-keeps-the-best", "nothing-stands-out"])
def test_selection_keeps_what_stands_out_of_the_bulk(scores: dict, kept: list) -> None:
    assert select_features(list(scores), scores) == kept

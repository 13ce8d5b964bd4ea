"""The offline provider driving the real SRAgent: exact answers, honesty, determinism."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np
import pytest

from srh_core.agent import SRAgent
from srh_core.api import BaseAPI
from srh_core.api.offline.moves import STRONG_ANGLE, angle_likeness
from srh_core.api.offline.reader import ConversationView, Variable
from srh_core.problems import Problem

N_SAMPLES = 400
OFFLINE_MARK = "[offline policy]"


def problem(formula: str, output: str, **ranges: tuple[float, float]) -> Problem:
    return Problem.from_dict({"id": output, "output": output, "formula": formula,
                              "variables": [{"name": n, "low": lo, "high": hi}
                                            for n, (lo, hi) in ranges.items()]})


GRAVITY = problem("6.674*m1*m2/r**2", "F", m1=(1, 5), m2=(1, 5), r=(1, 3))
POLYNOMIAL = problem("1.5*x1**2 - 2*x1*x2 + 0.5", "y", x1=(-2, 2), x2=(-2, 2))
RESONANCE = problem("q*E/(m*(w0**2 - w**2))", "x", q=(1, 3), E=(1, 3), m=(1, 3),
                    w0=(3, 5), w=(1, 2))


def run(target: Problem, **settings: Any) -> tuple[SRAgent, dict[str, Any]]:
    """A search on ``target``'s data with the default (offline) provider."""
    X, y = target.sample(N_SAMPLES, seed=0)
    options = {"max_refinement_depth": 3, "local_sample_size": 2, "run_id": "t"} | settings
    agent = SRAgent(**options)
    assert agent.settings.llm_provider == "offline"
    return agent, agent.run(X, {target.output: y}, f"Find {target.output}")


def best_formula(result: dict[str, Any]) -> str:
    return result["candidates"][result["best_candidate"]]["formula"]


def nodes(agent: SRAgent) -> list[dict[str, Any]]:
    """The run's nodes by node id (branches on threads record them in any order)."""
    return sorted(agent.store.records(include_detail=True), key=lambda node: node["node_id"])


def calls(node: dict[str, Any]) -> list[tuple[str, str]]:
    return [(call["name"], repr(sorted(call["params"].items())))
            for call in node["detail"]["tool_calls"]]


def by_step(agent: SRAgent) -> dict[tuple[int, int, int], list[dict[str, Any]]]:
    steps: dict[tuple[int, int, int], list[dict[str, Any]]] = defaultdict(list)
    for node in nodes(agent):
        coordinate = node["coordinate"]
        steps[(coordinate["R"], coordinate["C"], coordinate["L"])].append(node)
    return steps


@pytest.mark.parametrize("target", [GRAVITY, POLYNOMIAL, RESONANCE],
                         ids=["power-law", "polynomial", "divided-out-power-law"])
def test_reaches_an_exact_formula_judged_on_fresh_points(target):
    _, result = run(target)
    judgement = target.judge(best_formula(result))
    assert judgement.solved, (best_formula(result), judgement)


@pytest.mark.parametrize("mode", ["openai", "text", "json", "xml"])
def test_every_parser_mode_reads_the_calls_back(mode):
    agent, result = run(GRAVITY, tool_parser=mode, max_refinement_depth=2)
    assert GRAVITY.judge(best_formula(result)).solved
    for node in nodes(agent):
        detail = node["detail"]
        listed = [line for line in detail["content"].splitlines() if line.startswith("- ")
                  and ":" in line and not line.startswith("- nothing")]
        assert len(detail["tool_calls"]) == len(listed), detail["content"]
        assert all(result["ok"] for result in detail["tool_results"]), detail["tool_results"]


def test_every_response_says_it_comes_from_the_offline_policy():
    agent, _ = run(RESONANCE)
    contents = [node["detail"]["content"] for node in nodes(agent)]
    assert contents and all(content.startswith(OFFLINE_MARK) for content in contents)
    assert all("no language model" in content for content in contents)


def test_the_samples_of_a_step_differ():
    agent, _ = run(RESONANCE, local_sample_size=3)
    compared = 0
    for step in by_step(agent).values():
        proposals = [calls(node) for node in step if node["detail"]["tool_calls"]]
        pinned = set.intersection(*(set(p) for p in proposals)) if proposals else set()
        own = [[call for call in p if call not in pinned] for p in proposals]
        assert len({repr(p) for p in own}) == len(own), own  # never the same proposal twice
        compared += len(own) > 1
    assert compared >= 2


def test_same_seed_same_nodes_and_other_seeds_other_choices():
    def fingerprint(seed: int) -> list[tuple[str, list[tuple[str, str]], str]]:
        agent, _ = run(RESONANCE, seed=seed, global_width=2)
        return [(node["node_id"], calls(node), node["detail"]["content"])
                for node in nodes(agent)]

    first = fingerprint(0)
    assert fingerprint(0) == first
    assert any(fingerprint(seed) != first for seed in (1, 2))


def test_responses_are_a_function_of_the_messages_alone():
    """Replaying each recorded prompt to a fresh adapter, which has no data, no context and
    no problem, reproduces every recorded response: nothing but the messages is read."""
    agent, _ = run(RESONANCE, tool_parser="json")
    metadata = [tool.metadata for tool in agent.tools.values()]
    for (R, C, L), step in by_step(agent).items():
        prompt = next(node["detail"]["prompt"] for node in step
                      if node["coordinate"]["K"] == 1)
        fresh = BaseAPI.create("offline", tool_list=metadata, tool_parser_name="json")
        replayed = fresh(prompt, n=len(step), seed=agent.sampling_seed(R=R, C=C, L=L))
        recorded = [n["detail"]["content"] for n in sorted(step, key=lambda n:
                                                            n["coordinate"]["K"])]
        assert [response.content for response in replayed.responses] == recorded


def test_it_stops_calling_tools_once_the_exact_formula_is_submitted():
    agent, _ = run(GRAVITY, max_refinement_depth=4, early_stop=False)
    submitted_at = min(L for (_, _, L), step in by_step(agent).items()
                       if any(name == "submit_formula" for n in step for name, _ in calls(n)))
    later = [n for (_, _, L), step in by_step(agent).items() if L > submitted_at for n in step]
    assert later and all(not n["detail"]["tool_calls"] for n in later)
    assert np.all([OFFLINE_MARK in n["detail"]["content"] for n in later])


@pytest.mark.parametrize(("name", "low", "high", "strong"), [
    ("theta", 0.5, 1.2, True),       # an angle by name, even over a short range
    ("phi_0", 0.5, 1.2, True),       # index suffixes are ignored
    ("theta2", 0.5, 1.2, True),
    ("graphite", 0.5, 1.2, False),   # contains "phi" but is not named like an angle
    ("x", 0.0, 3.0, True),           # spans radians from zero
    ("theta", 1.0, 40.0, False),     # an upper bound no angle in radians reaches
])
def test_angle_likeness_reads_whole_names_and_radian_ranges(name, low, high, strong):
    variable = Variable(name, low, high)
    view = ConversationView(features=[variable])
    assert (angle_likeness(view, variable) == STRONG_ANGLE) is strong


SUM_OF_POWERS = problem("2*a*b**2 - c**(1/3)/e", "S", a=(1, 5), b=(1, 3), c=(1, 10), e=(2, 4))
DAMPED_POWER = problem("sqrt(a)*b*exp(-c*e**(1/3)/f)", "D", a=(1, 5), b=(1, 3), c=(0.5, 2),
                       e=(1, 5), f=(2, 4))


@pytest.mark.parametrize("target", [SUM_OF_POWERS, DAMPED_POWER],
                         ids=["sum-of-two-power-laws", "power-law-times-exp-of-power-law"])
def test_after_a_poor_power_law_it_tries_sums_and_exponentials_of_power_laws(target):
    agent, result = run(target, max_refinement_depth=6, global_width=2)
    judgement = target.judge(best_formula(result))
    assert judgement.solved, (best_formula(result), judgement)
    assert any(name == "monomial_sum_fit" for node in nodes(agent) for name, _ in calls(node))


def test_a_power_law_times_the_log_of_a_ratio_is_found():
    target = problem("a*b**(1/3)*log(c/e)", "W", a=(1, 3), b=(1, 5), c=(5, 10), e=(1, 4))
    agent, result = run(target, max_refinement_depth=6, global_width=2)
    assert target.judge(best_formula(result)).solved, best_formula(result)


def test_a_power_law_times_the_square_of_a_sine_is_found():
    target = problem("n*sin(psi)**2/(q*m**(1/3))", "I", n=(1, 5), q=(1, 3), m=(1, 5),
                     psi=(0, 5))
    agent, result = run(target, max_refinement_depth=6, global_width=2)
    assert target.judge(best_formula(result)).solved, best_formula(result)


def test_by_default_the_search_stops_once_the_best_formula_is_exact():
    agent, result = run(GRAVITY, max_refinement_depth=6, global_width=2)
    assert result["status"] == "early_stopped"
    assert agent.store.node_count < 6 * 2 * 2
    assert GRAVITY.judge(best_formula(result)).solved

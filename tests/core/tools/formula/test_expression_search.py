"""expression_search through the tool registry: the front as scored candidates."""

from __future__ import annotations

import time

import numpy as np
import pytest

import srh_engine as engine
from srh_core.context import AgentContext
from srh_core.embedded.executor import SerialToolExecutor
from srh_core.tools.base import BaseTool, call_deadline
from srh_core.tools.search import RESERVE_SECONDS
from srh_core.types import ToolCall


def three_inputs(rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
    return {name: rng.uniform(1.0, 3.0, n) for name in ("a", "b", "c")}


def ratio_of_a_sum(d):
    return (d["a"] - d["b"]) / (d["a"] + d["c"])


def test_the_front_comes_back_scored_and_the_best_is_exact(make_context, run, shape,
                                                           assert_exact):
    context = make_context(three_inputs, "y", ratio_of_a_sum, n=300)
    # a wide budget, for a loaded machine: the search returns once it is exact (1-2 s)
    result = run("expression_search", context, time_budget=60, seed=1)
    assert result.ok, result.result_str
    shape(result.result, context)
    assert result.result["is_candidate"]
    assert_exact(result.result, three_inputs, ratio_of_a_sum)
    front = result.result["search"]["front"]
    others = result.result.get("all_formulas", [])
    assert len(others) == len(front) - 1 and all(alt["is_candidate"] for alt in others)
    assert "expressions evaluated" in result.result_str


def test_workers_sets_the_islands(make_context, run):
    """One island on a worker that runs a process per core; two merged when asked."""
    context = make_context(three_inputs, "y", ratio_of_a_sum, n=100)
    notes = {count: run("expression_search", context, time_budget=60, seed=0,
                        workers=count).result["search"]["notes"] for count in (1, 2)}
    assert not any("islands merged" in note for note in notes[1]), notes[1]
    assert "2 islands merged (seeds 0..1)" in notes[2], notes[2]


def test_is_registered_and_documented():
    tool = BaseTool.get_class("expression_search")
    properties = tool.metadata.parameters["properties"]
    assert {"operators", "max_complexity", "time_budget", "seed", "variables"} <= set(properties)


@pytest.mark.parametrize(("arguments", "message"), [
    ({"operators": ["sin"]}, "operators"),
    ({"operators": ["+", "gamma"]}, "operators"),
    ({"time_budget": 0}, "time_budget"),
    ({"max_complexity": 2}, "max_complexity"),
    ({"variables": ["nope"]}, "nope"),
    ({"workers": 0}, "workers"),
], ids=["no-binary", "unknown", "budget", "complexity", "unknown-variable", "workers"])
def test_bad_arguments_are_a_readable_failure(make_context, run, arguments, message):
    context = make_context(three_inputs, "y", ratio_of_a_sum, n=50)
    result = run("expression_search", context, **arguments)
    assert not result.ok and message in result.result_str


def test_the_runs_operators_and_maxsize_bound_the_search():
    from srh_core import AgentContext, BaseTool
    from srh_core.operators import missing_operators

    rng = np.random.default_rng(0)
    x1, x2 = rng.uniform(1, 3, (2, 200))
    context = AgentContext(args={"validation_fraction": 0.0, "binary_operators": ["+", "*"],
                                 "unary_operators": [], "maxsize": 9}, target="y",
                           data={"x1": x1, "x2": x2, "y": x1 * x2 + np.sin(x1)})
    tool = BaseTool.create("expression_search", context)
    result = tool(time_budget=0.5, workers=1, max_samples=100)
    assert result.ok, result.result_str
    for entry in [result.result, *result.result.get("all_formulas", [])]:
        assert "sin" not in entry["formula"]  # the search had only + and *
        if entry["is_candidate"]:
            formula = engine.parse(entry["formula"])
            assert missing_operators(formula, ["+", "*"], []) == [], entry["formula"]
            assert engine.complexity(formula) <= 9
    refused = tool(operators=["exp", "/"], time_budget=0.5, workers=1)
    assert not refused.ok and "within the run's operators" in refused.result_str


def test_a_call_with_little_time_left_searches_within_it_and_returns_its_front():
    """A search asked for 30 s in a batch with 2 s left (the run's end, a step's limit)
    shortens itself to that time and returns the front it found, instead of being cut
    with nothing; the result says so."""
    data = three_inputs(np.random.default_rng(0), 150)
    data["y"] = ratio_of_a_sum(data)
    context = AgentContext(args={}, data=data, target="y")
    executor = SerialToolExecutor({"expression_search": BaseTool.create("expression_search",
                                                                        context)})
    started = time.monotonic()
    [result] = executor.run([ToolCall("expression_search", {"time_budget": 30, "seed": 0,
                                                            "workers": 1})], timeout=2.0)
    assert time.monotonic() - started < 30  # it did not take what it asked for
    assert result.ok, result.result_str
    search = result.result["search"]
    assert search["shortened_from"] == 30 and search["time_budget"] <= 2.0 - RESERVE_SECONDS
    assert search["front"] and "shortened from 30s" in result.result_str


def test_a_call_with_no_time_left_for_a_search_says_so():
    data = three_inputs(np.random.default_rng(0), 50)
    data["y"] = ratio_of_a_sum(data)
    tool = BaseTool.create("expression_search", AgentContext(args={}, data=data, target="y"))
    with call_deadline(time.time() + 0.2):
        result = tool(time_budget=5)
    assert not result.ok and "this call has 0." in result.result_str, result.result_str


def test_the_reported_front_has_its_structural_constants_recognised():
    """The search snaps its chosen formula's numbers first and the others only while its
    budget lasts, and a formula mapped back from dimensionless groups can carry a number its
    reduced form did not: the tool recognises each reported formula's exact constants
    (``9.8696...`` is ``pi**2``), as the fitting tools do; a number the data do not make
    structural stays."""
    from srh_engine.search.results import ExpressionSearchResult, FrontEntry

    rng = np.random.default_rng(0)
    c, k, omega = rng.uniform(1, 2, 200), rng.uniform(1, 2, 200), rng.uniform(5, 10, 200)
    y = np.sqrt(np.pi**2 * c / ((omega / (c * k) - c * k / omega) * k * omega))
    context = AgentContext(args={"validation_fraction": 0.0}, target="y",
                           data={"c": c, "k": k, "omega": omega, "y": y})
    tool = BaseTool.create("expression_search", context)
    texts = ["2.5137491*c", f"sqrt({np.pi**2!r}*c/((omega/(c*k) - c*k/omega)*k*omega))"]
    front = tuple(FrontEntry(engine.parse(text), 5 * i + 3, 0.0, 1.0)
                  for i, text in enumerate(texts))
    target = tool.target_term(None)
    entry = tool._results([entry.expression for entry in front], target, False,
                          ExpressionSearchResult(front, evaluated=2, seconds=0.1))
    formula = entry["formula"]  # the root of pi**2 times a quotient is written pi*sqrt(...)
    assert "9.869" not in formula and ("pi**2" in formula or formula.startswith("pi*sqrt(")), \
        formula
    assert entry["all_formulas"][0]["formula"] == "2.5137491*c"  # no structural value is near

"""PySR's nested_constraints and size constraints: checks, candidates, search front, estimator."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import srh_engine as engine
from srh_core.agent import SRAgent
from srh_core.agent.settings import SearchSettings
from srh_core.context import AgentContext
from srh_core.errors import ConfigurationError
from srh_core.estimator import NoFormulaFoundWarning, SRHarnessRegressor
from srh_core.operators import (
    check_constraints,
    check_nested_constraints,
    constraint_violations,
)
from srh_core.tools.base import BaseTool

NESTED = check_nested_constraints({"sin": {"sin": 0, "cos": 0}, "exp": {"exp": 1}})
SIZES = check_constraints({"pow": (-1, 1), "sin": 3})


@pytest.mark.parametrize(("formula", "broken"), [
    ("sin(cos(x))", ["cos nested 1 time(s) in sin (at most 0)"]),
    ("sin(x) + cos(sin(x))", []),
    ("exp(exp(x))", []),
    ("exp(exp(exp(x)))", ["exp nested 2 time(s) in exp (at most 1)"]),
    ("x**(y + 1)", ["the right argument of ^ of size 3 (at most 1)"]),
    ("(x + y)**2", []),
    ("sin(x*y*z)", ["the argument of sin of size 5 (at most 3)"]),
], ids=["cos-in-sin", "apart", "exp-once", "exp-twice", "exponent", "base", "sin-size"])
def test_violations_name_what_breaks_which_constraint(formula, broken):
    assert constraint_violations(engine.parse(formula), NESTED, SIZES) == broken


def test_pysr_spellings_are_read_and_unknown_operators_are_refused():
    assert check_constraints({"pow": [2, 1], "ln": 4}) == {"^": [2, 1], "log": 4}
    assert check_nested_constraints({"sin": {"ln": 0}}) == {"sin": {"log": 0}}
    with pytest.raises(ConfigurationError, match=r"unknown operator 'sinh' \(did you mean"):
        SearchSettings.build(nested_constraints={"sinh": {"sin": 0}})
    with pytest.raises(ConfigurationError, match="unknown operator 'coss'"):
        SearchSettings.build(nested_constraints={"sin": {"coss": 0}})
    with pytest.raises(ConfigurationError, match=r"constraints\['sin'\] must be one int"):
        SearchSettings.build(constraints={"sin": [1, 2]})
    with pytest.raises(ConfigurationError, match=r"constraints\['\*'\] must be two ints"):
        SearchSettings.build(constraints={"*": 3})
    with pytest.raises(ConfigurationError, match="must be an int >= 0"):
        SearchSettings.build(nested_constraints={"sin": {"sin": "no"}})


def _context(**limits):
    rng = np.random.default_rng(0)
    x, y = rng.uniform(0.5, 2, 200), rng.uniform(0.5, 2, 200)
    return AgentContext(args={"validation_fraction": 0.0, **limits},
                        data={"x": x, "y": y, "t": np.sin(x * y)}, target="t")


def test_a_formula_that_breaks_a_constraint_is_scored_but_not_a_candidate():
    context = _context(constraints={"sin": 1})
    result = BaseTool.create("evaluate_formula", context)(f="sin(x*y)")
    assert result.ok and result.result["metrics"]["train"]["mse"] == 0.0
    assert not result.result["is_candidate"]
    assert "breaks the run's constraints: the argument of sin of size 3 (at most 1)" in \
        result.result_str


def test_the_search_front_keeps_only_formulas_within_the_constraints():
    context = _context(nested_constraints={"sin": {"*": 0}}, constraints={"sin": 1})
    result = BaseTool.create("expression_search", context)(time_budget=2, workers=1)
    formulas = [result.result, *result.result.get("all_formulas", [])]
    limits = (context.args["nested_constraints"], context.args["constraints"])
    assert all(not constraint_violations(engine.parse(entry["formula"]), *limits)
               for entry in formulas if entry.get("formula") not in (None, "(none)"))


def test_the_prompt_states_the_constraints():
    agent = SRAgent(nested_constraints={"sin": {"cos": 0}}, constraints={"pow": [-1, 1]})
    messages = agent.create_initial_prompt_messages("", {"x": np.ones(3)}, {"y": np.ones(3)},
                                                    [])
    assert "- Constraints: at most 0 cos inside sin; right of ^ at most 1 nodes" in \
        messages[1]["content"]


def test_estimator_constraints_reach_the_candidate_check():
    rng = np.random.default_rng(1)
    X = rng.uniform(0.5, 2, (100, 1))
    y = np.sin(np.cos(X[:, 0]))
    free = SRHarnessRegressor(max_refinement_depth=1, guesses=["sin(cos(x1))"]).fit(X, y)
    assert free.formula_ == "sin(cos(x1))"
    model = SRHarnessRegressor(max_refinement_depth=3, guesses=["sin(cos(x1))"],
                               nested_constraints={"sin": {"cos": 0}})
    assert model.get_params()["nested_constraints"] == {"sin": {"cos": 0}}
    with warnings.catch_warnings():  # no candidate at all is an answer too: the mean
        warnings.simplefilter("ignore", NoFormulaFoundWarning)
        model.fit(X, y)
    assert model.formula_ != "sin(cos(x1))"
    assert not constraint_violations(engine.parse(model.formula_), {"sin": {"cos": 0}}, None)

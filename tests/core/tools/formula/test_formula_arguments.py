"""Argument validation and hostile arguments: clear ok=False answers, bounded work."""

from __future__ import annotations

import time

import numpy as np
import pytest

from srh_core.context import AgentContext


@pytest.fixture
def context(validation_fraction: float) -> AgentContext:
    rng = np.random.default_rng(3)
    x1, x2 = rng.uniform(-2, 2, 300), rng.uniform(0.5, 2, 300)
    x1[7] = np.nan  # a missing value must simply drop its row
    return AgentContext(args={"validation_fraction": validation_fraction},
                        data={"x1": x1, "x2": x2, "y": x1 * x2 + 1},
                        target="y")


INVALID = [
    ("polynomial_fit", {"max_degree": 12},
     "The 'max_degree' parameter of polynomial_fit must be an int in [1, 8]. Got 12 instead."),
    ("polynomial_fit", {"max_degree": 10**9}, "[1, 8]"),
    ("polynomial_fit", {"interaction_whitelist": [["x1"]]}, "pair of inputs"),
    ("polynomial_fit", {"interaction_blacklist": [["x1", "x9"]]}, "not one of the inputs"),
    ("polynomial_fit", {"x": [f"x1**{k}" for k in range(17)]}, "1 to 16 expressions"),
    ("polynomial_fit", {"x": ["x1", "x1"]}, "listed twice"),
    ("polynomial_fit", {"x": ["3"]}, "uses no data variable"),
    ("power_law_fit", {"max_denominator": 100}, "[1, 32]"),
    ("power_law_fit", {"snap_tolerance": "nan"}, "[0.0, 0.5]. Got nan"),
    ("power_law_fit", {"n_stability_folds": 1}, "[2, 20]"),
    ("power_law_fit", {"x": ["x1", "x2"]}, "'x1' has"),
    ("rational_fit", {"top_k": 0}, "[1, 20]"),
    ("rational_fit", {"validation_fraction": 0.9}, "[0.05, 0.5]"),
    ("rational_fit", {"numerator_degrees": [1, 99]}, "[0, 8]"),
    ("rational_fit", {"numerator_degrees": list(range(10**5))}, "1 to 9 degrees"),
    ("rational_fit", {"numerator_degree": 8, "denominator_degree": 8,
                      "x": ["x1", "x2", "exp(x1)"]}, "at most 200"),
    ("call_sindy", {"threshold": 2}, "[0.01, 1.0]"),
    ("call_sindy", {"poly_degree": 6}, "[1, 5]"),
    ("call_sindy", {"max_samples": 10}, "[50, 100000]"),
    ("harmonic_interaction_fit", {"carrier": "x1", "oscillator": "x2", "degree": 5}, "[1, 4]"),
    ("harmonic_interaction_fit", {"carrier": "x1", "oscillator": "x2", "grid_size": 10**7},
     "[64, 2048]"),
    ("harmonic_interaction_fit", {"carrier": "x1", "oscillator": "x2", "max_cycles": "inf"},
     "[0.5, 1000.0]"),
    ("harmonic_interaction_fit", {"carrier": "x1", "oscillator": "x2*0"}, "does not vary"),
    ("evaluate_eic", {"f": "x1", "noise_level": 0}, "(0.0, 0.1]"),
    ("evaluate_eic", {"f": "x1", "repeats": 10**6}, "[1, 100]"),
    ("evaluate_eic", {"f": "x1", "random_state": -1}, "[0, 4294967295]"),
    ("constant_fit", {"eq": "x1*x2 + 1"}, "no number to simplify"),
    ("constant_fit", {"eq": " + ".join(f"{k + 0.123}*x1**{k}" for k in range(13))},
     "at most 12"),
    ("call_pysr", {"binary_operators": ["+"], "unary_operators": ["gamma"]},
     "PySR is not installed"),
]


@pytest.mark.parametrize(("tool", "arguments", "message"), INVALID,
                         ids=[f"{tool}-{'-'.join(args)}-{i}" for i, (tool, args, _) in
                              enumerate(INVALID)])
def test_invalid_arguments_are_named(tool, arguments, message, context, run):
    result = run(tool, context, **arguments)
    assert not result.ok
    assert message in result.result_str


HOSTILE = {
    "dunder-import": ("evaluate_formula", {"f": "__import__('os').system('true')"},
                      "is not a formula the engine accepts"),
    "dunder-call": ("evaluate_formula", {"f": "__import__('os')"}, "unknown function"),
    "attribute": ("evaluate_formula", {"f": "x1.__class__"}, "attribute access"),
    "lambda": ("evaluate_formula", {"f": "lambda: 1"}, "lambda"),
    "subscript": ("evaluate_formula", {"f": "x1[0]"}, "subscript"),
    "huge-power": ("evaluate_formula", {"f": "x1**(10**400)"}, "huge constant power"),
    "5000-terms": ("evaluate_formula", {"f": " + ".join(["x1"] * 5000)}, "at most 2000"),
    "deep-nesting": ("evaluate_formula", {"f": "(" * 300 + "x1" + ")" * 300}, "nest"),
    "unknown-name": ("evaluate_formula", {"f": "a*x1 + b"},
                     "unknown name(s) 'a', 'b'; the data variables are: x1, x2, y (target)"),
    "param-hint": ("evaluate_formula", {"f": "k*x1"}, 'Write param("k")'),
    "did-you-mean": ("evaluate_formula", {"f": "x22*x1"}, "Did you mean 'x2'?"),
    "unbound": ("evaluate_formula", {"f": 'param("a")*x1'}, "fit=true"),
    "y-param": ("evaluate_formula", {"f": "x1", "y": 'param("a")'}, "param(...) is not allowed"),
    "y-mismatch": ("evaluate_formula", {"f": "log(y) = x1", "y": "y"}, "differs from y"),
    "not-text": ("evaluate_formula", {"f": None}, "must be a string"),
    "million-inputs": ("polynomial_fit", {"x": ["x1"] * 10**6}, "1 to 16 expressions"),
    "nan-string": ("call_sindy", {"threshold": "NaN"}, "Got nan instead"),
    "bool-as-int": ("call_sindy", {"max_samples": True}, "must be an integer"),
    "unknown-argument": ("polynomial_fit", {"degree": 2}, "Did you mean 'max_degree'"),
    "eic-unbound": ("evaluate_eic", {"f": 'param("a")*x1'}, "fit it first"),
}


@pytest.mark.parametrize(("tool", "arguments", "message"), HOSTILE.values(), ids=HOSTILE)
def test_hostile_arguments_fail_fast_and_clearly(tool, arguments, message, context, run):
    started = time.perf_counter()
    result = run(tool, context, **arguments)
    assert not result.ok
    assert message in result.result_str
    assert time.perf_counter() - started < 5


@pytest.mark.parametrize(("tool", "arguments"), [
    ("evaluate_formula", {"f": "x1**1e6"}),
    ("evaluate_formula", {"f": "exp(exp(exp(x2*100)))"}),
    ("polynomial_fit", {"x": ["1/(x1 - x1)", "x2"]}),
    ("power_law_fit", {"x": ["x2"], "y": "x2**0.5", "snap_exponents": True}),
    ("call_sindy", {"x": ["x1", "x2"], "include_trig": True}),
], ids=["overflow-power", "overflow-exp", "all-nan-input", "power-law-self", "sindy-trig"])
def test_degenerate_numbers_never_crash(tool, arguments, context, run, shape):
    result = run(tool, context, **arguments)
    if result.ok:
        shape(result.result, context)
    else:
        assert "Only 0 training rows" in result.result_str

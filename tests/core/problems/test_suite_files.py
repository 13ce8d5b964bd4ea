"""A suite file's problems are checked when it is read, each error naming the problem."""

from __future__ import annotations

import json

import pytest

from srh_core.errors import ConfigurationError
from srh_core.problems import load_suite
from srh_core.problems.formula import Problem


def suite_file(tmp_path, formula="a*b", low=1.0, high=2.0):
    entry = {"id": "p1", "output": "y", "formula": formula,
             "variables": [{"name": "a", "low": low, "high": high},
                           {"name": "b", "low": 1, "high": 2}]}
    path = tmp_path / "suite.json"
    path.write_text(json.dumps({"suite": "s", "problems": [entry]}))
    return path


@pytest.mark.parametrize(("options", "message"), [
    ({"formula": "a*(b"}, "Problem p1: its formula 'a*(b' does not parse"),
    ({"formula": "a*c"}, "its formula names ['c'], which are not among its variables"),
    ({"low": 3.0}, "variable a has the range [3, 2]; low must not exceed high"),
])
def test_a_problem_that_cannot_be_sampled_is_refused_on_reading(tmp_path, options, message):
    with pytest.raises(ConfigurationError) as error:
        load_suite(suite_file(tmp_path, **options))
    assert str(error.value).startswith("Suite file ") and message in str(error.value)


def test_a_sound_suite_file_reads(tmp_path):
    (problem,) = load_suite(suite_file(tmp_path)).problems
    assert problem.formula == "a*b" and problem.feature_names == ["a", "b"]


def test_every_built_in_suite_passes_the_check():
    # shipped files are not checked on every load (it took 22 of 29 ms for Feynman's 120)
    for name in ("feynman", "feynman-public", "lsr-transform", "lsr-transform-all"):
        problems = load_suite(name).problems
        assert problems
        for problem in problems:
            if isinstance(problem, Problem):
                problem.check()

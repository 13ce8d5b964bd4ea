"""The packaged benchmark suites: full AI Feynman and LSR-Transform, sampled and checked."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from srh_core.cli import main
from srh_core.problems import load_suite
from srh_engine import parse
from srh_engine.dimensional import check_dimensions

FEYNMAN = load_suite("feynman")
LSR = load_suite("lsr-transform")
LSR_ALL = load_suite("lsr-transform-all")
SRBENCH_EXCLUDED = {"I.26.2", "I.30.5", "test_10"}
CSV_IDS = {"I.15.10": "I.15.1"}  # LLM-SRBench names I.15.10 as the AI Feynman CSV copies do


def test_feynman_holds_the_100_equations_and_the_20_bonus_ones():
    ids = [p.id for p in FEYNMAN.problems]
    assert len(ids) == len(set(ids)) == 120
    assert sum(i.startswith("test_") for i in ids) == 20
    assert {p.id for p in FEYNMAN.problems if p.excluded} == SRBENCH_EXCLUDED
    assert "II.11.17" in ids and "I.15.10" in ids  # the one PMLB lacks; the id CSVs corrupt


@pytest.mark.parametrize("problem", FEYNMAN.problems, ids=lambda p: p.id)
def test_every_feynman_formula_samples_finite_values_and_has_units(problem):
    X, y = problem.sample(300, seed=3)
    assert np.all(np.isfinite(y)) and np.ptp(y) > 0
    assert set(X) == set(problem.feature_names)
    assert all(v.units and v.quantity for v in problem.variables)
    assert problem.output_units


def test_every_feynman_formula_is_dimensionally_consistent_with_its_units():
    # a suite's units are given to the search, which keeps only consistent formulas: a
    # wrong unit makes the truth unreachable (PMLB's I.43.16 had a mobility upside down;
    # LSR-Transform's units are Feynman's)
    wrong = []
    for problem in FEYNMAN.problems:
        units = {v.name: v.units for v in problem.variables}
        check = check_dimensions(parse(problem.formula), units, problem.output_units)
        if not check.consistent:
            wrong.append(f"{problem.id}: {check.reason}")
    assert wrong == []


def test_the_public_subset_is_the_full_suite_s_problems():
    public = load_suite(None)
    assert public.name == "feynman-public" and len(public.problems) == 40
    for problem in public.problems:
        full = FEYNMAN.get(problem.id)
        assert [(v.name, v.low, v.high) for v in full.variables] == [
            (v.name, v.low, v.high) for v in problem.variables], problem.id
        X, y = problem.sample(200, seed=1)
        assert np.allclose(np.asarray(full.expression().evaluate(X)), y, rtol=1e-12)


def test_lsr_transform_is_llm_srbench_s_published_selection():
    ids = [p.id for p in LSR.problems]
    assert len(ids) == len(set(ids)) == 111
    assert len({p.source.id for p in LSR.problems}) == 56
    for problem in LSR.problems:
        # <AI Feynman id>_<index of the solved input>_<index of its solution>
        index = problem.source.feature_names.index(problem.output)
        source_id = CSV_IDS.get(problem.source.id, problem.source.id)
        assert re.fullmatch(rf"{re.escape(source_id)}_{index}_\d+", problem.id)
        assert FEYNMAN.get(problem.source.id).formula == problem.source.formula
        assert not problem.source.id.startswith("test_")
    assert {"I.10.7_1_0", "I.15.1_1_0", "I.32.17_4_3", "III.19.51_1_0"} <= set(ids)


def test_lsr_transform_all_names_and_sources():
    assert len(LSR_ALL.problems) == 176
    for problem in LSR_ALL.problems:
        assert re.fullmatch(rf"{re.escape(problem.source.id)}_{problem.output}_\d+", problem.id)
        assert problem.source.id not in SRBENCH_EXCLUDED
    for problem in (*LSR.problems, *LSR_ALL.problems):
        assert set(problem.inputs) == (set(problem.source.feature_names) - {problem.output}
                                       | {problem.source.output})


@pytest.mark.parametrize("problem", (*LSR.problems, *LSR_ALL.problems), ids=[
    *(p.id for p in LSR.problems), *(f"all-{p.id}" for p in LSR_ALL.problems)])
def test_every_solved_form_agrees_with_its_original(problem):
    X, y = problem.sample(200, seed=2)
    X_ood, y_ood = problem.sample_ood(100, seed=2)
    assert np.all(np.isfinite(y)) and np.all(np.isfinite(y_ood))
    solved = next(v for v in problem.source.variables if v.name == problem.output)
    cut = solved.low + (1 - problem.ood_fraction) * (solved.high - solved.low)
    assert y.max() <= cut + 1e-9 * abs(cut) and y_ood.min() >= cut - 1e-9 * abs(cut)
    for inputs, target in ((X, y), (X_ood, y_ood)):
        # put the solved variable back into the original: it gives the original's output
        values = {name: inputs[name] for name in problem.source.feature_names
                  if name != problem.output} | {problem.output: target}
        with np.errstate(all="ignore"):
            original = np.asarray(parse(problem.source.formula).evaluate(values), dtype=float)
        expected = inputs[problem.source.output]
        assert np.allclose(original, expected, rtol=1e-5, atol=1e-9), problem.id


def test_lsr_transform_judges_its_own_formula_exact():
    problem = LSR.problems[0]
    assert problem.judge(problem.formula, seed=4).solved
    assert not problem.judge("1.0", seed=4).solved


def test_srh_problems_lists_a_suite_as_json(capsys):
    assert main(["problems", "--suite", "lsr-transform", "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    assert listing["suite"] == "lsr-transform"
    assert len(listing["problems"]) == len(LSR.problems)
    assert main(["problems", "--suite", "lsr-transform-all", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["problems"]) == len(LSR_ALL.problems)
    first = listing["problems"][0]
    assert {"name", "id", "output", "formula", "variables"} <= set(first)
    assert main(["problems", "--suite", "feynman", "--json"]) == 0
    rows = {row["id"]: row for row in json.loads(capsys.readouterr().out)["problems"]}
    assert rows["I.26.2"]["excluded"] and rows["I.12.11"]["units"]["v"] == "m^1 * s^(-1)"


def test_a_folder_named_like_a_built_in_suite_does_not_hide_it(tmp_path, monkeypatch):
    (tmp_path / "feynman").mkdir()  # e.g. `srh benchmark run --out feynman`
    monkeypatch.chdir(tmp_path)
    assert len(load_suite("feynman").problems) == 120
    assert len(load_suite(tmp_path / "feynman").problems) == 120

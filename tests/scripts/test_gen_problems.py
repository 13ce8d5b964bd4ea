"""scripts/gen_problems.py --random: the motifs draw finite problems; the same seed, the
same suite."""

from __future__ import annotations

import importlib.util
import json
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from srh_engine import check_dimensions, parse, parse_units

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "gen_problems.py"


@pytest.fixture(scope="module")
def gen():
    spec = importlib.util.spec_from_file_location("gen_problems", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["gen_problems"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop("gen_problems", None)


@pytest.mark.parametrize("motif", ["lorentz", "gaussian", "distance", "bose", "sine-ratio",
                                   "cross-root", "nested-fraction"])
def test_every_motif_draws_finite_problems(gen, motif):
    rng = np.random.default_rng(3)
    for _ in range(4):
        namer = gen.Namer(rng)
        text = gen.MOTIFS[motif](namer, rng)
        parse(text)
        assert gen.acceptable(gen.Draft(motif, text, namer.variables())), text


def test_the_random_suite_is_seeded_and_holds_the_physics_shapes(gen):
    first = gen.generate_random(40, 5)
    assert first == gen.generate_random(40, 5)
    families = {p["family"] for p in first["problems"]}
    assert "several-parts" in families
    assert len(families & set(gen.MOTIFS)) >= 3
    formulas = " ".join(p["formula"] for p in first["problems"])
    assert "sqrt(2*pi)" in formulas and "/(exp(" in formulas
    assert all(f"{name}(" in formulas for name in ("arcsin", "arccos", "arctan", "tanh"))
    assert all(len(p["variables"]) <= gen.MAX_RANDOM_VARIABLES for p in first["problems"])


def test_drawn_units_make_every_formula_consistent_and_the_suite_loads(gen, tmp_path):
    from srh_core.problems import load_suite

    document = gen.with_units(gen.generate_random(12, 7), 7)
    dimensioned = 0
    for problem in document["problems"]:
        units = {v["name"]: v["units"] for v in problem["variables"]}
        check = check_dimensions(parse(problem["formula"]), units, problem["output_units"])
        assert check.consistent, (problem["formula"], units, check.reason)
        dimensioned += any(text != "1" for text in units.values())
    assert dimensioned >= 6  # not every problem made dimensionless
    path = tmp_path / "suite.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    loaded = load_suite(str(path)).problems[0]
    assert loaded.si_units()[loaded.output] == str(parse_units(
        document["problems"][0]["output_units"]))


def test_units_follow_the_rules_of_a_formula(gen):
    rng = np.random.default_rng(0)
    units, target = gen.draw_units("(a - b)*exp(-c/d)*sqrt(w)", ["a", "b", "c", "d", "w"], rng)
    assert units["a"] == units["b"] and units["c"] == units["d"]
    assert parse_units(target) == parse_units(units["a"]) * parse_units(units["w"]) ** \
        Fraction(1, 2)

"""scripts/gen_problems.py --random: the motifs draw finite problems; the same seed, the
same suite."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from srh_engine import parse

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
    first = gen.generate_random(20, 5)
    assert first == gen.generate_random(20, 5)
    families = {p["family"] for p in first["problems"]}
    assert "several-parts" in families
    assert len(families & set(gen.MOTIFS)) >= 3
    formulas = " ".join(p["formula"] for p in first["problems"])
    assert "sqrt(2*pi)" in formulas and "/(exp(" in formulas
    assert all(len(p["variables"]) <= gen.MAX_RANDOM_VARIABLES for p in first["problems"])

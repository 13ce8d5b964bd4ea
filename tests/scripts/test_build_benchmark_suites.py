"""scripts/build_benchmark_suites.py: LLM-SRBench's published names become the problems
of ``lsr-transform``, each the one real branch of its equation solved for the named
input; a name that does not say one branch stops the build."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from srh_core.problems import load_suite

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "build_benchmark_suites.py"
FEYNMAN = json.loads((ROOT / "srh_core" / "problems" / "feynman.json").read_text())["problems"]


@pytest.fixture(scope="module")
def build():
    import sympy  # noqa: F401  (once here: every forked solve inherits it, as in the script)

    spec = importlib.util.spec_from_file_location("build_benchmark_suites", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_names_file_is_the_suite_s_problems_in_order(build):
    names = build.published_names()
    assert len(names) == len(set(names)) == 111
    assert names == [problem.id for problem in load_suite("lsr-transform").problems]


def test_a_name_is_rebuilt_as_the_one_branch_of_its_equation(build):
    # I.15.10 solved for its input 1 (v): this SymPy lists the negative root first, so
    # the published solution index 0 names the branch this SymPy puts second
    (made,) = build.build_published(FEYNMAN, ["I.15.1_1_0"], seconds=60)
    assert made["output"] == "v" and made["source"]["id"] == "I.15.10"  # the CSVs' I.15.1
    assert made["formula"] == load_suite("lsr-transform").get("I.15.1_1_0").formula


@pytest.mark.parametrize("name", ["I.8.14_0_0", "I.10.7_3_0", "I.99.1_0_0", "I.10.7_v_0"])
def test_a_name_without_exactly_one_branch_stops_the_build(build, name):
    # I.8.14 for x1: both signs of the root hold on part of the ranges; I.10.7 has
    # three inputs; there is no I.99.1; indices are numbers
    with pytest.raises(SystemExit, match=name.replace(".", r"\.")):
        build.build_published(FEYNMAN, [name], seconds=60)

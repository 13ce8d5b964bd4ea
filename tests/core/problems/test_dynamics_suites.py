"""The Strogatz ODE suite and the network-dynamics suite: loading, data, judging."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from srh_core import problems
from srh_core.context.structured import StructuredData
from srh_core.errors import ConfigurationError
from srh_core.problems import load_suite

STROGATZ_SYSTEMS = {"bacres", "barmag", "glider", "lv", "predprey", "shearflow", "vdp"}


def test_strogatz_has_fourteen_derivatives_of_seven_systems() -> None:
    suite = load_suite("strogatz")
    assert len(suite.problems) == 14
    assert {p.system_id for p in suite.problems} == STROGATZ_SYSTEMS
    assert len({p.name for p in suite.problems}) == 14
    for problem in suite.problems:
        assert problem.feature_names == [*problem.states, "t"]
        assert problem.output == f"d{problem.state}"


def test_network_suite_and_lookup_from_the_default_suite(tmp_path: Path) -> None:
    assert {p.id for p in load_suite("network").problems} == {
        "diffusion", "kuramoto", "sis", "regulation"}
    default = load_suite()
    assert default.get("strogatz-lv1").system_id == "lv"
    assert default.get("network-sis").kind == "network"
    copy = tmp_path / "mine.json"
    copy.write_text((Path(problems.__file__).parent / "strogatz.json").read_text())
    with pytest.raises(ConfigurationError, match="Unknown problem"):
        load_suite(copy).get("network-sis")  # a suite file does not look elsewhere
    assert load_suite("network").get("network-sis").num_nodes == 12


def test_ode_data_is_seeded_trajectories_with_exact_derivatives() -> None:
    problem = load_suite("strogatz").get("strogatz-lv1")
    X, y = problem.sample(200, seed=3)
    again, y_again = problem.sample(200, seed=3)
    other, _ = problem.sample(200, seed=4)
    assert isinstance(X, StructuredData) and X.derivatives == {"dx": "x"} and X.time == "t"
    np.testing.assert_array_equal(X["x"], again["x"])
    np.testing.assert_array_equal(y, y_again)
    assert not np.allclose(X["x"], other["x"])
    x, s = X["x"], X["y"]
    np.testing.assert_allclose(y, 3 * x - 2 * x * s - x**2)
    assert np.sum(np.diff(X["t"]) < 0) == problem.trajectories - 1


def test_judging_needs_exact_fresh_points_and_a_good_rollout() -> None:
    problem = load_suite("strogatz").get("strogatz-lv1")
    exact = problem.judge("3*x - 2*x*y - x**2")
    assert exact.solved and exact.max_relative_error < 1e-12 and exact.rollout_error < 1e-4
    close = problem.judge("3*x - 2*x*y - 1.001*x**2", n=200)
    assert not close.solved and close.rollout_error > exact.rollout_error
    diverging = problem.judge("3*x + x**3", n=200)
    assert not diverging.solved and diverging.rollout_error is None
    assert "rollout_error" in exact.to_dict()


def test_network_data_carries_the_graph_and_judges_indexed_formulas() -> None:
    problem = load_suite("network").get("network-kuramoto")
    X, y = problem.sample(400, seed=0)
    assert X.relation_names == ["A"] and X.num_nodes == 12
    assert X["x"].shape == y.shape == (X["t"].size, 12) and X["A"].shape[1] == 2
    np.testing.assert_array_equal(X["omega"][0], X["omega"][-1])
    judged = problem.judge(problem.formula, n=300)
    assert judged.solved and judged.rollout_error < 1e-6
    assert not problem.judge("omega[i]", n=300).solved

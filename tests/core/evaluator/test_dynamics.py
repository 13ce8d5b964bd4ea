"""ODE rollouts: integrate_ODE, calc_trajectory_rollout_RMSE and the evaluator's rollout option."""

from __future__ import annotations

import argparse

import numpy as np
import pytest

import srh_engine as engine
from srh_core.context import AgentContext
from srh_core.errors import ConfigurationError
from srh_core.evaluator import (
    DefaultEvaluator,
    RolloutError,
    calc_trajectory_rollout_RMSE,
    integrate_ODE,
)
from srh_core.evaluator.dynamics import integrate_system, trajectory_segments

TIMES = np.linspace(0.0, 2.0, 41)


def decay_data(rate: float = 0.7) -> dict[str, np.ndarray]:
    """Two trajectories of dx/dt = -rate*x + u with an input u(t) = sin(t), concatenated."""
    t = np.concatenate([TIMES, TIMES])
    starts = np.repeat([2.0, -1.0], TIMES.size)
    # exact solution of x' = -r x + sin t
    r = rate
    particular = (r * np.sin(t) - np.cos(t)) / (1 + r * r)
    x = (starts - particular[0]) * np.exp(-r * t) + particular
    x = np.where(np.arange(t.size) < TIMES.size, x,
                 (starts + 1 / (1 + r * r)) * np.exp(-r * t) + particular)
    return {"t": t, "x": x, "u": np.sin(t), "dx": -r * x + np.sin(t)}


def test_segments_split_where_time_does_not_increase() -> None:
    assert trajectory_segments(np.array([0.0, 1, 2, 0, 1, 1, 2])) == \
        [slice(0, 3), slice(3, 5), slice(5, 7)]


def test_rollout_reproduces_trajectories_with_observed_inputs() -> None:
    data = decay_data()
    rolled = integrate_ODE(engine.parse("-0.7*x + u"), data, time="t", state="x")
    np.testing.assert_allclose(rolled, data["x"], atol=1e-6)
    wrong = calc_trajectory_rollout_RMSE(engine.parse("-0.5*x + u"), data, state="x")
    assert calc_trajectory_rollout_RMSE(engine.parse("-0.7*x + u"), data, state="x") < 1e-6
    assert wrong > 1e-2


def test_blow_up_and_budget_are_typed_errors() -> None:
    data = decay_data()
    with pytest.raises(RolloutError) as caught:
        integrate_ODE(engine.parse("x**3 + 5*x"), data, time="t", state="x")
    assert caught.value.reason == "blow-up" and caught.value.at_time is not None
    with pytest.raises(RolloutError) as caught:
        integrate_system(lambda t, y: -y, np.ones(1), TIMES, max_evaluations=3)
    assert caught.value.reason == "budget"
    with pytest.raises(RolloutError, match="not finite"):
        integrate_system(lambda t, y: np.log(y - 2), np.ones(1), TIMES)


def test_node_field_states_are_integrated_jointly() -> None:
    edges = np.array([[0, 1], [1, 2], [2, 0], [1, 0]])
    f = engine.parse("0.5*sum[j](A[i, j], x[j] - x[i])")
    from srh_core.evaluator.dynamics import SystemRightHandSide

    rhs = SystemRightHandSide({"x": f}, {"A": edges}, (3,), 3)
    states = integrate_system(rhs, np.array([1.0, 0.0, -1.0]), TIMES)
    context = AgentContext(data={"x": states, "A": edges, "t": TIMES}, relation_names={"A"},
                           num_nodes=3)
    rolled = integrate_ODE(f, context, time="t", state="x")
    np.testing.assert_allclose(rolled, states, atol=1e-7)


def test_evaluator_adds_rollout_rmse_when_the_settings_name_a_state() -> None:
    data = decay_data()
    context = AgentContext(args=argparse.Namespace(rollout_state="x"), data=data, target="dx")
    scores = DefaultEvaluator.evaluate_candidate(engine.parse("-0.7*x + u"), context)
    assert scores["rollout_rmse"] < 1e-6 and scores["mse"] < 1e-20
    assert DefaultEvaluator.evaluate_candidate(engine.parse("x**3"), context)[
        "rollout_rmse"] == float("inf")
    plain = AgentContext(data=data, target="dx")
    assert "rollout_rmse" not in DefaultEvaluator.evaluate_candidate(engine.parse("u"), plain)
    wrong = AgentContext(args=argparse.Namespace(rollout_state="z"), data=data, target="dx")
    with pytest.raises(ConfigurationError, match="rollout_state"):
        DefaultEvaluator.evaluate_candidate(engine.parse("u"), wrong)

"""ModelRouter: deterministic, documented escalation to a strong model."""

from __future__ import annotations

import pytest

from srh_core.api import ModelRoute, ModelRouter
from srh_core.errors import ConfigurationError


def router(**overrides) -> ModelRouter:
    settings = dict(enabled=True, base_provider="deepseek", base_model="deepseek-chat",
                    strong_provider="openai", strong_model="gpt-5")
    settings.update(overrides)
    return ModelRouter(**settings)


@pytest.mark.parametrize(
    ("task", "features", "score", "labels"),
    [("Find y as a function of x.", 2, 0.0, []),
     ("Find y.", 7, 2.0, ["7 features"]),
     ("Find y.", 20, 3.0, ["20 features"]),
     ("Recover the ODE dx/dt of a coupled oscillator network.", 1, 4.0,
      ["differential equations", "graph or network"]),
     ("Noisy measurements; express y with dimensionless groups.", 3, 2.0,
      ["dimensional analysis", "noisy data"]),
     ("A piecewise law.", 1, 1.5, ["hard functional forms"]),
     ("x" * 1600, 1, 1.0, ["long description"])],
)
def test_assess_scores_documented_signals(task, features, score, labels):
    got_score, reasons = router().assess(task, features)
    assert got_score == pytest.approx(score)
    assert len(reasons) == len(labels)
    assert all(label in reason for label, reason in zip(labels, reasons, strict=True))


def test_assess_is_deterministic():
    task = "Graph dynamics with noise"
    assert router().assess(task, 5) == router().assess(task, 5)


def test_route_escalates_on_hard_tasks_and_late_steps():
    r = router()
    hard = r.route(4.0, ["mentions differential equations: +2"], refinement_step=1)
    assert hard == ModelRoute("strong", "openai", "gpt-5", 4.0, hard.reason)
    assert "differential equations" in hard.reason
    late = r.route(0.0, [], refinement_step=3)
    assert late.tier == "strong" and "refinement step 3" in late.reason
    early = r.route(1.0, [], refinement_step=2)
    assert (early.tier, early.provider, early.model) == ("base", "deepseek", "deepseek-chat")


@pytest.mark.parametrize(
    ("overrides", "reason"),
    [({"enabled": False}, "disabled"), ({"strong_model": None}, "no distinct strong model"),
     ({"strong_provider": None, "strong_model": "deepseek-chat"}, "no distinct strong model")],
)
def test_without_strong_backend_always_base(overrides, reason):
    route = router(**overrides).route(10.0, ["x"], refinement_step=9)
    assert route.tier == "base" and reason in route.reason


def test_strong_provider_defaults_to_base_provider():
    r = router(strong_provider=None, strong_model="deepseek-reasoner")
    assert r.has_strong_backend and r.route(5, [], 1).provider == "deepseek"


@pytest.mark.parametrize("overrides", [{"base_model": ""}, {"base_provider": None},
                                       {"strong_model": "  "}])
def test_bad_router_settings(overrides):
    with pytest.raises(ConfigurationError):
        router(**overrides)


def test_bad_feature_count():
    with pytest.raises(ConfigurationError, match="feature_count"):
        router().assess("x", -1)

"""Evaluators: split a context, fit formulas, and score them with metric dicts."""

from __future__ import annotations

from srh_core.evaluator import dynamics, metrics, splits
from srh_core.evaluator.default import ContextSplits, DefaultEvaluator
from srh_core.evaluator.dynamics import (
    RolloutError,
    calc_trajectory_rollout_RMSE,
    integrate_ODE,
)
from srh_core.evaluator.graph_evaluator import GraphEvaluator
from srh_core.evaluator.loading import load_custom_evaluator
from srh_core.evaluator.metrics import MetricDict, MetricValue, regression_metrics

__all__ = [
    "ContextSplits",
    "DefaultEvaluator",
    "GraphEvaluator",
    "MetricDict",
    "MetricValue",
    "RolloutError",
    "calc_trajectory_rollout_RMSE",
    "dynamics",
    "integrate_ODE",
    "load_custom_evaluator",
    "metrics",
    "regression_metrics",
    "splits",
]

"""Evaluators: split a context, fit formulas, and score them with metric dicts."""

from __future__ import annotations

from srh_core.evaluator import metrics, splits
from srh_core.evaluator.default import ContextSplits, DefaultEvaluator
from srh_core.evaluator.loading import load_custom_evaluator
from srh_core.evaluator.metrics import MetricDict, MetricValue, regression_metrics

__all__ = [
    "ContextSplits",
    "DefaultEvaluator",
    "MetricDict",
    "MetricValue",
    "load_custom_evaluator",
    "metrics",
    "regression_metrics",
    "splits",
]

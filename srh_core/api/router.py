"""``ModelRouter``: send hard tasks and stuck branches to a stronger model.

Deterministic, documented heuristics; the same inputs always give the same
route. :meth:`ModelRouter.assess` scores a task once:

====================================  ==========================================
signal                                score
====================================  ==========================================
features beyond ``FEATURE_FREE`` (3)  +0.5 each, at most +3
differential equations / dynamics     +2   (ODE, PDE, dx/dt, dynamical system...)
graph or network structure            +2   (graph, network, adjacency, edges...)
hard functional forms                 +1.5 (implicit, piecewise, chaotic, stiff...)
dimensional analysis                  +1   (dimensionless, Buckingham, pi groups)
noisy data                            +1   (noise, noisy, outliers, measurement error)
long description (> 1500 chars)       +1
====================================  ==========================================

:meth:`ModelRouter.route` picks the strong model when routing is enabled, a
distinct strong model is configured, and either the task score reaches
``STRONG_SCORE`` (3) or the refinement step reaches ``LATE_STEP`` (3: the
base model had two steps to converge). Otherwise, the base model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from srh_core.errors import ConfigurationError

RouteTier = Literal["base", "strong"]

FEATURE_FREE = 3
FEATURE_WEIGHT = 0.5
FEATURE_CAP = 3.0
LONG_DESCRIPTION_CHARS = 1500
LONG_DESCRIPTION_WEIGHT = 1.0
STRONG_SCORE = 3.0
LATE_STEP = 3
TASK_SIGNALS: tuple[tuple[str, re.Pattern[str], float], ...] = (
    ("differential equations", re.compile(
        r"\b(?:odes?|pdes?|differential equations?|dynamical systems?|dynamics|d[a-z]?/dt)\b"
        r"|微分方程|动力学", re.IGNORECASE), 2.0),
    ("graph or network structure", re.compile(
        r"\b(?:graphs?|networks?|adjacency|edges?|neighbou?rs?)\b|网络|图结构",
        re.IGNORECASE), 2.0),
    ("hard functional forms", re.compile(
        r"\b(?:implicit|piecewise|chaotic|singular|stiff|discontinu\w*)\b|隐式|分段|混沌",
        re.IGNORECASE), 1.5),
    ("dimensional analysis", re.compile(
        r"\b(?:dimensionless|dimensional analysis|buckingham|pi[- ]groups?)\b|无量纲",
        re.IGNORECASE), 1.0),
    ("noisy data", re.compile(
        r"\b(?:noise|noisy|outliers?|measurement errors?)\b|噪声", re.IGNORECASE), 1.0),
)


@dataclass(frozen=True, slots=True)
class ModelRoute:
    """The chosen provider/model and why.

    Attributes:
        tier: ``base`` or ``strong``.
        provider: Provider to use.
        model: Model to use.
        score: The task score the decision was based on.
        reason: One sentence explaining the choice.
    """

    tier: RouteTier
    provider: str
    model: str
    score: float
    reason: str


class ModelRouter:
    """Choose the cheap base model or an optional stronger one, per request.

    Args:
        enabled: Route at all; False always returns the base model.
        base_provider: Provider of the base model.
        base_model: The base model.
        strong_provider: Provider of the strong model (default: the base provider).
        strong_model: The strong model; None disables escalation.
    """

    def __init__(self, enabled: bool, base_provider: str, base_model: str,
                 strong_provider: str | None = None, strong_model: str | None = None) -> None:
        for name, value in (("base_provider", base_provider), ("base_model", base_model)):
            if not isinstance(value, str) or not value.strip():
                raise ConfigurationError(
                    f"{name} must be a non-empty string. Got {value!r} instead.", setting=name)
        for name, value in (("strong_provider", strong_provider), ("strong_model", strong_model)):
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise ConfigurationError(
                    f"{name} must be None or a non-empty string. Got {value!r} instead.",
                    setting=name)
        self.enabled = bool(enabled)
        self.base_provider, self.base_model = base_provider, base_model
        self.strong_provider = strong_provider or base_provider
        self.strong_model = strong_model

    @property
    def has_strong_backend(self) -> bool:
        """Whether a strong model distinct from the base one is configured."""
        return self.strong_model is not None and (
            (self.strong_provider, self.strong_model) != (self.base_provider, self.base_model))

    def assess(self, task: str, feature_count: int) -> tuple[float, list[str]]:
        """Score how hard a task looks (see the module table).

        Args:
            task: Task description shown to the model.
            feature_count: Number of input features.

        Returns:
            The score and one reason per contributing signal.
        """
        if isinstance(feature_count, bool) or not isinstance(feature_count, int) or (
                feature_count < 0):
            raise ConfigurationError(
                f"feature_count must be an int >= 0. Got {feature_count!r} instead.",
                setting="feature_count")
        score, reasons = 0.0, []
        extra = min((feature_count - FEATURE_FREE) * FEATURE_WEIGHT, FEATURE_CAP)
        if extra > 0:
            score += extra
            reasons.append(f"{feature_count} features (> {FEATURE_FREE}): +{extra:g}")
        for label, pattern, weight in TASK_SIGNALS:
            if pattern.search(task):
                score += weight
                reasons.append(f"mentions {label}: +{weight:g}")
        if len(task) > LONG_DESCRIPTION_CHARS:
            score += LONG_DESCRIPTION_WEIGHT
            reasons.append(f"long description ({len(task)} chars): +{LONG_DESCRIPTION_WEIGHT:g}")
        return score, reasons

    def route(self, task_score: float, task_reasons: list[str],
              refinement_step: int) -> ModelRoute:
        """Pick the model for one request.

        Args:
            task_score: Score from :meth:`assess`.
            task_reasons: Reasons from :meth:`assess`.
            refinement_step: One-based refinement step L of the branch.
        """
        if not self.enabled:
            return self._base(task_score, "routing is disabled")
        if not self.has_strong_backend:
            return self._base(task_score, "no distinct strong model is configured")
        if task_score >= STRONG_SCORE:
            why = "; ".join(task_reasons) or f"score {task_score:g}"
            return self._strong(task_score, f"task score {task_score:g} >= {STRONG_SCORE:g} "
                                            f"({why})")
        if refinement_step >= LATE_STEP:
            return self._strong(task_score, f"refinement step {refinement_step} >= {LATE_STEP}: "
                                            "the base model has not converged")
        return self._base(task_score, f"task score {task_score:g} < {STRONG_SCORE:g} and "
                                      f"refinement step {refinement_step} < {LATE_STEP}")

    def _base(self, score: float, reason: str) -> ModelRoute:
        return ModelRoute("base", self.base_provider, self.base_model, score, reason)

    def _strong(self, score: float, reason: str) -> ModelRoute:
        return ModelRoute("strong", self.strong_provider, str(self.strong_model), score, reason)

"""The agents: SRAgent (the R-C-L-K search: its step functions and the rules both runtimes
share), the authoring agents (DataPreparationAgent, EvaluatorConstructionAgent) and their
base, Agent. The authoring agents load on first use (``srh --help`` stays light)."""

from __future__ import annotations

import importlib
from typing import Any

from srh_core.agent.base import Agent
from srh_core.agent.branch import BranchState
from srh_core.agent.outcome import RunOutcome, run_outcome, step_gate
from srh_core.agent.settings import SearchSettings
from srh_core.agent.sragent import SRAgent, agent_class_path, load_agent_class
from srh_core.agent.steps import StepPlan, opened_step, sample_results

__all__ = ["Agent", "BranchState", "DataPreparationAgent", "EvaluatorConstructionAgent",
           "RunOutcome", "SRAgent", "SearchSettings", "StepPlan", "agent_class_path",
           "load_agent_class", "opened_step", "run_outcome", "sample_results", "step_gate"]

_LAZY = {"DataPreparationAgent": "srh_core.agent.data_preparation",
         "EvaluatorConstructionAgent": "srh_core.agent.evaluator_construction"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'srh_core.agent' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value

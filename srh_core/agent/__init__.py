"""The agents: SRAgent (the R-C-L-K search: its step functions and the rules both runtimes
share), the authoring agents (DataPreparationAgent, EvaluatorConstructionAgent) and their
base, Agent.

Names are imported on first use: reading a run's settings (``srh status``) does not
import the agent, its tools and model adapters, and a module below the agent (a store,
the run directory) may import ``srh_core.agent.settings`` or ``.outcome`` without
loading SRAgent and the embedded runtime it starts.
"""

from __future__ import annotations

from srh_engine.lazy import lazy_exports

_LAZY = {
    "Agent": "base",
    "BranchState": "branch",
    "DataPreparationAgent": "data_preparation",
    "EvaluatorConstructionAgent": "evaluator_construction",
    "RunOutcome": "outcome", "run_outcome": "outcome", "step_gate": "outcome",
    "SearchSettings": "settings",
    "SRAgentInteractive": "srh_core.interactive.agent",
    "SRAgent": "sragent", "agent_class_path": "sragent", "load_agent_class": "sragent",
    "recorded_agent_class": "sragent",
    "opened_step": "steps", "sample_results": "steps",
}

__all__ = sorted(_LAZY)


__getattr__, __dir__ = lazy_exports(__name__, _LAZY)

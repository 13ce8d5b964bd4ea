"""The R-C-L-K search agent: SRAgent's step functions and the rules both runtimes share."""

from srh_core.agent.base import Agent
from srh_core.agent.branch import BranchState
from srh_core.agent.outcome import RunOutcome, run_outcome, step_gate
from srh_core.agent.settings import SearchSettings
from srh_core.agent.sragent import SRAgent, agent_class_path, load_agent_class
from srh_core.agent.steps import StepPlan, opened_step, sample_results

__all__ = ["Agent", "BranchState", "RunOutcome", "SRAgent", "SearchSettings", "StepPlan",
           "agent_class_path", "load_agent_class", "opened_step", "run_outcome",
           "sample_results", "step_gate"]

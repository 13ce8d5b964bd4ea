"""The agents: SRAgent (the R-C-L-K search: its step functions and the rules both runtimes
share), the authoring agents (DataPreparationAgent, EvaluatorConstructionAgent) and their
base, Agent."""

from srh_core.agent.base import Agent
from srh_core.agent.branch import BranchState
from srh_core.agent.data_preparation import DataPreparationAgent
from srh_core.agent.evaluator_construction import EvaluatorConstructionAgent
from srh_core.agent.outcome import RunOutcome, run_outcome, step_gate
from srh_core.agent.settings import SearchSettings
from srh_core.agent.sragent import SRAgent, agent_class_path, load_agent_class
from srh_core.agent.steps import StepPlan, opened_step, sample_results

__all__ = ["Agent", "BranchState", "DataPreparationAgent", "EvaluatorConstructionAgent",
           "RunOutcome", "SRAgent", "SearchSettings", "StepPlan", "agent_class_path",
           "load_agent_class", "opened_step", "run_outcome", "sample_results", "step_gate"]

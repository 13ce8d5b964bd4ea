"""The R-C-L-K search agent and its embedded runtime."""

from srh_core.agent.branch import BranchState
from srh_core.agent.settings import SearchSettings
from srh_core.agent.sragent import SRAgent
from srh_core.agent.steps import StepPlan

__all__ = ["BranchState", "SRAgent", "SearchSettings", "StepPlan"]

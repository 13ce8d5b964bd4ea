"""SRHarness core: the agent loop, tools, evaluator, model adapters, run state, CLI.

The light contracts (types, errors, ranking, run state) import eagerly; the
heavier parts (agent, model adapters, tools, context) load on first use, so
``import srh_core`` stays fast and imports no network client.
"""

from __future__ import annotations

import importlib
from typing import Any

from srh_core.errors import (
    ConfigurationError,
    ContextManifestError,
    DataError,
    ModelAPIError,
    ModelResponseTruncatedError,
    SRHarnessError,
    ToolRunAbort,
)
from srh_core.ranking import ExactFitRule, RankingPolicy
from srh_core.state import SearchRunState
from srh_core.types import (
    CandidateRecord,
    ParentLink,
    ParentRelation,
    SearchCoordinate,
    SearchNode,
    SearchResult,
    ToolCall,
    ToolCallResult,
    ToolMetadata,
    json_value,
)

_LAZY = {
    "AgentContext": "srh_core.context",
    "load_context_data": "srh_core.context",
    "inspect_context_data": "srh_core.context",
    "update_context_data_descriptions": "srh_core.context",
    "load_tabular": "srh_core.context",
    "DefaultEvaluator": "srh_core.evaluator",
    "load_custom_evaluator": "srh_core.evaluator",
    "SRAgent": "srh_core.agent",
    "SearchSettings": "srh_core.agent",
    "BranchState": "srh_core.agent",
    "SRHarnessRegressor": "srh_core.estimator",
    "BaseTool": "srh_core.tools.base",
    "BaseParser": "srh_core.parsers",
    "BaseAPI": "srh_core.api",
    "APICallResult": "srh_core.api",
    "ModelRouter": "srh_core.api",
    "ToolExecutor": "srh_core.seams",
    "CandidateStore": "srh_core.seams",
    "BranchRunner": "srh_core.seams",
    "load_suite": "srh_core.problems",
}

__all__ = [
    "CandidateRecord", "ConfigurationError", "ContextManifestError", "DataError",
    "ExactFitRule", "ModelAPIError", "ModelResponseTruncatedError", "ParentLink",
    "ParentRelation", "RankingPolicy", "SRHarnessError", "SearchCoordinate", "SearchNode",
    "SearchResult", "SearchRunState", "ToolCall", "ToolCallResult", "ToolMetadata",
    "ToolRunAbort", "json_value", *sorted(_LAZY),
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'srh_core' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value

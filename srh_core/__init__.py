"""SRHarness core: the agent loop, tools, evaluator, model adapters, run state, CLI.

Every name loads its module on first use, so ``import srh_core`` (which every
``srh_core.<module>`` import runs, ``srh --help`` among them) costs nothing
and imports no network client.
"""

from __future__ import annotations

from srh_engine.lazy import lazy_exports

_LAZY = {
    "ConfigurationError": "srh_core.errors",
    "ContextManifestError": "srh_core.errors",
    "DataError": "srh_core.errors",
    "ModelAPIError": "srh_core.errors",
    "ModelResponseTruncatedError": "srh_core.errors",
    "SRHarnessError": "srh_core.errors",
    "ToolRunAbort": "srh_core.errors",
    "ExactFitRule": "srh_core.ranking",
    "RankingPolicy": "srh_core.ranking",
    "SearchRunState": "srh_core.state",
    "CandidateRecord": "srh_core.types",
    "ParentLink": "srh_core.types",
    "ParentRelation": "srh_core.types",
    "SearchCoordinate": "srh_core.types",
    "SearchNode": "srh_core.types",
    "SearchResult": "srh_core.types",
    "ToolCall": "srh_core.types",
    "ToolCallResult": "srh_core.types",
    "ToolMetadata": "srh_core.types",
    "json_value": "srh_core.types",
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

__all__ = sorted(_LAZY)


__getattr__, __dir__ = lazy_exports(__name__, _LAZY)

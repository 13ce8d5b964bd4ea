"""Tools: the deterministic operations the model calls, and their base class.

Every tool subclasses :class:`BaseTool` and is registered under a stable
name; ``BaseTool.get_class(name)`` / ``BaseTool.create(name, context)`` find
built-in tools without any import first. The names below load on first use,
so importing this package (or :mod:`srh_core.tools.base`) imports no tool.

Built-in tools by registered name: ``evaluate_formula`` (EvaluateTool),
``submit_formula``, ``polynomial_fit``, ``power_law_fit``, ``rational_fit``,
``constant_fit``, ``harmonic_interaction_fit``, ``monomial_sum_fit``,
``call_sindy`` (SINDyTool), ``evaluate_eic`` (EICTool), ``call_pysr``,
``expression_search`` (ExpressionSearchTool),
``statistics_analysis``, ``relationship_analysis``, ``evaluate_code``,
``code_executor``, ``workspace_code_executor``, ``workspace_shell``,
``read_skill``, ``edit_skill``, ``predict_property`` (PropertyPredictorTool), ``web_fetch``,
``web_search``, ``read_pdf`` (PDFReadTool), ``validate_context_data``, ``call_llm``
(LLMTool), ``subagent`` (SubagentTool), ``report_model_test`` (ModelTestTool),
``read_source`` (ReadSourceTool), ``validate_evaluator`` (ValidateEvaluatorTool),
``create_skill`` (CreateSkillTool) and ``edit_tool`` (EditToolTool) (these, and
``edit_skill``, not enabled by default). A skill's ``tool.py`` becomes a tool of its
own (:class:`CustomTool`, :mod:`srh_core.tools.custom_tools`).
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "BaseTool": "srh_core.tools.base",
    "ToolMetadata": "srh_core.types",
    "ToolCallResult": "srh_core.types",
    "ToolRunAbort": "srh_core.errors",
    "CodeExecutorTool": "srh_core.tools.code",
    "WorkspaceCodeExecutorTool": "srh_core.tools.code",
    "ConstantFitTool": "srh_core.tools.constants",
    "EICTool": "srh_core.tools.eic",
    "EditSkillTool": "srh_core.tools.skills",
    "EvaluateCodeTool": "srh_core.tools.code_model",
    "EvaluateTool": "srh_core.tools.evaluate",
    "ExpressionSearchTool": "srh_core.tools.search",
    "SubmitFormulaTool": "srh_core.tools.evaluate",
    "HarmonicInteractionFitTool": "srh_core.tools.harmonic",
    "MonomialSumFitTool": "srh_core.tools.monomial_sum",
    "PolynomialFitTool": "srh_core.tools.polynomial",
    "PowerLawFitTool": "srh_core.tools.power_law",
    "PySRTool": "srh_core.tools.pysr",
    "RationalFitTool": "srh_core.tools.rational",
    "ReadSkillTool": "srh_core.tools.skills",
    "RelationshipAnalysisTool": "srh_core.tools.analysis.relationship",
    "SINDyTool": "srh_core.tools.sindy",
    "StatisticsTool": "srh_core.tools.analysis.statistics",
    "WorkspaceShellTool": "srh_core.tools.workspace_shell",
    "PDFReadTool": "srh_core.tools.pdf",
    "PropertyPredictorTool": "srh_core.tools.analysis.properties",
    "ValidateContextDataTool": "srh_core.tools.context_data",
    "WebFetchTool": "srh_core.tools.web",
    "WebSearchTool": "srh_core.tools.web",
    "LLMTool": "srh_core.tools.model_tools",
    "SubagentTool": "srh_core.tools.model_tools",
    "ModelTestTool": "srh_core.tools.model_tools",
    "ReadSourceTool": "srh_core.tools.source",
    "ValidateEvaluatorTool": "srh_core.tools.evaluator_check",
    "CreateSkillTool": "srh_core.tools.skill_authoring",
    "EditToolTool": "srh_core.tools.skill_authoring",
    "CustomTool": "srh_core.tools.custom_tools",
}
_RENAMED = {"ReadSkill": "ReadSkillTool", "EditSkill": "EditSkillTool",  # reference -> ours
            "CreateSkill": "CreateSkillTool", "EditTool": "EditToolTool"}

__all__ = sorted([*_LAZY, *_RENAMED])


def __getattr__(name: str) -> Any:
    attribute = _RENAMED.get(name, name)
    module = _LAZY.get(attribute)
    if module is None:
        raise AttributeError(f"module 'srh_core.tools' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])

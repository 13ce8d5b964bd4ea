"""The public names of the reference's ``__all__`` lists that we implement, importable here.

The reference is ``sr_harness`` / ``sr_harness_engine`` (docs in
/work/shared/reference/api-reference.md); ours are ``srh_core`` and
``srh_engine``. ``REFERENCE_ALL`` copies each reference list; ``IMPLEMENTED``
is the part we provide, module by module. A name moves from the first to
the second when it is built; the test checks that every implemented name
imports from our module and is one the reference exports.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

REFERENCE_ALL = {
    "sr_harness.agents": """Agent DataPreparationAgent EvaluatorConstructionAgent SRAgent
        SRAgentInteractive""",
    "sr_harness.core": """APICallResult AgentContext CandidateRecord ContextManifestError
        ParentLink ParentRelation SearchCoordinate SearchNode SearchResult SearchRunState
        ToolCall ToolCallResult ToolMetadata inspect_context_data json_value
        load_context_data update_context_data_descriptions""",
    "sr_harness.evaluator": """ContextSplits DefaultEvaluator GraphEvaluator
        load_custom_evaluator MetricDict MetricValue utils""",
    "sr_harness.evaluator.utils": """AgentContext calc_MSE calc_RMSE calc_MAE calc_MAPE
        calc_R2 calc_AIC calc_BIC calc_PearsonR calc_SpearmanR calc_complexity
        regression_metrics select_random_indices select_OOD_indices split_indices
        split_aligned_context integrate_ODE calc_trajectory_rollout_RMSE""",
    "sr_harness.api": """APICallResult BaseAPI DeepSeekAPI GeminiAPI LMStudioAPI ManualAPI
        ModelResponseTruncatedError OpenAIAPI OpenRouterAPI SiliconFlowAPI ToolList
        ToolParserName""",
    "sr_harness.tools": """BaseTool CodeExecutorTool ConstantFitTool CreateSkill EditSkill
        EditTool EICTool EvaluateCodeTool EvaluateTool HarmonicInteractionFitTool LLMTool
        ModelTestTool ND2Tool PDFReadTool PolynomialFitTool PowerLawFitTool
        PropertyPredictorTool PySRTool RationalFitTool ReadSkill ReadSourceTool
        RelationshipAnalysisTool SINDyTool SR4MDLTool StatisticsTool SubagentTool
        SubmitFormulaTool ToolCallResult ToolMetadata ToolRunAbort ValidateContextDataTool
        ValidateEvaluatorTool WebFetchTool WebSearchTool WorkspaceCodeExecutorTool
        WorkspaceShellTool""",
    "sr_harness_engine": """Aggregate Binary Expression FitResult Function Gather
        GroupedParameter Index Indexed Number Parameter Reduction RelationField RelationLift
        Symbol Variable abs aggr arccos arcsin arctan cos cosh bind_parameters cot
        count_parameters csc delay desugar evaluate exp fit fold_constants function gather
        grouped_param inv log log10 param parameter_values parse reduction render sec sech
        sigmoid sign sin sinh sour sqrt tan tanh targ unbound_parameters""",
}

# reference module -> (our module, the names we implement)
IMPLEMENTED = {
    "sr_harness.agents": ("srh_core.agent", """Agent DataPreparationAgent SRAgentInteractive
        EvaluatorConstructionAgent SRAgent"""),
    "sr_harness.core": ("srh_core", REFERENCE_ALL["sr_harness.core"]),
    "sr_harness.evaluator": ("srh_core.evaluator", """ContextSplits DefaultEvaluator GraphEvaluator
        load_custom_evaluator MetricDict MetricValue utils"""),
    "sr_harness.evaluator.utils": ("srh_core.evaluator.utils", """AgentContext calc_MSE
        calc_RMSE calc_MAE calc_MAPE calc_R2 calc_AIC calc_BIC calc_PearsonR calc_SpearmanR
        calc_complexity regression_metrics select_random_indices select_OOD_indices
        split_indices split_aligned_context integrate_ODE calc_trajectory_rollout_RMSE"""),
    "sr_harness.api": ("srh_core.api", """APICallResult BaseAPI DeepSeekAPI GeminiAPI
        LMStudioAPI ManualAPI ModelResponseTruncatedError OpenAIAPI OpenRouterAPI
        SiliconFlowAPI ToolList ToolParserName"""),
    "sr_harness.tools": ("srh_core.tools", """BaseTool CodeExecutorTool ConstantFitTool
        EICTool EvaluateCodeTool EvaluateTool HarmonicInteractionFitTool PolynomialFitTool
        PowerLawFitTool PySRTool RationalFitTool ReadSkill RelationshipAnalysisTool SINDyTool
        StatisticsTool SubmitFormulaTool ToolCallResult ToolMetadata ToolRunAbort
        WorkspaceCodeExecutorTool WorkspaceShellTool PDFReadTool PropertyPredictorTool
        WebFetchTool WebSearchTool EditSkill ValidateContextDataTool LLMTool SubagentTool
        ModelTestTool ReadSourceTool ValidateEvaluatorTool CreateSkill EditTool ND2Tool
        SR4MDLTool"""),
    "sr_harness_engine": ("srh_engine", """Binary Expression FitResult Function
        GroupedParameter Number Parameter Symbol Variable abs arccos arcsin arctan cos cosh
        bind_parameters cot count_parameters csc evaluate exp fit fold_constants function
        grouped_param inv log log10 param parameter_values parse render sec sech sigmoid
        sign sin sinh sqrt tan tanh unbound_parameters Aggregate Gather Index Indexed
        Reduction RelationField RelationLift aggr delay desugar gather reduction sour targ"""),
}
CASES = [(reference, ours, name) for reference, (ours, names) in IMPLEMENTED.items()
         for name in names.split()]

# tool names the reference registers, which tools=[...] lists written for it use
REFERENCE_TOOL_NAMES = ("evaluate_formula", "call_sindy", "evaluate_eic", "call_pysr",
                        "statistics_analysis", "relationship_analysis", "read_skill",
                        "create_skill", "edit_skill", "edit_tool")


@pytest.mark.parametrize(("reference", "ours", "name"), CASES,
                         ids=[f"{ours}.{name}" for _, ours, name in CASES])
def test_implemented_reference_name_imports(reference, ours, name):
    assert name in REFERENCE_ALL[reference].split()
    module = importlib.import_module(ours)
    try:
        value = getattr(module, name)
    except AttributeError:
        value = importlib.import_module(f"{ours}.{name}")  # a submodule, e.g. evaluator.utils
    assert value is not None
    if name[0].isupper() and "__all__" in vars(module):
        assert name in module.__all__


@pytest.mark.parametrize("name", REFERENCE_TOOL_NAMES)
def test_reference_tool_names_are_registered(name):
    from srh_core import BaseTool

    assert BaseTool.get_class(name).metadata.name == name


def test_expression_eval_is_evaluate():
    from srh_engine import Expression, parse

    assert Expression.eval is Expression.evaluate
    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(parse('x**2 + param("a", 1.0)').eval({"x": x}), [2.0, 5.0])

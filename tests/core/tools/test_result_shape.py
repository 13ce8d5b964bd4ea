"""Formula results carry the reference's data_split_results next to our metrics."""

from __future__ import annotations

import numpy as np

from srh_core.agent.candidates import sample_candidates
from srh_core.context import AgentContext
from srh_core.tools.base import BaseTool
from srh_core.types import ToolCall


def test_data_split_results_mirror_metrics_and_candidates_keep_them_once():
    x = np.linspace(1, 3, 80)
    context = AgentContext(args={"validation_fraction": 0.25}, data={"x": x, "y": x**2 + 1},
                           target="y")
    call = ToolCall("evaluate_formula", {"f": 'param("a")*x**2 + 1', "fit": True})
    result = BaseTool.create(call.name, context)(**call.params)
    splits = result.result["data_split_results"]
    assert set(splits) == {"train", "validation"}
    assert splits["validation"]["metrics"] == result.result["metrics"]["validation"]
    assert splits["train"]["metrics"]["r2"] > 1 - 1e-12
    [record] = sample_candidates([call], [result], "run:R1-C1-L1-K1", "y")
    assert "data_split_results" not in record.details
    assert record.split_metrics("validation")["mse"] == splits["validation"]["metrics"]["mse"]

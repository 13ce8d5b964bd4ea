from __future__ import annotations

import json
import math

import numpy as np
import pytest

from srh_core.types import (
    CandidateRecord,
    ParentLink,
    SearchCoordinate,
    SearchNode,
    SearchResult,
    ToolCall,
    ToolCallResult,
    json_value,
)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (np.float64(1.5), 1.5),
        (np.int32(3), 3),
        (np.array([1.0, np.nan, np.inf]), [1.0, None, None]),
        (float("-inf"), None),
        ((1, {"a": np.bool_(True)}), [1, {"a": True}]),
        ({1: "x"}, {"1": "x"}),
        (SearchCoordinate(1, 2, 3, 4), {"R": 1, "C": 2, "L": 3, "K": 4}),
    ],
    ids=["np-float", "np-int", "array-nonfinite", "neg-inf", "nested", "int-key", "to_dict"],
)
def test_json_value_is_strict_json(value, expected):
    converted = json_value(value)
    assert converted == expected
    json.dumps(converted, allow_nan=False)


def test_tool_call_and_result_round_trip():
    call = ToolCall("evaluate", {"f": "x**2"}, id="call_1", raw=object(), raw_str="...")
    again = ToolCall.from_dict(json.loads(json.dumps(call.to_dict())))
    assert (again.name, again.params, again.id, again.raw_str) == ("evaluate", {"f": "x**2"},
                                                                  "call_1", "...")
    result = ToolCallResult(True, {"mse": np.float64(np.nan)}, "ok", {"elapsed_s": 0.1})
    data = json.loads(json.dumps(result.to_dict()))
    assert ToolCallResult.from_dict(data).result == {"mse": None}
    assert result.get("elapsed_s") == 0.1 and result.get("missing", 7) == 7


def test_parent_link_rejects_unknown_relation():
    with pytest.raises(ValueError, match="continuation"):
        ParentLink("r:R1-C1-L1-K1", "sibling")  # type: ignore[arg-type]


def test_search_node_round_trip():
    node = SearchNode("r", "r:R1-C1-L2-K1", "R1-C1-L2-K1", SearchCoordinate(1, 1, 2, 1),
                      (ParentLink("r:R1-C1-L1-K1", "continuation"),), "now",
                      {"content": "hi"}, {"prompt": [{"role": "user", "content": "x"}]})
    again = SearchNode.from_dict(json.loads(json.dumps(node.to_dict())))
    assert again == node
    assert "detail" not in node.to_dict(include_detail=False)


def test_candidate_record_public_shape():
    record = CandidateRecord("x**2", "r:R1-C1-L1-K1", {
        "metrics": {"train": {"mse": 0.0, "r2": 1.0}, "validation": {"mse": math.nan}},
        "complexity": 3, "canonical_key": "k"})
    shape = record.to_dict()
    assert shape["complexity"] == 3
    assert shape["metrics"] == {"train": {"mse": 0.0, "r2": 1.0}, "validation": {"mse": None}}
    assert record.metric("r2", "train") == 1.0 and record.metric("mse", "test") is None
    assert CandidateRecord.from_dict(shape).to_dict() == shape
    assert record.display_dict()["split"] == "validation"


def test_search_result_validates_status_and_round_trips():
    with pytest.raises(ValueError, match="completed"):
        SearchResult("done", "", [], [], None)  # type: ignore[arg-type]
    result = SearchResult("completed", "p", [CandidateRecord("x", "n", {"complexity": 1})],
                          [0], 0, run_id="r")
    assert SearchResult.from_dict(result.to_dict()).to_dict() == result.to_dict()
    assert result.best is not None and result.front()[0].formula == "x"

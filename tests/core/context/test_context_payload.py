from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from srh_core.context import AgentContext, ContextPayload, context_from_payload
from srh_core.errors import ConfigurationError, DataError
from srh_core.evaluator import DefaultEvaluator


def make_context(tmp_path: Path) -> AgentContext:
    x = np.linspace(0.0, 1.0, 30)
    args = SimpleNamespace(validation_fraction=0.3, split_random_state=5, fit_constants=True)
    context = AgentContext(data={"x": x, "y": x**2}, target="y", args=args,
                           variable_descriptions={"x": "input"}, workspace=tmp_path)
    context.add_features({"x3": x**3})
    return context


def round_trip(payload: ContextPayload) -> ContextPayload:
    metadata = json.loads(json.dumps(payload.metadata_json(), allow_nan=False))
    arrays = {name: np.array(value) for name, value in payload.arrays.items()}
    return ContextPayload.from_parts(metadata, arrays)


def test_payload_round_trip_rebuilds_the_same_context(tmp_path: Path) -> None:
    context = make_context(tmp_path)
    rebuilt = AgentContext.from_payload(round_trip(context.to_payload()))
    assert rebuilt.revision == context.revision == 1
    assert rebuilt.schema() == context.schema()
    assert rebuilt.workspace_path == tmp_path
    assert isinstance(rebuilt.evaluator, DefaultEvaluator)
    np.testing.assert_array_equal(rebuilt.validation_split.data["x"],
                                  context.validation_split.data["x"])


def test_payload_rejects_changed_arrays(tmp_path: Path) -> None:
    payload = make_context(tmp_path).to_payload()
    arrays = dict(payload.arrays)
    arrays["x3"] = arrays["x3"] + 1
    with pytest.raises(DataError, match="'x3' differs") as info:
        context_from_payload(ContextPayload(payload.metadata, arrays))
    assert info.value.variable == "x3"


def test_payload_rejects_missing_arrays(tmp_path: Path) -> None:
    payload = make_context(tmp_path).to_payload()
    arrays = {k: v for k, v in payload.arrays.items() if k != "x"}
    with pytest.raises(DataError, match="missing \\['x'\\]"):
        context_from_payload(ContextPayload(payload.metadata, arrays))


def test_payload_metadata_is_validated() -> None:
    with pytest.raises(ConfigurationError, match="payload"):
        ContextPayload.from_parts({"format": "other"}, {})


def test_custom_evaluator_without_file_must_be_passed(tmp_path: Path) -> None:
    class LocalEvaluator(DefaultEvaluator):
        pass

    context = AgentContext(data={"y": np.ones(3)}, target="y", evaluator=LocalEvaluator())
    payload = context.to_payload()
    with pytest.raises(ConfigurationError, match="pass evaluator="):
        context_from_payload(payload)
    rebuilt = context_from_payload(payload, evaluator=LocalEvaluator())
    assert isinstance(rebuilt.evaluator, LocalEvaluator)

"""Fixtures of the formula-tool tests: contexts from generated data, a runner, shape checks."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pytest

import srh_engine as engine
from srh_core.context import AgentContext
from srh_core.tools.base import RESULT_STR_LIMIT, BaseTool
from srh_core.types import ToolCallResult, json_value

N_SAMPLES = 400
VALIDATION_FRACTION = 0.25
MAX_CALL_SECONDS = 10.0

Sampler = Callable[[np.random.Generator, int], dict[str, np.ndarray]]


@pytest.fixture(params=[0.0, VALIDATION_FRACTION], ids=["no-validation", "validation"])
def validation_fraction(request: pytest.FixtureRequest) -> float:
    """Every test using it runs without and with a validation split."""
    return request.param


@pytest.fixture
def make_context(validation_fraction: float) -> Callable[..., AgentContext]:
    """Build a context from a sampler and a target function of the sampled data."""

    def build(sampler: Sampler, target: str, truth: Callable[[Mapping[str, np.ndarray]], Any],
              n: int = N_SAMPLES, seed: int = 0, **extra: np.ndarray) -> AgentContext:
        data = sampler(np.random.default_rng(seed), n)
        data[target] = np.asarray(truth(data), dtype=float)
        data.update(extra)
        return AgentContext(args={"validation_fraction": validation_fraction}, data=data,
                            target=target)

    return build


@pytest.fixture
def run() -> Callable[..., ToolCallResult]:
    """Call a registered tool through its boundary (argument validation, formatting, bounds)."""

    def call(name: str, context: AgentContext, **arguments: Any) -> ToolCallResult:
        started = time.perf_counter()
        result = BaseTool.create(name, context)(**arguments)
        assert time.perf_counter() - started < MAX_CALL_SECONDS
        assert len(result.result_str) <= RESULT_STR_LIMIT
        return result

    return call


def check_shape(result: Mapping[str, Any], context: AgentContext, *, nested: bool = False,
                ) -> None:
    """Assert the common evaluation shape the agent depends on."""
    assert {"formula", "is_candidate", "target", "metrics"} <= set(result)
    expression = engine.parse(result["formula"])  # parseable as is, no symbols mapping
    assert isinstance(result["is_candidate"], bool)
    assert isinstance(result["target"], str)
    splits = {"train"} | ({"validation"} if context.validation_split is not None else set())
    assert set(result["metrics"]) == splits
    # the reference's shape holds the same metric dicts
    assert result["data_split_results"] == {split: {"metrics": values}
                                             for split, values in result["metrics"].items()}
    for metrics in result["metrics"].values():
        assert {"mse", "rmse", "r2", "n_samples"} <= set(metrics)
    assert not engine.unbound_parameters(expression)
    assert set(engine.symbols(expression)) <= set(context.data)
    if result["is_candidate"]:
        assert result["target"] == context.target
        assert context.target not in engine.symbols(expression)
    for key, kind in (("parameters", dict), ("diagnostics", dict), ("warnings", list),
                      ("submitted", bool), ("all_formulas", list)):
        assert key not in result or isinstance(result[key], kind), key
    assert all(isinstance(text, str) for text in result.get("warnings", []))
    if nested:
        assert "all_formulas" not in result
    for alternative in result.get("all_formulas", []):
        check_shape(alternative, context, nested=True)
    json.dumps(json_value(result), allow_nan=False)


@pytest.fixture
def shape() -> Callable[..., None]:
    """The common-shape check as a fixture."""
    return check_shape


@pytest.fixture
def assert_exact() -> Callable[..., None]:
    """Re-evaluate a formula with srh_engine on fresh points against the truth."""

    def check(result: Mapping[str, Any], sampler: Sampler,
              truth: Callable[[Mapping[str, np.ndarray]], Any], rtol: float = 1e-10) -> None:
        train = result["metrics"]["train"]
        assert train["mse"] < 1e-20 or 1.0 - train["r2"] < rtol
        fresh = sampler(np.random.default_rng(12345), 500)
        predicted = engine.evaluate(engine.parse(result["formula"]), fresh)
        expected = np.asarray(truth(fresh), dtype=float)
        scale = float(np.sqrt(np.mean(expected ** 2)))
        assert np.max(np.abs(predicted - expected)) <= rtol * max(scale, 1.0)

    return check

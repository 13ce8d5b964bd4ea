"""A run's units and its weights column travel to the workers in its published context
payload."""

from __future__ import annotations

import time

import fakeredis
import numpy as np

from srh_core.agent.settings import SearchSettings
from srh_core.context import AgentContext
from srh_workers.store import RedisRunStore


def test_the_published_payload_carries_the_units():
    settings = SearchSettings.build(units={"m": "kg", "v": "m/s", "E": "J"})
    context = AgentContext(args=settings, data={"m": np.ones(5), "v": np.ones(5),
                                                "E": np.ones(5) / 2}, target="E")
    client = fakeredis.FakeRedis()
    RedisRunStore(client, "units-run").publish("{}", context.to_payload(), time.time())
    rebuilt = AgentContext.from_payload(RedisRunStore(client, "units-run").payload())
    assert rebuilt.variable_units == {"m": "kg", "v": "m/s", "E": "J"}


def test_the_published_payload_carries_the_weights_column():
    settings = SearchSettings.build(weights="w")
    weights = np.array([0.0, 1.0, 2.0, 1.0, 1.0])
    context = AgentContext(args=settings, data={"x": np.arange(5.0), "w": weights,
                                                "y": np.arange(5.0) ** 2}, target="y")
    client = fakeredis.FakeRedis()
    RedisRunStore(client, "weights-run").publish("{}", context.to_payload(), time.time())
    rebuilt = AgentContext.from_payload(RedisRunStore(client, "weights-run").payload())
    np.testing.assert_array_equal(rebuilt.row_weights(), weights)
    assert rebuilt.feature_names() == ("x",)

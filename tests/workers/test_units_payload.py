"""A run's units travel to the workers in its published context payload."""

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

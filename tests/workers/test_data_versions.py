"""A run's data versions in Redis: publish_data, the version the record names, refusals."""

from __future__ import annotations

import fakeredis
import numpy as np
import pytest

from srh_core.context import AgentContext
from srh_core.errors import ConfigurationError, SearchStateError
from srh_workers.store import RedisRunStore


def context_of(y_factor: float) -> AgentContext:
    x = np.linspace(1.0, 2.0, 12)
    context = AgentContext()
    context.commit_data({"x": x, "y": y_factor * x}, target="y")
    return context


@pytest.fixture
def store() -> RedisRunStore:
    client = fakeredis.FakeStrictRedis(server=fakeredis.FakeServer())
    store = RedisRunStore(client, "versions")
    store.publish('{"run_id": "versions"}', context_of(1.0).to_payload(), 0.0)
    return store


def test_each_published_version_stays_readable_and_the_record_names_the_newest(store) -> None:
    assert store.data_revision() is None
    base = store.payload(None)
    assert store.payload(base.metadata.revision).metadata == base.metadata  # no rev: prefix
    changed = context_of(1.0)
    changed.commit_data({"x": np.linspace(1.0, 2.0, 12), "y": np.ones(12)}, target="y")
    assert store.publish_data(changed.to_payload()) == changed.revision == 2
    assert store.data_revision() == 2
    assert np.array_equal(store.payload(2).arrays["y"], np.ones(12))
    assert np.array_equal(store.payload(None).arrays["y"], np.linspace(1.0, 2.0, 12))
    with pytest.raises(ConfigurationError, match="already has data revision 2"):
        store.publish_data(changed.to_payload())
    with pytest.raises(SearchStateError, match="no data revision 7"):
        store.payload(7)


def test_a_version_not_above_the_submitted_one_is_refused(store) -> None:
    with pytest.raises(ConfigurationError, match="later one"):
        store.publish_data(context_of(3.0).to_payload())  # revision 1, as submitted
    assert store.data_revision() is None

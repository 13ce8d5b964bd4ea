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


@pytest.mark.integration
def test_srh_refresh_data_publishes_a_table_as_the_runs_next_version(
        redis_server: str, tmp_path) -> None:
    import subprocess

    import redis

    from srh_core.agent import SearchSettings
    from srh_workers.submit import submit_run
    from tests.support.commands import SRH
    from tests.workers.support import worker_env

    client = redis.Redis.from_url(redis_server)
    x = np.linspace(1.0, 2.0, 30)
    submit_run(client, lambda action: None, SearchSettings.build(run_id="cli-refresh"),
               {"x": x}, {"y": 2 * x})
    table = tmp_path / "new.csv"
    table.write_text("x,y\n" + "\n".join(f"{a!r},{3 * a!r}" for a in x.tolist()) + "\n")
    env = worker_env(redis_server, SRH_REDIS_URL=redis_server)

    def refresh(run_id: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([SRH, "refresh-data", run_id, "--data", str(table)], env=env,
                              capture_output=True, text=True, timeout=60, check=False)

    done = refresh("cli-refresh")
    assert done.returncode == 0, done.stderr
    store = RedisRunStore(client, "cli-refresh", register=False)
    assert store.data_revision() == 2 and "revision 2" in done.stderr
    assert np.allclose(store.payload(2).arrays["y"], 3 * x)
    unknown = refresh("no-such-run")
    assert unknown.returncode == 2 and "Traceback" not in unknown.stderr
    assert "no-such-run" in unknown.stderr.strip().splitlines()[-1]

"""A "fit" time limit on the cluster counts from the run's first task, not its submission.

A benchmark's cells are submitted beside each other and wait for free workers; with a
wall clock the wait was part of the budget, so a cell queued behind others could end
with no step run ("time limit of 3s reached, no step run", seen in a sweep under load).
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from srh_core.agent import SearchSettings
from srh_workers.store import RedisRunStore
from tests.workers.cluster import Cluster

pytestmark = pytest.mark.integration

LIMIT = 4.0
QUEUED = LIMIT + 1.5


def test_a_fit_clock_does_not_count_the_time_in_the_queue(cluster: Cluster) -> None:
    rng = np.random.default_rng(1)
    x1, x2 = rng.uniform(1, 5, 300), rng.uniform(1, 5, 300)
    X, y = {"x1": x1, "x2": x2}, {"y": x1 * x2**2}
    runs = {clock: cluster.submit(SearchSettings.build(run_id=f"queued-{clock}",
                                                       time_limit=LIMIT,
                                                       time_limit_clock=clock), X, y)
            for clock in ("wall", "fit")}
    submitted = time.time()
    time.sleep(QUEUED)  # no worker yet: both wait past their time limit
    cluster.start_pair()
    wall, fit = cluster.result(runs["wall"]), cluster.result(runs["fit"])
    assert "no step run" in wall.progress and wall.best is None, wall.to_dict()
    assert fit.best is not None and fit.best.metric("r2", "validation") == pytest.approx(1.0)
    assert "no step run" not in fit.progress
    started = RedisRunStore.open(cluster.client, runs["fit"]).clock_started()
    assert started is not None and started >= submitted + QUEUED
    assert RedisRunStore.open(cluster.client, runs["wall"]).clock_started() is None

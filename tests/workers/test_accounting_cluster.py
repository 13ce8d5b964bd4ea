"""Accounting and budgets on real workers: the same response lines, totals and stop as embedded."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import tests.workers.cluster_plugins  # noqa: F401 - registers the test-metered provider
from srh_core.agent import SearchSettings, SRAgent
from srh_workers.cli.runs import _status_text
from srh_workers.store import RedisRunStore
from srh_workers.submit import run_status
from tests.support.results import without_times
from tests.workers.cluster import Cluster
from tests.workers.support import wait_until
from tests.workers.test_parity import response_lines

pytestmark = pytest.mark.integration

PRICES = {"test-metered:metered-1": {"input": 1000.0, "output": 2000.0, "cached_input": 100.0}}
VALUES = {"llm_provider": "test-metered", "tool_parser": "text", "max_refinement_depth": 5,
          "local_sample_size": 2, "early_stop": False, "prices": PRICES, "max_cost": 0.25}


def test_cost_budget_stops_a_cluster_run_like_an_embedded_one(cluster: Cluster, tmp_path: Path):
    rng = np.random.default_rng(0)
    x1, x2 = rng.uniform(1, 5, 80), rng.uniform(1, 5, 80)
    X, y = {"x1": x1, "x2": x2}, {"y": x1 + x2}
    workers = [cluster.start("branches", concurrency=2, wait=False),
               cluster.start("tools", concurrency=1, wait=False)]  # they start while we run
    embedded = SRAgent(run_id="budget-emb", save_path=str(tmp_path / "embedded"), **VALUES)
    expected = embedded.run(X, y, "find y")
    assert expected["status"] == "interrupted" and "max_cost $0.25" in expected["stop_reason"]
    assert expected["totals"]["requests"] == 3  # 0.104 per step: the 4th would start at 0.312

    for worker, queue in zip(workers, ("branches", "tools"), strict=True):
        cluster.ready(worker, queue)
    settings = SearchSettings.build(run_id="budget-step", granularity="step", **VALUES)
    cluster.submit(settings, X, y)
    result = cluster.result("budget-step").to_dict()
    assert (result["status"], result["stop_reason"]) == (expected["status"],
                                                         expected["stop_reason"])
    assert without_times(result)["totals"] == without_times(expected)["totals"]
    store = RedisRunStore.open(cluster.client, "budget-step")
    assert store.spend().cost == pytest.approx(result["totals"]["cost"])
    run_dir = cluster.directory / "runs" / "budget-step"
    wait_until(lambda: (run_dir / "result.json").exists(), 30, "the run directory")
    assert response_lines(run_dir) == response_lines(tmp_path / "embedded")
    assert json.loads((run_dir / "result.json").read_text())["totals"] == result["totals"]
    status = run_status(cluster.client, "budget-step")
    assert status["totals"] == result["totals"]
    assert "spend: 300 tokens in (120 cached), 60 out, $0.3120" in _status_text(status)

"""A custom evaluator on real workers that never had the file: sandboxed, same scores."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from srh_core.agent import SearchSettings, SRAgent
from srh_workers.store import RedisRunStore
from tests.support.evaluators import MAX_ERROR_EVALUATOR
from tests.support.openai_payloads import chat_choice, chat_completion, tool_call
from tests.support.openai_server import FakeOpenAIServer, Reply
from tests.workers.cluster import Cluster, lab_endpoint

#: Each evaluator call is a sandboxed process: give a tool task room under a loaded machine.
SLOW_TOOLS = {"SRH_TOOL_SOFT_LIMIT": "150", "SRH_TOOL_HARD_LIMIT": "160",
              "SRH_VISIBILITY_TIMEOUT": "200"}


def respond(request) -> Reply:
    calls = [tool_call("evaluate_formula", {"f": 'param("a")*x1*x2', "fit": True}, "fit")]
    return Reply.json(chat_completion([chat_choice(None, tool_calls=calls)]))


def metrics_of(candidates) -> dict[str, dict]:
    return {c.node_id.rsplit(":", 1)[1]: (c.formula, c.details["metrics"]) for c in candidates}


def test_a_custom_evaluator_scores_the_same_on_workers_as_embedded(
        cluster: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    file = tmp_path / "evaluators" / "max_error.py"
    file.parent.mkdir()
    file.write_text(MAX_ERROR_EVALUATOR)
    rng = np.random.default_rng(2)
    x1, x2 = rng.uniform(1, 5, (2, 60))
    X, y = {"x1": x1, "x2": x2}, {"y": 2.5 * x1 * x2 + rng.normal(0, 0.05, 60)}
    common = {"llm_provider": "openai", "endpoint": "lab", "tool_parser": "openai",
              "tools": ["evaluate_formula"], "global_width": 1, "max_refinement_depth": 1,
              "local_sample_size": 1, "early_stop": False, "evaluator": str(file)}

    with FakeOpenAIServer() as server:
        server.respond_with(respond)
        env = lab_endpoint(tmp_path, server.base_url)
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        embedded = SRAgent(settings=SearchSettings.build(run_id="ev-local", **common))
        assert embedded.run(X, y, "find y")["status"] == "completed"
        settings = SearchSettings.build(run_id="ev-cluster", granularity="step", **common)
        run_id = cluster.submit(settings, X, y)
        file.unlink()  # gone before any worker starts: the source travels with the run
        cluster.start_pair(**env, **SLOW_TOOLS)
        result = cluster.result(run_id, timeout=240)

    assert result.status == "completed", result.stop_reason
    remote = metrics_of(RedisRunStore(cluster.client, run_id, register=False).candidates())
    local = metrics_of(embedded.store.candidates())
    assert remote == local and remote, (remote, local)
    formula, metrics = remote["R1-C1-L1-K1"]
    assert "max_abs_error" in metrics["train"] and "max_abs_error" in metrics["validation"]

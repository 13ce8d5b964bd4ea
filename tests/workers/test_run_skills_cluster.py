"""A run's custom skills travel with it: real workers that never had the folder read them and
run their tool.py (registered from the shipped file, run sandboxed)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from srh_core.agent import SearchSettings
from srh_core.tools.custom_tools import loaded_custom_tools, unload_custom_tool
from srh_workers.store import RedisRunStore
from tests.support.openai_payloads import chat_choice, chat_completion, tool_call
from tests.support.openai_server import FakeOpenAIServer, Reply
from tests.workers.cluster import Cluster

PRODUCT_LAW = '''TOOL_NAME = "product_law"
TOOL_KIND = "formula"

def run(data, target) -> dict:
    """Propose the target as a fitted multiple of the product of the two inputs."""
    names = sorted(name for name in data if name != target)
    return {"formula": f'param("a") * {names[0]} * {names[1]}', "fit": True}
'''


def test_a_runs_skills_dir_is_read_on_workers_that_never_had_it(
        cluster: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "skills" / "pendulum-laws"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\nname: pendulum-laws\ndescription: Pendulum periods."
                                     "\n---\n# Pendulums\nT = 2*pi*sqrt(L/g)\n")
    (folder / "tool.py").write_text(PRODUCT_LAW)

    def respond(request) -> Reply:  # every step reads the shipped skill, runs its tool, fits
        calls = [tool_call("read_skill", {"name": "pendulum-laws"}, "call_skill"),
                 tool_call("product_law", {}, "call_product"),
                 tool_call("evaluate_formula", {"f": "x1*x2"}, "call_fit")]
        return Reply.json(chat_completion([chat_choice(None, tool_calls=calls)]))

    with FakeOpenAIServer() as server:
        server.respond_with(respond)
        endpoints = tmp_path / "endpoints.toml"
        endpoints.write_text(f'[endpoints.lab]\nprovider = "openai"\nbase_url = '
                             f'"{server.base_url}"\napi_key_env = "LAB_KEY"\nmodel = "m"\n',
                             encoding="utf-8")
        env = {"SRH_ENDPOINTS": str(endpoints), "LAB_KEY": "sk-operator",
               "TMPDIR": str(tmp_path / "worker-tmp")}
        (tmp_path / "worker-tmp").mkdir()
        x1, x2 = np.random.default_rng(0).uniform(1, 5, (2, 60))
        settings = SearchSettings.build(
            run_id="skilled", llm_provider="openai", endpoint="lab", tool_parser="openai",
            tools=["read_skill", "product_law", "evaluate_formula"],
            skills_dir=str(tmp_path / "skills"),
            skills=["pendulum-laws"], global_width=1, max_refinement_depth=1,
            local_sample_size=1, early_stop=False, granularity="step")
        with monkeypatch.context() as submitter:  # the submitter checks the endpoint too
            submitter.setenv("SRH_ENDPOINTS", str(endpoints))
            run_id = cluster.submit(settings, {"x1": x1, "x2": x2}, {"y": 1.5 * x1 * x2})
        for path in [p for p in loaded_custom_tools() if p.startswith(str(tmp_path))]:
            unload_custom_tool(path)  # the submitter's registration: workers make their own
        shutil.rmtree(tmp_path / "skills")  # gone before any worker starts
        workers = [cluster.start("branches", concurrency=1, wait=False, **env),
                   cluster.start("tools", concurrency=1, wait=False, **env)]
        for worker in workers:
            cluster.ready(worker)
        result = cluster.result(run_id, timeout=90)
    assert result.status == "completed", result.stop_reason
    log = RedisRunStore(cluster.client, run_id, register=False).tool_log()
    reads = [entry for entry in log if entry["call"]["name"] == "read_skill" and entry["ok"]]
    assert reads, json.dumps(log)[:2000]
    text = json.dumps(reads)
    assert "T = 2*pi*sqrt(L/g)" in text  # the shipped file, read on the worker
    assert list((tmp_path / "worker-tmp" / "srh-skills").iterdir())  # unpacked there
    products = [entry for entry in log if entry["call"]["name"] == "product_law"]
    assert products and all(entry["ok"] for entry in products), json.dumps(log)[:2000]
    assert result.best is not None and result.best.details["tool"] == "product_law"
    assert result.best.details["metrics"]["train"]["r2"] == pytest.approx(1.0)

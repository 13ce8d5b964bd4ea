"""A skill's tool.py travels with its run: real workers that never had the skills folder
register the tool from the shipped files and run it sandboxed."""

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

PRODUCT_LAW = '''TOOL_KIND = "formula"

def run(data, target) -> dict:
    """Propose the target as a fitted multiple of the product of the two inputs."""
    names = sorted(name for name in data if name != target)
    return {"formula": f'param("a") * {names[0]} * {names[1]}', "fit": True}
'''


def test_a_skills_custom_tool_runs_on_workers_that_never_had_the_folder(
        cluster: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "skills" / "product-law"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\nname: product-law\ndescription: Try a product."
                                     "\n---\nCall product_law.\n")
    (folder / "tool.py").write_text(PRODUCT_LAW)

    def respond(request) -> Reply:
        calls = [tool_call("product_law", {}, "call_product")]
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
            run_id="custom-tool", llm_provider="openai", endpoint="lab", tool_parser="openai",
            tools=["product_law", "evaluate_formula"], skills_dir=str(tmp_path / "skills"),
            global_width=1, max_refinement_depth=1, local_sample_size=1, early_stop=False,
            granularity="step")
        try:
            with monkeypatch.context() as submitter:
                submitter.setenv("SRH_ENDPOINTS", str(endpoints))
                run_id = cluster.submit(settings, {"x1": x1, "x2": x2}, {"y": 1.5 * x1 * x2})
        finally:
            for path in [p for p in loaded_custom_tools() if p.startswith(str(tmp_path))]:
                unload_custom_tool(path)
        shutil.rmtree(tmp_path / "skills")  # gone before any worker starts
        workers = [cluster.start("branches", concurrency=1, wait=False, **env),
                   cluster.start("tools", concurrency=1, wait=False, **env)]
        for worker in workers:
            cluster.ready(worker)
        result = cluster.result(run_id, timeout=90)
    assert result.status == "completed", result.stop_reason
    log = RedisRunStore(cluster.client, run_id, register=False).tool_log()
    calls = [entry for entry in log if entry["call"]["name"] == "product_law"]
    assert calls and all(entry["ok"] for entry in calls), json.dumps(log)[:2000]
    assert result.best is not None and "x1" in result.best.formula
    assert result.best.details["metrics"]["train"]["r2"] == pytest.approx(1.0)

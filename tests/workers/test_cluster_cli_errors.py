"""User errors of ``srh run --backend celery``: one ``srh: error:`` line, exit 2, no run left.

The submitter talks to a private redis-server; no worker is needed, because
every case is refused before (or while) the first task is sent.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
import redis

import srh_workers.app as app_module
from srh_core.cli import main
from srh_core.tools.custom_tools import loaded_custom_tools, unload_custom_tool
from srh_workers.store import RUNS_INDEX

PROBLEM = ["run", "--backend", "celery", "--problem", "feynman-I.6.2a", "-L", "1"]
#: The tool of the skills folder every case runs beside (``--skills-dir skills``).
PRODUCT_RULE = '''TOOL_NAME = "product_rule"
TOOL_KIND = "formula"

def run(data, target) -> dict:
    """Propose the product of the inputs."""
    return {"formula": "*".join(sorted(name for name in data if name != target))}
'''


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


CASES = {
    "amqp_without_store_url": ({"SRH_BROKER_URL": "amqp://guest:pw@127.0.0.1:1//",
                                "SRH_REDIS_URL": None}, [],
                               "The 'SRH_REDIS_URL' setting is required with a amqp broker "
                               "(SRH_BROKER_URL=amqp://guest:***@127.0.0.1:1//)"),
    "unlisted_base_url": ({}, ["--llm", "openai:m", "--base-url", "http://203.0.113.9/v1"],
                          "The base URL 'http://203.0.113.9/v1' is not one of the operator's "
                          "endpoints (none), and the run brings no key of its own"),
    "own_key_unset": ({}, ["--llm", "openai:m", "--base-url", "http://203.0.113.9/v1",
                           "--own-key"],
                      "--own-key reads the openai key from OPENAI_API_KEY, which is not set"),
    "unknown_endpoint": ({}, ["--endpoint", "lab"], "must name one of the operator's endpoints"),
    "run_id_dotdot": ({}, ["--run-id", ".."], "The 'run_id' setting must be a string matching"),
    "tool_named_otherwise_by_its_skill": ({}, ["--skills-dir", "skills", "--tools",
                                                "evaluate_formula,product_law"],
                                          "Unknown tool 'product_law'. Did you mean "
                                          "'product_rule'?"),
    "broker_down": ({"SRH_BROKER_URL": f"redis://127.0.0.1:{_closed_port()}/0"}, [],
                    "The run's first task could not be sent to the broker"),
}


@pytest.mark.integration
@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_cluster_submit_error_is_one_line_and_leaves_no_run(
        case, redis_server: str, tmp_path: Path, capsys: pytest.CaptureFixture,
        monkeypatch: pytest.MonkeyPatch) -> None:
    environ, flags, expected = case
    client = redis.Redis.from_url(redis_server)
    runs_before, keys_before = client.zcard(RUNS_INDEX), set(client.keys("srh:{*"))
    monkeypatch.chdir(tmp_path)
    skill = tmp_path / "skills" / "products"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: products\ndescription: Products.\n---\n# P\n")
    (skill / "tool.py").write_text(PRODUCT_RULE)
    monkeypatch.setattr(app_module, "_app", None)  # the app is made from this case's env
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("SRH_ENDPOINTS", raising=False)
    for name, value in {"SRH_BROKER_URL": redis_server, "SRH_REDIS_URL": redis_server,
                        **environ}.items():
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    code = main([*PROBLEM, *flags])
    for path in [p for p in loaded_custom_tools() if p.startswith(str(tmp_path))]:
        unload_custom_tool(path)  # the submitter's check registered the skills' tools
    stderr = capsys.readouterr().err
    lines = stderr.strip().splitlines()
    assert code == 2, stderr
    assert lines[-1].startswith("srh: error: ") and expected in lines[-1], stderr
    assert "Traceback" not in stderr
    assert client.zcard(RUNS_INDEX) == runs_before  # no orphan run
    assert set(client.keys("srh:{*")) == keys_before

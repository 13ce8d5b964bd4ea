"""A run whose agent a worker cannot build ends failed at once, with the error's type and
message, and the ``srh run --backend celery`` follower returns non-zero: real workers, a
private redis-server, the CLI in a subprocess.

Both cases pass the submitter's checks and fail only on the workers, as a run does when the
workers are deployed differently from the submitting machine:

- the run's agent class is importable where it was submitted, not on the workers (the
  worker cannot even build its view of the run; restart task, ``granularity = "step"``);
- the run's skill declares a tool under a name a worker's own plugin already registered
  (the worker builds the view, then the agent fails; whole-run task, ``granularity = "run"``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from srh_workers.reliability import poison_records
from srh_workers.submit import run_status
from tests.workers.cluster import Cluster
from tests.workers.conftest import RedisServer
from tests.workers.support import ROOT, WorkerProcess

#: A generous deadline for the follower: the run fails at its first task.
FOLLOW_DEADLINE_SECONDS = 90
RUN = ["run", "--backend", "celery", "--problem", "feynman-I.12.4", "-C", "1", "-L", "2",
       "-K", "1", "--samples", "100"]
#: A custom tool named like the tool tests/workers/cluster_plugins.py registers on the workers.
TAKEN_NAME_TOOL = '''TOOL_NAME = "slow_probe"
TOOL_KIND = "formula"

def run(data, target) -> dict:
    """Propose the first input."""
    return {"formula": sorted(name for name in data if name != target)[0]}
'''


def _agent_module(folder: Path) -> dict[str, str]:
    """An importable agent class for the submitter only (its PYTHONPATH)."""
    folder.mkdir()
    (folder / "lab_agents.py").write_text(
        "from srh_core.agent import SRAgent\n\n\nclass LabAgent(SRAgent):\n"
        '    """An agent only the submitting machine has."""\n', encoding="utf-8")
    return {"PYTHONPATH": os.pathsep.join([str(folder), str(ROOT)])}


def _taken_tool_skill(folder: Path) -> None:
    skill = folder / "probes"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: probes\ndescription: Probe tools.\n---\n"
                                    "# Probes\n", encoding="utf-8")
    (skill / "tool.py").write_text(TAKEN_NAME_TOOL, encoding="utf-8")


CASES = {
    "agent_class_missing_on_workers": (
        ["--granularity", "step", "--agent-class", "lab_agents:LabAgent"],
        "ConfigurationError: The agent class 'lab_agents:LabAgent' cannot be imported here"),
    "skill_tool_name_taken_on_workers": (
        ["--granularity", "run", "--skills-dir", "skills", "--tools",
         "evaluate_formula,slow_probe"],
        "ConfigurationError: probes/tool.py names its tool 'slow_probe', a built-in tool's name"),
}


class FailureCluster(Cluster):
    branches: WorkerProcess
    tools: WorkerProcess


@pytest.fixture(scope="module")
def unbuilt(module_redis: RedisServer, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[FailureCluster]:
    """A branches and a tools worker on the module's redis-server, started once for both
    cases: each submits a run of its own id and reads only what the workers logged during
    it; no case stops or changes a worker."""
    cluster = FailureCluster(module_redis.url, tmp_path_factory.mktemp("unbuilt"))
    try:
        cluster.branches, cluster.tools = cluster.start_together(
            ("branches", {"concurrency": 1}), ("tools", {"concurrency": 1}))
        yield cluster
    finally:
        cluster.close()


@pytest.mark.integration
@pytest.mark.parametrize(("flags", "expected"), CASES.values(), ids=CASES.keys())
def test_a_run_whose_agent_cannot_be_built_fails_at_once(
        unbuilt: FailureCluster, tmp_path: Path, flags: list[str], expected: str) -> None:
    cluster, run_id = unbuilt, f"unbuildable-{flags[1]}"  # its granularity: one per case
    submitter_env = {**cluster.env, **_agent_module(tmp_path / "submitter-only")}
    _taken_tool_skill(tmp_path / "skills")
    logged = [len(worker.log_text()) for worker in (cluster.branches, cluster.tools)]
    follower = subprocess.Popen(
        [sys.executable, "-m", "srh_core", *RUN, "--run-id", run_id, *flags],
        env=submitter_env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True)
    try:
        out, err = follower.communicate(timeout=FOLLOW_DEADLINE_SECONDS)
    finally:
        follower.kill()
    assert f"Submitted run {run_id}" in err, err  # the submitter's checks passed
    assert follower.returncode == 1, out + err
    status_line = out.splitlines()[0]
    assert status_line.startswith("Status: failed (") and expected in status_line, out
    report = run_status(cluster.client, run_id)
    assert report["status"] == "failed" and expected in report["stop_reason"], report
    logs = "".join(worker.log_text()[start:]  # this case's lines only
                   for worker, start in zip((cluster.branches, cluster.tools), logged,
                                            strict=True))
    assert "its agent cannot be built on this worker" in logs, logs[-3000:]
    assert "retrying" not in logs, logs[-3000:]  # deterministic: never retried
    assert poison_records(cluster.client, run_id) == []

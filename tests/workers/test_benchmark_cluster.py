"""``srh benchmark run`` with srh and gplearn, embedded and on real workers: the same rows.

A baseline is a cell like any other: the same cells (problem x seed x noise x
method), the same data and split, judged the same way, on both backends.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.workers.cluster import Cluster
from tests.workers.support import ROOT

pytestmark = pytest.mark.integration

PROBLEMS = ["feynman-I.12.1", "feynman-I.14.3"]
COMMAND = ["benchmark", "run", "--suite", "feynman", *[a for p in PROBLEMS for a in
                                                       ("--problem", p)],
           "--seeds", "1", "--methods", "srh,gplearn", "--budget", "3", "--samples", "400",
           "--json"]
KEY = ("problem", "seed", "method", "noise")


def benchmark(env: dict[str, str] | None, out: Path, *extra: str
              ) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    run = subprocess.run([sys.executable, "-m", "srh_core", *COMMAND, "--out", str(out),
                          *extra], env=env, cwd=ROOT, capture_output=True, text=True,
                         timeout=240, check=False)
    assert run.returncode == 0, (run.stdout[-2000:], run.stderr[-3000:])
    return run, json.loads(run.stdout)


def by_cell(document: dict[str, Any]) -> dict[tuple[Any, ...], dict[str, Any]]:
    return {tuple(row[k] for k in KEY): row for row in document["rows"]}


def test_srh_and_gplearn_give_the_same_rows_embedded_and_on_the_cluster(
        cluster: Cluster, tmp_path: Path) -> None:
    cluster.env.update({"SRH_SWEEP_INTERVAL": "0.2", "SRH_SWEEP_LEASE": "2"})
    _, embedded = benchmark(cluster.env, tmp_path / "embedded", "--jobs", "2")
    cluster.start_together(("branches", {"concurrency": 2}), ("tools", {"concurrency": 2}))
    _, clustered = benchmark(cluster.env, tmp_path / "cluster", "--backend", "celery")
    here, there = by_cell(embedded), by_cell(clustered)
    assert set(here) == set(there) and len(here) == 4
    assert {key[2] for key in here} == {"srh", "gplearn"}
    for key, row in here.items():
        other = there[key]
        assert row["status"] == other["status"] == "done", (row, other)
        assert row["r2_test"] is not None and other["r2_test"] is not None
        assert isinstance(row["symbolic_solution"], bool)
        if key[2] == "srh":  # offline srh finds these products exactly on both backends
            assert row["exact"] and other["exact"], (row, other)
            assert row["symbolic_solution"] and other["symbolic_solution"]
    for document in (embedded, clustered):
        methods = {entry["method"]: entry for entry in document["summary"]}
        assert methods["srh"]["cells"] == 2 and methods["srh"]["symbolic_solution_rate"] == 1
        assert methods["srh"]["symbolic_solution_rate_ci"] is not None
    summary = json.loads((tmp_path / "cluster" / "summary.json").read_text(encoding="utf-8"))
    assert summary["summary"] == clustered["summary"]

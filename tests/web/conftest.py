"""Fixtures of the workbench tests: real runs (offline model) and real sweeps, made once."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from srh_core.agent import SRAgent
from tests.support.openai_server import openai_server  # noqa: F401 - the shared fixture


@pytest.fixture(scope="session")
def runs_root(tmp_path_factory) -> Path:
    """A runs directory with one finished offline run and one small embedded sweep."""
    root = tmp_path_factory.mktemp("runs")
    rng = np.random.default_rng(1)
    x1, x2 = rng.uniform(1, 5, 150), rng.uniform(1, 5, 150)
    SRAgent(max_refinement_depth=2, local_sample_size=2, global_width=2, run_id="offline-run",
            save_path=str(root / "offline-run"), early_stop=False).run(
        {"x1": x1, "x2": x2}, {"y": x1 * x2**2}, "y from x1 and x2")
    make_sweep(root / "sweeps")
    return root


def make_sweep(out: Path) -> None:
    from srh_core.cli import main

    spec = out.parent / "sweep.toml"
    spec.write_text('[sweep]\nname = "mini"\nproblems = ["feynman-I.12.4", "feynman-I.6.2a"]\n'
                    'seeds = [0]\nsamples = 200\n\n[settings]\nmax_refinement_depth = 2\n')
    assert main(["sweep", str(spec), "--out", str(out / "mini"), "--backend", "embedded"]) == 0

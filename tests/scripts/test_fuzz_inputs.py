"""scripts/fuzz_inputs.py: awkward tables of each kind, and an untyped failure is a finding."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "fuzz_inputs.py"


@pytest.fixture(scope="module")
def fuzz():
    spec = importlib.util.spec_from_file_location("fuzz_inputs", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["fuzz_inputs"] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop("fuzz_inputs", None)


def test_each_kind_of_table_is_what_it_says(fuzz):
    rng = np.random.default_rng(0)
    X, y = fuzz.table(rng, "equal-columns", "near-1e260", 60, 3)
    assert np.array_equal(X[:, 0], X[:, 1]) and np.all(np.isfinite(y)) and y.max() > 1e200
    X, y = fuzz.table(rng, "zeros", "product", 9, 2)
    assert np.all(X[:, 0] == 0) and not np.any(y)
    X, y = fuzz.table(rng, "plain", "near-1e-300", 9, 2)
    assert 0 < np.max(np.abs(y)) < 1e-299
    X, y = fuzz.table(rng, "positive", "zero", 4, 1)
    assert np.all(X > 0) and not np.any(y)


def test_a_clean_run_finds_nothing_and_writes_json(fuzz, tmp_path, capsys):
    out = tmp_path / "fuzz.json"
    code = fuzz.main(["--cases", "3", "--budget", "0.5", "--tools",
                      "evaluate_formula,polynomial_fit", "--json", str(out)])
    assert code == 0, capsys.readouterr().out
    assert json.loads(out.read_text())["findings"] == []


def test_an_untyped_tool_failure_is_a_finding(fuzz, monkeypatch):
    from srh_core.tools.polynomial import PolynomialFitTool

    def broken(self, **params):
        raise ZeroDivisionError("float division by zero")

    monkeypatch.setattr(PolynomialFitTool, "execute", broken)
    X, y = fuzz.table(np.random.default_rng(1), "plain", "product", 60, 2)
    failure = fuzz.tool_failure("polynomial_fit", X, y, 0.5)
    assert failure is not None and failure.startswith("ZeroDivisionError")
    assert fuzz.tool_failure("evaluate_formula", X, y, 0.5) is None

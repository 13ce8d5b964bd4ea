"""numpy's floating-point errors in a tool call go to the result and the log, not the terminal.

The data overflow float64 once squared (x ~ 1e155): power_law_fit's RMSE
and the diagnostics of every scored formula (srh_core/tools/diagnostics.py)
overflow on them.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from srh_core.context import AgentContext
from srh_core.tools.base import BaseTool

CALLS = {
    "power_law_fit": {},
    "evaluate_formula": {"f": "x*x"},
    "polynomial_fit": {},
}


def _huge() -> dict[str, np.ndarray]:
    x = np.random.default_rng(0).uniform(1e150, 1e160, 30)
    return {"x": x, "y": x * 1e140}


def _call(name: str, data: dict[str, np.ndarray]) -> Any:
    return BaseTool.create(name, context=AgentContext(data=data, target="y"))(**CALLS[name])


@pytest.fixture
def record(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("srh_core.tools.base.NUMERIC_ERRORS", "record")  # the default


@pytest.mark.parametrize("name", CALLS, ids=CALLS)
def test_overflow_is_counted_and_logged_not_warned(name: str, record: None,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    with warnings.catch_warnings(record=True) as caught, caplog.at_level(logging.DEBUG,
                                                                         "srh.tools"):
        warnings.simplefilter("always")
        result = _call(name, _huge())
    assert result.ok, result.result_str
    assert [w for w in caught if issubclass(w.category, RuntimeWarning)] == []
    assert result.meta_data["numeric_warnings"]["overflow"] >= 1
    assert any(name in r.getMessage() and "overflow" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("name", CALLS, ids=CALLS)
def test_ordinary_data_has_no_numeric_warnings(name: str, record: None) -> None:
    x = np.linspace(1.0, 5.0, 30)
    result = _call(name, {"x": x, "y": 3 * x**2})
    assert result.ok and "numeric_warnings" not in result.meta_data


def test_calls_on_threads_count_their_own_errors(record: None) -> None:
    alone = _call("power_law_fit", _huge()).meta_data["numeric_warnings"]
    x = np.linspace(1.0, 5.0, 30)
    datasets = [_huge() if index % 2 == 0 else {"x": x, "y": 2 * x} for index in range(8)]
    with warnings.catch_warnings(record=True) as caught, ThreadPoolExecutor(4) as pool:
        warnings.simplefilter("always")
        results = list(pool.map(lambda data: _call("power_law_fit", data), datasets))
    assert [r.meta_data.get("numeric_warnings") for r in results] == [alone, None] * 4
    assert not caught


def test_warn_mode_leaves_the_test_suites_filters_in_charge() -> None:
    # tests/core/conftest.py sets "warn": an overflow is numpy's RuntimeWarning, which
    # the suite's filterwarnings (or this filter) turns into an error the boundary reports.
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        result = _call("power_law_fit", _huge())
    assert not result.ok and result.meta_data["error_type"] == "RuntimeWarning"


def test_srh_run_prints_no_numeric_warning_and_logs_them(tmp_path: Path) -> None:
    data = _huge()
    rows = [f"{x!r},{y!r}" for x, y in zip(data["x"].tolist(), data["y"].tolist(), strict=True)]
    (tmp_path / "huge.csv").write_text("x,y\n" + "\n".join(rows) + "\n", encoding="utf-8")
    srh = Path(sys.executable).with_name("srh")
    completed = subprocess.run(
        [str(srh), "run", "--data", "huge.csv", "--target", "y", "-L", "1", "--json",
         "--out", "run"], cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONWARNINGS": "default"})
    assert completed.returncode == 0, completed.stderr
    assert "RuntimeWarning" not in completed.stderr, completed.stderr
    json.loads(completed.stdout)  # --json stdout is exactly the result
    calls = [json.loads(line) for line in (tmp_path / "run" / "tool_calls.jsonl").open()]
    counted = [call for call in calls if "numeric_warnings" in json.dumps(call)]
    assert counted, "the numeric errors were not recorded in the tool-call log"

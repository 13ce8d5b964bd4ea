"""srh_core tests: numpy's floating-point errors in tool calls stay warnings here."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def numeric_errors_warn(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tool calls leave numpy's RuntimeWarnings alone (``NUMERIC_ERRORS = "warn"``).

    A command records them in the tool result instead (the default, "record"),
    so they never reach the user's terminal; in the tests the suite's
    ``filterwarnings`` turns them into errors, so an overflow in our own tool
    code on ordinary data still fails a test. tests/core/tools/test_numeric_errors.py
    checks the default.
    """
    monkeypatch.setattr("srh_core.tools.base.NUMERIC_ERRORS", "warn")

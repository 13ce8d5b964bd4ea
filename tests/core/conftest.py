"""srh_core tests: numpy's errors in tool calls stay warnings here; an endless FIFO."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path

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


@pytest.fixture
def endless_fifo(tmp_path: Path) -> Iterator[Path]:
    """A FIFO a thread writes to until its reader closes it."""
    path = tmp_path / "endless"
    os.mkfifo(path)

    def write() -> None:
        with path.open("wb") as stream:
            try:
                while True:
                    stream.write(b"1,2\n" * 16384)
            except BrokenPipeError:
                pass

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    yield path
    writer.join(timeout=10)
    assert not writer.is_alive()

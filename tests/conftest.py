"""Suite-wide settings."""

from __future__ import annotations

import os

import pytest


def pytest_configure(config: pytest.Config) -> None:
    # The offline proposer's expression_search step (10 s per unsolved branch without a time
    # limit) is tested in tests/core/api/test_offline_search.py; everywhere else it would add
    # seconds to every run the closed forms do not solve. Worker processes inherit this.
    os.environ.setdefault("SRH_OFFLINE_SEARCH_SECONDS", "0")

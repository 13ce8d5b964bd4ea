"""Fixtures shared by the sandbox tests."""

from __future__ import annotations

import pytest

from srh_core.sandbox import SandboxRunner
from srh_core.sandbox.launcher import detect_launcher


@pytest.fixture(scope="session")
def runner() -> SandboxRunner:
    detect_launcher()  # probe once, before any test patches the environment
    return SandboxRunner()


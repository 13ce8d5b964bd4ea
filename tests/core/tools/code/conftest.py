"""Fixtures of the code-tool tests (they run real sandboxed processes; Linux only)."""

from __future__ import annotations

import sys

import pytest

from srh_core.context import AgentContext
from tests.core.tools.code.helpers import make_context

if not sys.platform.startswith("linux"):
    pytest.skip("the code sandbox runs on Linux only", allow_module_level=True)


@pytest.fixture
def context() -> AgentContext:
    return make_context()

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from srh_core.tools.custom_tools import loaded_custom_tools, unload_custom_tool
from tests.support.openai_server import openai_server  # noqa: F401 - the shared fixture


@pytest.fixture
def skills(tmp_path: Path) -> Iterator[Path]:
    """An empty custom skills folder; the custom tools loaded from it are dropped afterwards."""
    root = tmp_path / "skills"
    root.mkdir()
    yield root
    for path in [p for p in loaded_custom_tools() if p.startswith(str(tmp_path))]:
        unload_custom_tool(path)

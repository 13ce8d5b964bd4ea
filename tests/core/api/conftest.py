"""Fixtures of the adapter tests: the scripted OpenAI-compatible server."""

from __future__ import annotations

from tests.support.openai_server import openai_server  # noqa: F401 - fixture re-export

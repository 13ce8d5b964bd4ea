"""The agent context and its data: arrays, manifests, CSV files, payloads."""

from __future__ import annotations

from srh_core.context.context import AgentContext, context_from_payload
from srh_core.context.manifest import (
    inspect_context_data,
    load_context_data,
    update_context_data_descriptions,
)
from srh_core.context.payload import ContextMetadata, ContextPayload
from srh_core.context.settings import ContextSettings, resolve_context_settings
from srh_core.context.tabular import load_tabular
from srh_core.context.validation import DataIssue, DataLayout

__all__ = [
    "AgentContext",
    "ContextMetadata",
    "ContextPayload",
    "ContextSettings",
    "DataIssue",
    "DataLayout",
    "context_from_payload",
    "inspect_context_data",
    "load_context_data",
    "load_tabular",
    "resolve_context_settings",
    "update_context_data_descriptions",
]

"""Tool metadata shaped like the harness's tools, for parser and adapter tests."""

from __future__ import annotations

from srh_core.types import ToolMetadata

EVALUATE = ToolMetadata(
    "evaluate",
    "Fit the constants of a formula and report its metrics.",
    {
        "type": "object",
        "properties": {
            "formula": {"type": "string", "description": "Formula in x0, x1, ... and c0, c1."},
            "max_iter": {"type": "integer", "description": "Optimiser steps.", "default": 100},
        },
        "required": ["formula"],
    },
)
STATISTICS = ToolMetadata(
    "statistics",
    "Summary statistics of the data.",
    {
        "type": "object",
        "properties": {
            "variables": {"type": "array", "items": {"type": "string"}},
            "robust": {"type": "boolean"},
        },
    },
)
SUBMIT = ToolMetadata("submit", "Submit the final formula.", {
    "type": "object",
    "properties": {"formula": {"type": "string"}},
    "required": ["formula"],
})
SAMPLE_TOOLS = (EVALUATE, STATISTICS, SUBMIT)
SAMPLE_TOOL_NAMES = frozenset(tool.name for tool in SAMPLE_TOOLS)


class ToolWithMetadata:
    """Stands in for a BaseTool subclass: only the ``metadata`` attribute matters."""

    metadata = EVALUATE

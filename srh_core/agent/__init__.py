"""The R-C-L-K search agent: SRAgent's step functions and the rules both runtimes share.

Names are imported on first use, so a module below the agent (a store, the
run directory) may import ``srh_core.agent.settings`` or ``.outcome``
without loading SRAgent and the embedded runtime it starts.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "BranchState": "srh_core.agent.branch",
    "RunOutcome": "srh_core.agent.outcome",
    "run_outcome": "srh_core.agent.outcome",
    "step_gate": "srh_core.agent.outcome",
    "SearchSettings": "srh_core.agent.settings",
    "SRAgent": "srh_core.agent.sragent",
    "agent_class_path": "srh_core.agent.sragent",
    "load_agent_class": "srh_core.agent.sragent",
    "recorded_agent_class": "srh_core.agent.sragent",
    "opened_step": "srh_core.agent.steps",
    "sample_results": "srh_core.agent.steps",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'srh_core.agent' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)

"""Watch and steer a live search: the reference's ``sr_harness.runtime``.

- :class:`InteractionManager` / :class:`SRInteractionManager`: the controls
  of one run (message, pause, force_pause, resume; next_c, next_r), its
  state machine and its bounded event timeline;
- :class:`ControlChannel`: how commands reach a run and events leave it,
  whoever the controller is (same process, another process through the run
  directory, or the cluster through Redis, implemented in srh_workers);
- :class:`ControlBridge`: pumps a channel into a manager inside the run;
- :class:`AgentControls`: the controls as the agent's hooks see them, kept in
  this process (:class:`LocalControls`) or in the cluster's Redis, and
  :func:`take_boundary`, the one rule of a step boundary;
- :class:`SRAgentInteractive`: the SRAgent whose step hooks honour the
  controls.
"""

from __future__ import annotations

from typing import Any

from srh_core.interactive.channel import (
    ControlChannel,
    ControlCommand,
    InProcessChannel,
)
from srh_core.interactive.controls import (
    AgentControls,
    BoundaryDecision,
    ControlLedger,
    LocalControls,
    take_boundary,
)
from srh_core.interactive.errors import (
    ControlChannelError,
    InteractionError,
    InteractionSnapshotError,
    InteractionStateError,
    InvalidCommandError,
)
from srh_core.interactive.events import EVENT_KINDS, EventTimeline, InteractionEventKind
from srh_core.interactive.manager import (
    InteractionAction,
    InteractionManager,
    InteractionState,
    PendingMessage,
    SearchTransition,
    SRInteractionAction,
)
from srh_core.interactive.sr_manager import SRInteractionManager

_LAZY = {
    "ControlBridge": "srh_core.interactive.bridge",
    "RunDirectoryChannel": "srh_core.interactive.run_dir_channel",
    "SRAgentInteractive": "srh_core.interactive.agent",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'srh_core.interactive' has no attribute {name!r}")


__all__ = [
    "EVENT_KINDS", "AgentControls", "BoundaryDecision", "ControlBridge", "ControlChannel",
    "ControlChannelError", "ControlCommand", "ControlLedger", "EventTimeline",
    "InProcessChannel", "InteractionAction", "InteractionError", "InteractionEventKind",
    "InteractionManager", "InteractionSnapshotError", "InteractionState",
    "InteractionStateError", "InvalidCommandError", "LocalControls", "PendingMessage",
    "RunDirectoryChannel", "SRAgentInteractive", "SRInteractionAction", "SRInteractionManager",
    "SearchTransition", "take_boundary",
]

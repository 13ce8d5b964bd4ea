"""The ``srh run --interactive`` flags: a run that ``srh web`` (or any controller) can steer."""

from __future__ import annotations

import argparse
from typing import Any


def add_interactive_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--interactive`` and its pause options to ``srh run`` / ``srh resume``."""
    group = parser.add_argument_group("interactive control (see srh web)")
    group.add_argument("--interactive", action="store_true", help=(
        "accept pause, resume, force-pause, message, next-branch and next-restart commands "
        "through the run directory (commands.jsonl) and log events (events.jsonl)"))
    group.add_argument("--no-pause-on-tool-free", dest="pause_on_tool_free",
                       action="store_false", help=(
                           "with --interactive: go on after a reply that calls no tool "
                           "(default: pause there and wait for the researcher)"))
    group.add_argument("--pause-on-truncated", action=argparse.BooleanOptionalAction,
                       default=True, help=(
                           "with --interactive: pause after a reply cut by the length limit "
                           "(default, as in the reference; --no-pause-on-truncated goes on)"))


def interactive_options(args: argparse.Namespace) -> dict[str, Any]:
    """Constructor arguments of :class:`~srh_core.interactive.SRAgentInteractive` from the flags."""
    return {"pause_on_tool_free": getattr(args, "pause_on_tool_free", True),
            "pause_on_truncated": getattr(args, "pause_on_truncated", True)}

"""Errors of the interactive controls: a refused command, a misused manager, a bad channel record.

They derive from :class:`srh_core.errors.SRHarnessError` (so ``srh`` reports
them as usage errors) and from the builtin the reference raises in the same
place (``ValueError`` for a bad command, ``RuntimeError`` for a call in the
wrong state), so code written against the reference keeps catching them.
"""

from __future__ import annotations

from srh_core.errors import SRHarnessError


class InteractionError(SRHarnessError):
    """Base class of the interactive controls' errors."""


class InvalidCommandError(InteractionError, ValueError):
    """A command names an unknown action, or a message command has no text."""

    def __init__(self, message: str, *, action: object = None) -> None:
        super().__init__(message)
        self.action = action


class InteractionStateError(InteractionError, RuntimeError):
    """An action or lifecycle call is not allowed in the manager's current state."""

    def __init__(self, message: str, *, action: str, state: str) -> None:
        super().__init__(message)
        self.action = action
        self.state = state


class InteractionSnapshotError(InteractionError, ValueError):
    """A persisted interaction snapshot does not match the current schema."""


class ControlChannelError(InteractionError):
    """A control channel record (command or event) is malformed or cannot be written."""

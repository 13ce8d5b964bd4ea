"""The control-channel seam: how commands reach a run and its events come back.

The :class:`~srh_core.interactive.InteractionManager` always lives in the
process that runs the steps. A controller (the web workbench, a CLI, a test)
talks to a :class:`ControlChannel`; where the run lives decides which one:

- same process: :class:`InProcessChannel`, straight onto the manager;
- another process on the machine: :class:`~srh_core.interactive.RunDirectoryChannel`,
  files in the run directory (``commands.jsonl`` appended by controllers,
  ``events.jsonl`` appended by the run, ``interaction.json`` its state);
- the cluster: a Redis implementation in ``srh_workers`` (commands and
  events as streams with a cap); srh_core never imports redis.

Inside the run, a :class:`~srh_core.interactive.ControlBridge` moves commands
from the channel into the manager and the manager's events out to it. The
run-side methods (``receive``, ``publish``, ``save_state``, ``load_state``)
are what a runtime calls; the controller-side ones (``send``,
``read_events``, ``read_status``) are what a workbench calls.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, get_args, runtime_checkable

from srh_core.errors import did_you_mean
from srh_core.interactive.errors import InvalidCommandError
from srh_core.interactive.manager import (
    MAX_MESSAGE_CHARS,
    InteractionManager,
    SRInteractionAction,
)
from srh_core.interactive.sr_manager import checked_settings

COMMAND_ACTIONS: tuple[str, ...] = get_args(SRInteractionAction)


@dataclass(frozen=True, slots=True)
class ControlCommand:
    """One researcher command on its way to a run.

    Attributes:
        action: One of :data:`COMMAND_ACTIONS`.
        message: The text of a "message" command (None otherwise).
        settings: The ``{name: value}`` of a "settings" command (None otherwise).
        id: Unique id; the run echoes it in its ``command_received`` event.
        sent_at: Unix time the controller sent it.

    Raises:
        InvalidCommandError: Unknown action, or a message that is empty,
            too long, or given to another action (settings likewise).
    """

    action: str
    message: str | None = None
    settings: Mapping[str, Any] | None = None
    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    sent_at: float = field(default_factory=time.time)

    def __post_init__(self) -> None:
        if self.action not in COMMAND_ACTIONS:
            raise InvalidCommandError(
                f"Unknown control action {self.action!r}; expected one of "
                f"{', '.join(COMMAND_ACTIONS)}.{did_you_mean(str(self.action), COMMAND_ACTIONS)}",
                action=self.action)
        if self.action == "message":
            text = self.message.strip() if isinstance(self.message, str) else ""
            if not text or len(text) > MAX_MESSAGE_CHARS:
                raise InvalidCommandError(
                    f"A message command needs text of 1 to {MAX_MESSAGE_CHARS} characters. "
                    f"Got {self.message!r:.80} instead.", action="message")
        elif self.message is not None:
            raise InvalidCommandError(f"Only a message command carries text; {self.action!r} "
                                      f"got {self.message!r:.80}.", action=self.action)
        if self.action == "settings":
            object.__setattr__(self, "settings", checked_settings(self.settings))
        elif self.settings is not None:
            raise InvalidCommandError(f"Only a settings command carries settings; "
                                      f"{self.action!r} got {self.settings!r:.80}.",
                                      action=self.action)
        if not isinstance(self.id, str) or not 1 <= len(self.id) <= 64:
            raise InvalidCommandError(f"A command id must be 1 to 64 characters. Got "
                                      f"{self.id!r:.80} instead.", action=self.action)

    def to_dict(self) -> dict[str, Any]:
        record = {"id": self.id, "action": self.action, "message": self.message,
                  "sent_at": self.sent_at}
        if self.settings is not None:
            record["settings"] = dict(self.settings)
        return record

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ControlCommand:
        """Rebuild a command from :meth:`to_dict` (every field checked)."""
        if not isinstance(data, Mapping) or not isinstance(data.get("action"), str):
            raise InvalidCommandError(f"A command must be an object with an 'action' string. "
                                      f"Got {data!r:.120} instead.")
        sent_at = data.get("sent_at", time.time())
        if isinstance(sent_at, bool) or not isinstance(sent_at, (int, float)):
            raise InvalidCommandError(f"A command's sent_at must be a number. Got {sent_at!r}.",
                                      action=data["action"])
        return cls(action=data["action"], message=data.get("message"),
                   settings=data.get("settings"), id=data.get("id") or uuid.uuid4().hex,
                   sent_at=float(sent_at))


def command_fields(command: ControlCommand) -> dict[str, Any]:
    """The keyword arguments of ``manager.command`` a command adds to its action and text."""
    return {} if command.settings is None else {"settings": command.settings}


@runtime_checkable
class ControlChannel(Protocol):
    """One run's two-way control pipe (see the module docstring for who calls what)."""

    # ------------------------------------------------------ controller side
    def send(self, command: ControlCommand) -> None:
        """Deliver ``command`` to the run (applied at once or at its next poll)."""
        ...

    def read_events(self, after_sequence: int = 0) -> dict[str, Any]:
        """Events after a cursor, shaped like ``InteractionManager.get_recent_events``."""
        ...

    def read_status(self) -> dict[str, Any] | None:
        """The run's latest ``status()`` snapshot; None when it never published one."""
        ...

    # ------------------------------------------------------------ run side
    def receive(self, cursor: str | None, timeout: float) -> tuple[list[ControlCommand],
                                                                   str | None]:
        """Commands after ``cursor`` (None: from the start), waiting up to ``timeout``.

        Returns:
            The commands, oldest first, and the cursor to pass next time.
        """
        ...

    def publish(self, events: Sequence[Mapping[str, Any]]) -> None:
        """Append timeline events (in order) for controllers to read."""
        ...

    def save_state(self, state: Mapping[str, Any]) -> None:
        """Persist the run's control state: status, manager snapshot, command cursor."""
        ...

    def load_state(self) -> dict[str, Any] | None:
        """The state last saved (None when there is none), to continue after a restart."""
        ...

    def last_sequence(self) -> int:
        """The highest event ``seq`` published so far (a restarted run continues after it)."""
        ...


class InProcessChannel:
    """A controller in the run's own process: commands go straight to the manager.

    The run side is empty: there is nothing to pump, since the manager is
    shared, so no :class:`~srh_core.interactive.ControlBridge` is needed.
    """

    def __init__(self, manager: InteractionManager) -> None:
        self.manager = manager

    def send(self, command: ControlCommand) -> None:
        self.manager.command(command.action, command.message, command_id=command.id,
                             **command_fields(command))

    def read_events(self, after_sequence: int = 0) -> dict[str, Any]:
        return self.manager.get_recent_events(after_sequence)

    def read_status(self) -> dict[str, Any] | None:
        return self.manager.status()

    def receive(self, cursor: str | None, timeout: float) -> tuple[list[ControlCommand],
                                                                   str | None]:
        time.sleep(max(0.0, timeout))  # nothing ever arrives here: commands skip the channel
        return [], cursor

    def publish(self, events: Sequence[Mapping[str, Any]]) -> None:
        return None

    def save_state(self, state: Mapping[str, Any]) -> None:
        return None

    def load_state(self) -> dict[str, Any] | None:
        return None

    def last_sequence(self) -> int:
        return int(self.manager.status()["last_event_seq"])

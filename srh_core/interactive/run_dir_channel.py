"""The control channel of a run directory: a controller in another process on this machine.

Files, beside the run's own (see :mod:`srh_core.agent.run_dir`)::

    commands.jsonl     appended by controllers (one ControlCommand per line,
                       under an exclusive flock so lines never interleave)
    events.jsonl       appended by the run (one timeline event per line)
    interaction.json   the run's control state, written atomically: its
                       status, the manager snapshot and the command cursor

The run reads ``commands.jsonl`` from a byte offset (the cursor), so a
resumed run continues after the last command it applied instead of
replaying old ones. Readers of ``events.jsonl`` keep the newest events in
memory and read only what was appended since their last call.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import time
from collections import deque
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from srh_core.interactive.channel import ControlCommand
from srh_core.interactive.errors import ControlChannelError, InteractionError
from srh_core.jsonio import atomic_write_json, dumps
from srh_engine.processes import pid_running

logger = logging.getLogger("srh.runtime")

COMMANDS_FILE = "commands.jsonl"
EVENTS_FILE = "events.jsonl"
STATE_FILE = "interaction.json"
READ_CAPACITY = 5000
_POLL_SECONDS = 0.05



def run_is_live(state: Mapping[str, Any] | None) -> bool:
    """Whether ``interaction.json``'s ``state`` is a running interactive run's: its status
    is active and the process that saved it (its ``pid``) is alive on this machine."""
    state = state or {}
    return bool((state.get("status") or {}).get("active")) and _process_alive(state.get("pid"))


def _process_alive(pid: Any) -> bool:
    if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0:
        return False
    return pid_running(pid)  # a zombie is not alive: its run is over


class RunDirectoryChannel:
    """Commands, events and control state of one run, as files of its run directory.

    Args:
        path: The run directory.
        capacity: Events a reader keeps in memory (older ones count as truncated).
    """

    def __init__(self, path: str | Path, *, capacity: int = READ_CAPACITY) -> None:
        self.path = Path(path)
        self._events: deque[dict[str, Any]] = deque(maxlen=capacity)
        self._events_offset = 0
        self._events_identity: tuple[int, int] | None = None
        self._discarded_through = 0

    @property
    def commands_path(self) -> Path:
        return self.path / COMMANDS_FILE

    @property
    def events_path(self) -> Path:
        return self.path / EVENTS_FILE

    @property
    def state_path(self) -> Path:
        return self.path / STATE_FILE

    # ------------------------------------------------------ controller side
    def send(self, command: ControlCommand) -> None:
        """Append ``command`` to ``commands.jsonl``.

        Raises:
            ControlChannelError: The run directory does not exist or cannot be written.
        """
        if not self.path.is_dir():
            raise ControlChannelError(f"{self.path} is not a run directory; cannot send "
                                      f"{command.action!r} to it.")
        line = (dumps(command.to_dict()) + "\n").encode("utf-8")
        try:
            with self.commands_path.open("ab") as stream:
                fcntl.flock(stream.fileno(), fcntl.LOCK_EX)
                try:
                    stream.write(line)
                    stream.flush()
                finally:
                    fcntl.flock(stream.fileno(), fcntl.LOCK_UN)
        except OSError as error:
            raise ControlChannelError(f"Cannot append to {self.commands_path}: {error}") \
                from error

    def read_events(self, after_sequence: int = 0) -> dict[str, Any]:
        """Events of ``events.jsonl`` newer than ``after_sequence`` (cursor semantics of
        :class:`~srh_core.interactive.EventTimeline`)."""
        self._refresh_events()
        last = self._events[-1]["seq"] if self._events else self._discarded_through
        cursor_reset = after_sequence > last
        cursor = 0 if cursor_reset else after_sequence
        return {"events": [dict(e) for e in self._events if e["seq"] > cursor],
                "truncated": cursor < self._discarded_through,
                "discarded_through": self._discarded_through, "cursor_reset": cursor_reset,
                "last_seq": last, "server_time": time.time()}

    def read_status(self) -> dict[str, Any] | None:
        state = self.load_state()
        return None if state is None else state.get("status")

    # ------------------------------------------------------------ run side
    def receive(self, cursor: str | None, timeout: float) -> tuple[list[ControlCommand],
                                                                   str | None]:
        """Complete command lines after the byte offset ``cursor``, polling up to ``timeout``."""
        offset = int(cursor or 0)
        deadline = time.monotonic() + max(0.0, timeout)
        while True:
            size = self.commands_path.stat().st_size if self.commands_path.exists() else 0
            if size < offset:
                logger.warning("%s shrank below the applied offset; reading it again",
                               self.commands_path)
                offset = 0
            if size > offset or time.monotonic() >= deadline:
                break
            time.sleep(_POLL_SECONDS)
        if size <= offset:
            return [], str(offset)
        with self.commands_path.open("rb") as stream:
            stream.seek(offset)
            data = stream.read(size - offset)
        complete = data[:data.rfind(b"\n") + 1]
        return _parse_commands(complete, self.commands_path), str(offset + len(complete))

    def publish(self, events: Sequence[Mapping[str, Any]]) -> None:
        if not events:
            return
        text = "".join(dumps(event) + "\n" for event in events)
        with self.events_path.open("a", encoding="utf-8") as stream:
            stream.write(text)

    def save_state(self, state: Mapping[str, Any]) -> None:
        atomic_write_json(self.state_path, {**state, "updated_at": time.time(),
                                            "pid": os.getpid()})

    def load_state(self) -> dict[str, Any] | None:
        try:
            return dict(json.loads(self.state_path.read_text(encoding="utf-8")))
        except FileNotFoundError:
            return None
        except (ValueError, OSError) as error:
            logger.warning("%s is unreadable (%s); ignoring it", self.state_path, error)
            return None

    def last_sequence(self) -> int:
        """The highest ``seq`` in ``events.jsonl`` (0 when there is none)."""
        self._refresh_events()
        return self._events[-1]["seq"] if self._events else self._discarded_through

    # ------------------------------------------------------------ reading
    def _refresh_events(self) -> None:
        try:
            info = self.events_path.stat()
        except FileNotFoundError:
            return
        identity = (info.st_dev, info.st_ino)
        if identity != self._events_identity or info.st_size < self._events_offset:
            self._events.clear()
            self._events_offset, self._discarded_through = 0, 0
            self._events_identity = identity
        if info.st_size == self._events_offset:
            return
        with self.events_path.open("rb") as stream:
            stream.seek(self._events_offset)
            data = stream.read(info.st_size - self._events_offset)
        complete = data[:data.rfind(b"\n") + 1]
        self._events_offset += len(complete)
        for line in complete.splitlines():
            self._keep_event(line)

    def _keep_event(self, line: bytes) -> None:
        try:
            event = json.loads(line)
        except ValueError:
            logger.warning("Skipping a malformed line of %s", self.events_path)
            return
        if not isinstance(event, dict) or not isinstance(event.get("seq"), int):
            return
        if self._events and event["seq"] <= self._events[-1]["seq"]:
            return  # a resumed run never rewinds, but a reader must not go backwards
        if len(self._events) == self._events.maxlen:
            self._discarded_through = self._events[0]["seq"]
        self._events.append(event)


def _parse_commands(data: bytes, path: Path) -> list[ControlCommand]:
    commands = []
    for number, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        try:
            commands.append(ControlCommand.from_dict(json.loads(line)))
        except (ValueError, InteractionError) as error:
            logger.warning("Skipping command line %d of %s: %s", number, path, error)
    return commands

"""``srh pause|resume|message|next-branch|next-restart|settings TARGET``: steer an interactive run.

(``srh settings TARGET NAME=VALUE ...`` queues runtime settings, e.g.
``llm_max_tokens=2048 llm_temperature=0.5``; each VALUE is read as JSON when it
is JSON, else as text. The run applies them at its next step boundary and says
so with a ``settings_applied`` or ``settings_failed`` event.)

(``srh resume`` is also the command that continues a stopped run directory:
given a live interactive run, it resumes it from a pause instead; see
:func:`live_target`.)

TARGET is either an interactive run directory (``srh run --interactive``):
the command is appended to its ``commands.jsonl``, the run's process applies
it at once, and the command waits (a few seconds) for the run's echo to
report whether it was accepted; or, with the workers package installed, the
id of a cluster run (``srh run --backend celery --interactive``): the command
is applied in Redis at once. Either way it prints the run's control state
(``--json``: the whole status). A refused command exits with status 2 and
says why.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from srh_core.errors import ConfigurationError
from srh_core.interactive import ControlChannelError, ControlCommand, InteractionStateError
from srh_core.interactive.run_dir_channel import run_is_live

ECHO_SECONDS = 5.0
_POLL_SECONDS = 0.05
ACTIONS = {"pause": "pause", "resume": "resume", "message": "message",
           "next-branch": "next_c", "next-restart": "next_r", "settings": "settings"}
HELP = {
    "pause": "pause an interactive run at its next step boundary",
    "message": "send the model a message (inserted before its next request)",
    "next-branch": "end the current branch and move on to the next",
    "next-restart": "end the current restart and start the next",
    "settings": "queue runtime settings (NAME=VALUE ...) for the next step boundary",
}


class ControlTarget(Protocol):
    """A run a command can be applied to, as the CLI sees it."""

    def apply(self, command: ControlCommand) -> dict[str, Any]:
        """Apply ``command``; the run's control status after it."""
        ...


#: Resolvers of targets that are not run directories (``srh_workers`` adds cluster run ids):
#: each returns a :class:`ControlTarget`, or None when the target is not one of its runs.
CONTROL_TARGETS: list[Callable[[str], ControlTarget | None]] = []


def register_control_commands(subparsers: Any) -> None:
    """Add the control commands to ``srh`` (``resume`` is shared with the run directory's)."""
    for name, help_text in HELP.items():
        parser = subparsers.add_parser(name, help=help_text, description=(
            f"{help_text[0].upper()}{help_text[1:]}. TARGET is a run directory of "
            "`srh run --interactive` or the id of a cluster run of `srh run --backend celery "
            "--interactive`."))
        parser.add_argument("target", metavar="TARGET", help="run directory or cluster run id")
        if name == "message":
            parser.add_argument("text", help="the message")
        if name == "settings":
            parser.add_argument("assignments", nargs="+", metavar="NAME=VALUE", help=(
                "a setting and its new value (JSON, else text), e.g. llm_max_tokens=2048"))
        if name == "pause":
            parser.add_argument("--force", action="store_true", help=(
                "force-pause: cut the model request and the tool calls in flight"))
        parser.add_argument("--json", action="store_true", help="print the status JSON")
        parser.set_defaults(handler=handle_control)


def handle_control(args: argparse.Namespace) -> int:
    action = ACTIONS[args.command]
    if action == "pause" and getattr(args, "force", False):
        action = "force_pause"
    settings = parse_assignments(args.assignments) if action == "settings" else None
    command = ControlCommand(action, getattr(args, "text", None), settings)
    return apply_and_report(resolve_target(args.target), command, args.target, args.json)


def parse_assignments(assignments: list[str]) -> dict[str, Any]:
    """``NAME=VALUE`` words as settings; a VALUE is JSON when it parses, else text.

    Raises:
        ConfigurationError: A word without ``=`` or without a name.
    """
    settings: dict[str, Any] = {}
    for word in assignments:
        name, equals, text = word.partition("=")
        if not equals or not name.strip():
            raise ConfigurationError(f"A setting is NAME=VALUE (e.g. llm_max_tokens=2048). Got "
                                     f"{word!r} instead.", setting="settings")
        try:
            settings[name.strip()] = json.loads(text)
        except ValueError:
            settings[name.strip()] = text
    return settings


def apply_and_report(target: ControlTarget, command: ControlCommand, name: str,
                     as_json: bool) -> int:
    status = target.apply(command)
    if as_json:
        print(json.dumps(status, default=str))
    else:
        print(status_line(name, command.action, status))
    return 0


def live_target(target: str) -> ControlTarget | None:
    """What ``srh resume TARGET`` resumes from a pause: a live interactive run, else None.

    A run directory whose interactive process is running, or a cluster run id;
    None for a run directory whose process ended (``srh resume`` continues it).
    """
    path = Path(target)
    if path.is_dir():
        found = DirectoryTarget(path)
        return found if found.live() else None
    for resolve in CONTROL_TARGETS:
        try:
            cluster = resolve(target)
        except ConfigurationError:  # no cluster to ask: treat it as the run directory it names
            continue
        if cluster is not None:
            return cluster
    return None


def resolve_target(target: str) -> ControlTarget:
    """The run ``target`` names: an interactive run directory, else a plugin's run.

    Raises:
        ConfigurationError: Nothing knows the target.
    """
    path = Path(target)
    if path.is_dir():
        return DirectoryTarget(path)
    problems = []
    for resolve in CONTROL_TARGETS:
        try:
            found = resolve(target)
        except ConfigurationError as error:
            problems.append(str(error))
            continue
        if found is not None:
            return found
    where = f" ({'; '.join(problems)})" if problems else (
        "" if CONTROL_TARGETS else " (cluster run ids need the workers package)")
    raise ConfigurationError(f"{target!r} is neither a run directory nor the id of a cluster "
                             f"run{where}.", setting="target")


def status_line(target: str, action: str, status: dict[str, Any]) -> str:
    state = status.get("interaction_state") or "unknown"
    parts = [f"{action.replace('_', '-')} applied; run {target} is {state}"]
    if status.get("waiting_branches"):
        parts.append(f"{status['waiting_branches']} branch step(s) held")
    if status.get("pending_messages"):
        parts.append(f"{status['pending_messages']} message(s) queued")
    if status.get("pending_settings"):
        parts.append(f"{status['pending_settings']} settings change(s) queued")
    return ", ".join(parts)


class DirectoryTarget:
    """An interactive run directory: commands through its files, echoed by its process.

    Args:
        path: The run directory.
        echo_seconds: How long to wait for the run to confirm a command.
    """

    def __init__(self, path: Path, echo_seconds: float = ECHO_SECONDS) -> None:
        from srh_core.interactive import RunDirectoryChannel

        self.channel = RunDirectoryChannel(path)
        self.echo_seconds = echo_seconds

    def apply(self, command: ControlCommand) -> dict[str, Any]:
        """Send ``command``; wait for the run's ``command_received`` echo; its status.

        Raises:
            ControlChannelError: Not an interactive run directory, or its process
                is not running.
            InteractionStateError: The run refused the command.
        """
        state = self.channel.load_state()
        if state is None:
            raise ControlChannelError(f"{self.channel.path} is not the directory of an "
                                      "interactive run (start it with srh run --interactive).")
        status = state.get("status") or {}
        if not self.live():
            raise ControlChannelError(f"The run in {self.channel.path} is not running; resume "
                                      "it with `srh resume --interactive` first.")
        cursor = self.channel.last_sequence()
        self.channel.send(command)
        deadline = time.monotonic() + self.echo_seconds
        echo = self._echo(command, cursor, deadline)
        if echo is not None and not echo["payload"].get("accepted", True):
            raise InteractionStateError(str(echo["payload"].get("error") or "refused"),
                                        action=command.action,
                                        state=str(status.get("interaction_state")))
        if echo is None:
            print(f"srh: the run has not confirmed {command.action!r} within "
                  f"{self.echo_seconds:g}s; it is applied when the run reads it.",
                  file=sys.stderr)
            return self.channel.read_status() or {}
        return self._status_after(int(echo["seq"]), deadline)

    def live(self) -> bool:
        """True while the run's interactive process is running."""
        return run_is_live(self.channel.load_state())

    def _status_after(self, sequence: int, deadline: float) -> dict[str, Any]:
        """The run's status once it was saved after event ``sequence`` (the run appends an
        event, then saves its state: read at once, the status could predate the command,
        ``srh settings`` then printed no queued change)."""
        while True:
            state = self.channel.load_state() or {}
            saved = (state.get("manager") or {}).get("next_sequence") or 0
            if saved > sequence or time.monotonic() >= deadline:
                return state.get("status") or {}
            time.sleep(_POLL_SECONDS)

    def _echo(self, command: ControlCommand, cursor: int, deadline: float
              ) -> dict[str, Any] | None:
        while True:
            for event in self.channel.read_events(cursor)["events"]:
                if event["kind"] == "command_received" and \
                        event["payload"].get("id") == command.id:
                    return event
            if time.monotonic() >= deadline:
                return None
            time.sleep(_POLL_SECONDS)



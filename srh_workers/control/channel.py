"""RedisControlChannel: the control channel of a cluster run, and opening a run's controls.

The :class:`~srh_core.interactive.ControlChannel` of a run on the workers. A run
on the cluster has no one process to pump commands into, so a command is
applied where it is sent: :meth:`RedisControlChannel.send` logs it in the
command stream and applies it to the run's state in one transaction, with
the state machine of :class:`~srh_core.interactive.SRInteractionManager`; a
refused command raises at once (and is in the timeline as refused). When the
command releases a paused run, the steps it had parked are re-sent through
``send_action`` (a Celery producer), so the controller needs the cluster's
broker, as ``srh kick`` does. Step tasks read the state at their boundaries
and publish their events to the run's stream, which :meth:`read_events`
reads by cursor with the timeline's truncation metadata.

The run side of the protocol is the step tasks' transactions
(:mod:`srh_workers.control.parking`): :meth:`receive` reads the command log
(for an observer), and :meth:`save_state` is refused, since a
:class:`~srh_core.interactive.ControlBridge` cannot drive a distributed run.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from redis import Redis

from srh_core.agent.outcome import step_gate
from srh_core.errors import SearchStateError
from srh_core.interactive import ControlChannelError, ControlCommand, InteractionError
from srh_workers.control.parking import RUN_MEMBER, parked_actions, step_member
from srh_workers.control.state import commanded, opened, status_view
from srh_workers.flow.names import Action
from srh_workers.spec import load_spec
from srh_workers.store import RedisRunStore

SendAction = Callable[[Action], Any]
NOT_INTERACTIVE = ("Run {run_id} takes no commands: submit it with `srh run --backend celery "
                   "--interactive` (or an SRAgentInteractive agent class).")


class RedisControlChannel:
    """Commands, events and status of one interactive run on the cluster.

    Args:
        client: Redis of the run's store.
        run_id: The run.
        send_action: Enqueues an action (``srh_workers.flow.tasks.sender(app)``);
            needed to send commands, since a release re-sends parked steps.
    """

    def __init__(self, client: Redis, run_id: str, send_action: SendAction | None = None
                 ) -> None:
        self.store = RedisRunStore(client, run_id, register=False)
        self.run_id = run_id
        self.send_action = send_action

    # ------------------------------------------------------ controller side
    def send(self, command: ControlCommand) -> None:
        """Apply ``command`` now (see :meth:`apply`)."""
        self.apply(command)

    def apply(self, command: ControlCommand) -> dict[str, Any]:
        """Log and apply ``command``; re-send the steps a release lets go; the new status.

        Raises:
            ControlChannelError: The run takes no commands, or no ``send_action``
                was given.
            InteractionStateError: The command is refused in the run's state.
        """
        if self.send_action is None:
            raise ControlChannelError(f"This channel of run {self.run_id} is read-only: "
                                      "give it a send_action to send commands.")
        if self.store.controls.control_state() is None:
            raise ControlChannelError(NOT_INTERACTIVE.format(run_id=self.run_id))
        update = self.store.controls.update_control(commanded(command))
        for action in parked_actions(self.run_id, update.released):
            self.send_action(action)
        if isinstance(update.outcome, InteractionError):
            raise update.outcome
        return self.read_status() or {}

    def read_events(self, after_sequence: int = 0) -> dict[str, Any]:
        """Events after a cursor, shaped like ``InteractionManager.get_recent_events``."""
        if isinstance(after_sequence, bool) or not isinstance(after_sequence, int) \
                or after_sequence < 0:
            raise ValueError(f"after_sequence must be an int >= 0. Got {after_sequence!r}.")
        last = self.store.controls.last_event_seq()
        cursor_reset = after_sequence > last
        cursor = 0 if cursor_reset else after_sequence
        events = self.store.controls.read_events(cursor)
        first = self.store.controls.first_event_seq()
        discarded = last if first is None else first - 1  # the cap trimmed what is older
        return {"events": events, "truncated": cursor < discarded,
                "discarded_through": discarded, "cursor_reset": cursor_reset,
                "last_seq": last, "server_time": time.time()}

    def read_status(self) -> dict[str, Any] | None:
        """The run's control status (None for a run that takes no commands)."""
        view = self.store.controls.control_view()
        moving = None if view.state is None else self._moving(view.held, view.finished)
        return status_view(view.state, view.held, view.last_seq, view.finished, moving)

    def _moving(self, held: tuple[str, ...], finished: bool) -> int | None:
        """Branches of the latest restart with a step in flight or queued."""
        if finished or held == (RUN_MEMBER,):
            return 0

        try:
            settings = load_spec(self.store).search_settings()
        except SearchStateError:
            return None
        restart = self.store.flow.latest_restart()
        if restart == 0:
            return None
        branches = [b for b in self.store.flow.load_branches(restart, settings.global_width)
                    if b is not None]
        return sum(1 for b in branches if not b.finished
                   and step_member(b.R, b.C, b.L) not in held
                   and step_gate(b, branches, settings.early_stop) != "wait")

    # ------------------------------------------------------------ run side
    def receive(self, cursor: str | None, timeout: float) -> tuple[list[ControlCommand],
                                                                   str | None]:
        """Logged commands after the stream id ``cursor``, waiting up to ``timeout``."""
        entries = self.store.controls.command_log(cursor, block_ms=max(1, int(timeout * 1000)))
        commands = [ControlCommand.from_dict(record) for _, record in entries]
        return commands, entries[-1][0] if entries else cursor

    def publish(self, events: Sequence[Mapping[str, Any]]) -> None:
        self.store.controls.publish_events([{k: v for k, v in e.items() if k != "seq"}
                                            for e in events])

    def save_state(self, state: Mapping[str, Any]) -> None:
        raise ControlChannelError("A cluster run's control state changes only through its "
                                  "transactions (srh_workers.control); a ControlBridge cannot "
                                  "drive it.")

    def load_state(self) -> dict[str, Any] | None:
        return self.store.controls.control_state()

    def last_sequence(self) -> int:
        return self.store.controls.last_event_seq()


def open_controls(client: Redis, run_id: str, options: Mapping[str, bool] | None = None
                  ) -> bool:
    """Create a run's controls (state ``running``) with the agent's pause options.

    Returns:
        True when they were created, False when the run already had them.
    """
    update = RedisRunStore(client, run_id, register=False).controls.update_control(opened(options))
    return update.change is not None


__all__ = ["RedisControlChannel", "open_controls"]

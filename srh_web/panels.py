"""The authoring panels: a conversation with an authoring agent per panel id, on a web thread.

A panel is ``(kind, panel id)``: kind ``prepare`` talks to
:class:`~srh_core.agent.DataPreparationAgent`, kind ``evaluator`` to
:class:`~srh_core.agent.EvaluatorConstructionAgent`. Both kinds of one panel id
share the workspace ``ROOT/<panel id>`` (``srh web --workspaces ROOT``): the
data prepared there is the data the evaluator is proved on. Each message is
one call of the agent's own :meth:`~srh_core.agent.conversation.ConversationAgent.run`
on a thread of the web process (one turn at a time per panel); the agent
publishes its events into the panel's
:class:`~srh_core.interactive.InteractionManager`, which the page reads as a
server-sent event stream like a run's timeline.

Committing: the data agent commits ``context.data`` itself when its turn ends
and the directory validates; :meth:`PanelSession.commit` validates and commits
again on request (after the user repaired a file, say) and refuses while it
does not validate. An evaluator is committed only when a file is proved in its
current version (the agent's own ``finish`` says which): that version is
copied to ``ROOT/<panel id>/evaluators/<name>-<sha12>.py``, which later edits
of the model do not change; ``srh run --evaluator`` takes that file.

Shutdown: :meth:`Panels.close` asks every turn in flight to stop at its next
safe boundary (the agent's ``queue_runtime_settings({"max_steps": 1})``) and
waits for the threads a bounded time; tools run their programs in the sandbox,
whose processes die with this one.
"""

from __future__ import annotations

import hashlib
import logging
import re
import shutil
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from srh_core.agent import DataPreparationAgent, EvaluatorConstructionAgent
from srh_core.cli import one_line
from srh_core.cli.tool_commands import context_from_data
from srh_core.context import AgentContext
from srh_core.errors import ConfigurationError
from srh_core.interactive import InteractionManager
from srh_core.types import json_value
from srh_web.errors import PanelNotFoundError, PanelStateError

logger = logging.getLogger("srh.web")
PANEL_KINDS = ("prepare", "evaluator")
PANEL_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
COMMITTED_EVALUATORS = "evaluators"
SHUTDOWN_WAIT_SECONDS = 10.0
MAX_SESSIONS = 64


@dataclass(frozen=True, slots=True)
class PanelSettings:
    """What the operator sets for every panel (``srh web --workspaces --llm --base-url``).

    Attributes:
        root: Folder of the panels' workspaces (one subfolder per panel id).
        llm: ``PROVIDER:MODEL`` a panel uses unless its first message names another.
        base_url: OpenAI-compatible endpoint (only the operator sets it: the page cannot
            send the operator's key elsewhere).
    """

    root: Path
    llm: str = "offline"
    base_url: str | None = None


class PanelSession:
    """One panel's agent, its event timeline, its state and its last turn's result.

    Args:
        kind: ``prepare`` or ``evaluator``.
        panel_id: The panel's id (a folder name under the workspaces root).
        settings: The operator's panel settings.
    """

    def __init__(self, kind: str, panel_id: str, settings: PanelSettings) -> None:
        self.kind = kind
        self.panel_id = panel_id
        self.settings = settings
        self.workspace = settings.root / panel_id
        self.manager = InteractionManager()
        self.agent: Any = None
        self.llm: str | None = None
        self.status = "new"             # new, working, idle, failed
        self.result: dict[str, Any] | None = None
        self.error: dict[str, str] | None = None
        self.committed: dict[str, Any] | None = None
        self.turns = 0
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._closed = False

    # ------------------------------------------------------------- reading
    def view(self) -> dict[str, Any]:
        """The panel's state as the page shows it."""
        with self._lock:
            return {"kind": self.kind, "panel_id": self.panel_id,
                    "workspace": str(self.workspace), "llm": self.llm or self.settings.llm,
                    "status": self.status, "turns": self.turns, "error": self.error,
                    "result": self.result, "committed": self.committed}

    # The event stream of srh_web.app reads a panel as it reads a run.
    def channel(self) -> PanelSession:
        return self

    def read_events(self, after_sequence: int = 0) -> dict[str, Any]:
        return self.manager.get_recent_events(after_sequence)

    def signature(self) -> tuple[Any, ...]:
        with self._lock:
            return (self.status, self.turns, self.committed is not None)

    def control(self) -> dict[str, Any]:
        return self.view()

    # ------------------------------------------------------------- acting
    def send(self, message: str, *, llm: str | None = None, data: str | None = None,
             target: str | None = None) -> dict[str, Any]:
        """Start one turn with ``message`` on the panel's thread.

        Args:
            message: The user's words.
            llm: ``PROVIDER:MODEL`` (the first message chooses the agent's model; a later
                one is queued with the agent's ``queue_runtime_settings``).
            data: Evaluator panels, first message: the data the evaluator is proved on, a
                path inside the workspace (default ``context.data``).
            target: The target column when ``data`` is a CSV file.

        Raises:
            PanelStateError: A turn is in flight, or the web app is shutting down.
            ConfigurationError: Empty message, the offline provider, no data to prove an
                evaluator on (the agents' own checks).
        """
        if not isinstance(message, str) or not message.strip():
            raise ConfigurationError("Type a message first.", setting="message")
        with self._lock:
            self._check_free()
            if self.agent is None:
                self.agent = self._build_agent(llm or self.settings.llm, data, target)
                self.llm = llm or self.settings.llm
            elif llm and llm != self.llm:
                provider, _, model = llm.partition(":")
                self.agent.queue_runtime_settings({"llm_provider": provider,
                                                   "llm_model": model or None})
                self.llm = llm
            self.status, self.error, self.turns = "working", None, self.turns + 1
            self._thread = threading.Thread(target=self._turn, args=(message,), daemon=True,
                                            name=f"srh-web-{self.kind}-{self.panel_id}")
            self._thread.start()
        return self.view()

    def commit(self) -> dict[str, Any]:
        """Commit what the conversation made (see the module's docstring).

        Raises:
            PanelStateError: A turn is in flight, nothing was started, the data does not
                validate (``details`` holds the report) or no evaluator is proved.
        """
        with self._lock:
            self._check_free()
            if self.agent is None:
                raise PanelStateError("Nothing to commit yet: send the model a message first.")
            previous, self.status = self.status, "working"
        try:
            committed = self._commit_data() if self.kind == "prepare" else \
                self._commit_evaluator()
        finally:
            with self._lock:
                self.status = previous
        with self._lock:
            self.committed = committed
        return self.view()

    def stop(self) -> bool:
        """Refuse new turns; ask one in flight to end at its next safe boundary (nothing is
        cut). Whether a turn was in flight."""
        with self._lock:
            self._closed = True
            if self._thread is not None and self._thread.is_alive():
                self.agent.queue_runtime_settings({"max_steps": 1})
                return True
            return False

    def join(self, timeout: float) -> bool:
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
            return not thread.is_alive()
        return True

    # ------------------------------------------------------------- inside
    def _check_free(self) -> None:
        if self._closed:
            raise PanelStateError("The workbench is shutting down.")
        if self.status == "working":
            raise PanelStateError("The model is still working on the last message; wait for "
                                  "its reply.")

    def _build_agent(self, llm: str, data: str | None, target: str | None) -> Any:
        provider, _, model = llm.partition(":")
        options = {"llm_provider": provider, "llm_model": model or None,
                   "base_url": self.settings.base_url}
        if provider == "offline":  # the agent's own refusal (it comes before any context use)
            agent_class = DataPreparationAgent if self.kind == "prepare" else \
                EvaluatorConstructionAgent
            agent_class(**options, context=None)
        self.workspace.mkdir(parents=True, exist_ok=True)
        folder = str(self.workspace.resolve())
        if self.kind == "prepare":
            context = AgentContext(args={"workspace": folder}, workspace=folder)
            return DataPreparationAgent(**options, context=context,
                                        interaction_manager=self.manager)
        return EvaluatorConstructionAgent(**options, context=self._evaluator_data(data, target),
                                          interaction_manager=self.manager)

    def _evaluator_data(self, data: str | None, target: str | None) -> Any:
        relative = Path(data or "context.data")
        path = (self.workspace / relative).resolve()
        if relative.is_absolute() or not path.is_relative_to(self.workspace.resolve()):
            raise ConfigurationError(f"The data must be a path inside the workspace "
                                     f"{self.workspace}. Got {data!r}.", setting="data")
        if not path.exists():
            raise ConfigurationError(
                f"No data to prove an evaluator on: {path} does not exist; prepare it in the "
                "Prepare data panel of this id, or name a CSV file of the workspace (with its "
                "target).", setting="data")
        return context_from_data(path, target or None,
                                 {"workspace": str(self.workspace.resolve())})

    def _turn(self, message: str) -> None:
        try:
            result = self.agent.run(message)
        except Exception as error:  # shown on the page as a typed message
            failure = {"type": type(error).__name__, "message": one_line(error)}
            self.manager.publish_event("execution_failed", {"error": failure["message"],
                                                            "type": failure["type"]})
            with self._lock:
                self.status, self.error = "failed", failure
            return
        with self._lock:
            self.result = json_value(result)
            if self.kind == "prepare" and result.get("committed"):
                self.committed = self._data_view(result.get("context") or {})
            self.status = "idle"

    def _commit_data(self) -> dict[str, Any]:
        validation, committed = self.agent.commit_prepared_data()
        if validation is None:
            raise PanelStateError(f"Nothing to commit: {self.workspace / 'context.data'} does "
                                  "not exist yet; ask the model to write it.")
        if not committed:
            raise PanelStateError(f"context.data does not validate ({len(validation['errors'])}"
                                  " problem(s)); nothing was committed.",
                                  details={"validation": json_value(validation)})
        return self._data_view(self.agent.context.schema())

    def _data_view(self, schema: dict[str, Any]) -> dict[str, Any]:
        path = self.workspace.resolve() / "context.data"
        return {"path": str(path), "schema": json_value(schema),
                "command": f"srh run --data {path}"}

    def _commit_evaluator(self) -> dict[str, Any]:
        proof = self.agent.finish("", {})  # the agent's own rule: proved in its current version
        if not proof["valid"]:
            unproved = ", ".join(proof["unproved"]) or "none written"
            raise PanelStateError("No proved evaluator to commit: every evaluator file must "
                                  "pass validate_evaluator in its current version (not proved: "
                                  f"{unproved}).")
        source = Path(proof["evaluator_path"])
        digest = hashlib.sha256(source.read_bytes()).hexdigest()[:12]
        folder = self.workspace.resolve() / COMMITTED_EVALUATORS
        folder.mkdir(exist_ok=True)
        snapshot = folder / f"{source.stem}-{digest}.py"
        shutil.copyfile(source, snapshot)
        self.manager.publish_event("workspace_changed", {
            "committed": f"{COMMITTED_EVALUATORS}/{snapshot.name}",
            "evaluator_file": proof["evaluator_file"]})
        return {"path": str(snapshot), "evaluator_file": proof["evaluator_file"],
                "command": f"srh run --evaluator {snapshot}"}


class Panels:
    """Every panel session of one web app, by ``(kind, panel id)``.

    Args:
        settings: The operator's panel settings.
    """

    def __init__(self, settings: PanelSettings) -> None:
        self.settings = settings
        self._sessions: dict[tuple[str, str], PanelSession] = {}
        self._lock = threading.Lock()
        self._closed = False

    def session(self, kind: str, panel_id: str, *, create: bool = False) -> PanelSession:
        """The session of ``(kind, panel_id)``; a new one when ``create``.

        Raises:
            PanelNotFoundError: Unknown kind, a malformed id, or (without ``create``) no
                such session.
        """
        check_panel(kind, panel_id)
        with self._lock:
            found = self._sessions.get((kind, panel_id))
            if found is None and create:
                if self._closed:
                    raise PanelStateError("The workbench is shutting down.")
                if len(self._sessions) >= MAX_SESSIONS:
                    raise PanelStateError(f"This workbench holds {MAX_SESSIONS} panel "
                                          "conversations already; restart srh web to begin "
                                          "new ones.")
                found = self._sessions[(kind, panel_id)] = PanelSession(kind, panel_id,
                                                                        self.settings)
        if found is None:
            raise PanelNotFoundError(f"Panel {kind}/{panel_id} has no conversation yet.")
        return found

    def view(self, kind: str, panel_id: str) -> dict[str, Any]:
        """A session's view; a new panel's (nothing is stored) when it has none yet."""
        check_panel(kind, panel_id)
        with self._lock:
            found = self._sessions.get((kind, panel_id))
        return (found or PanelSession(kind, panel_id, self.settings)).view()

    def list(self) -> list[dict[str, Any]]:
        with self._lock:
            sessions = list(self._sessions.values())
        return [session.view() for session in sessions]

    def close(self, timeout: float = SHUTDOWN_WAIT_SECONDS) -> bool:
        """Stop every turn at its next safe boundary; whether all threads ended in time."""
        with self._lock:
            self._closed = True
            sessions = list(self._sessions.values())
        busy = [session for session in sessions if session.stop()]
        if busy:
            logger.warning("Stopping %d panel turn(s) in flight at their next safe boundary.",
                           len(busy))
        deadline = time.monotonic() + timeout
        ended = all([session.join(max(0.0, deadline - time.monotonic())) for session in sessions])
        if not ended:
            logger.warning("A panel turn did not end within %.0f s; it ends with the process.",
                           timeout)
        return ended


def check_panel(kind: str, panel_id: str) -> None:
    """Raises PanelNotFoundError unless ``kind`` is a panel kind and ``panel_id`` a valid id."""
    if kind not in PANEL_KINDS or not PANEL_ID.fullmatch(panel_id):
        raise PanelNotFoundError(f"No panel {kind}/{panel_id}: the kind is one of "
                                 f"{', '.join(PANEL_KINDS)}, the id letters, digits, '-' and "
                                 "'_' (at most 64).")

"""Submitting an interactive run to the cluster: its controls first, then the run."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from redis import Redis

from srh_core.agent.settings import SearchSettings
from srh_core.errors import ConfigurationError
from srh_core.interactive import SRAgentInteractive
from srh_workers.control.channel import open_controls
from srh_workers.spec import RunSpec
from srh_workers.store import RedisRunStore
from srh_workers.submit import Send, submit_run


def submit_interactive(client: Redis, send: Send, settings: SearchSettings,
                       X: Mapping[str, Any], y: Mapping[str, Any], description: str = "", *,
                       agent_class: type | None = None,
                       options: Mapping[str, bool] | None = None,
                       api_key: str | None = None) -> RunSpec:
    """Open the run's controls (with the agent's pause options), then submit it.

    The controls exist before the first task runs, so a command sent the
    moment the run id is known is accepted, and every task reads the same
    pause options.

    Args:
        client: Redis of the run store.
        send: Enqueues one action.
        settings: The search settings (a run id is generated when missing).
        X: Feature arrays by name.
        y: ``{target: array}``.
        description: The problem description shown to the model.
        agent_class: An SRAgentInteractive (sub)class; SRAgentInteractive by default.
        options: ``pause_on_tool_free`` / ``pause_on_truncated`` of the agent.
        api_key: The run's own model key (see :func:`srh_workers.submit.submit_run`).

    Raises:
        ConfigurationError: The class is not interactive, or the run id is in use.
    """
    agent_class = agent_class or SRAgentInteractive
    if not (isinstance(agent_class, type) and issubclass(agent_class, SRAgentInteractive)):
        raise ConfigurationError(f"An interactive run needs an SRAgentInteractive agent class. "
                                 f"Got {agent_class!r} instead.", setting="agent_class")
    settings = settings if settings.run_id else settings.replace(run_id=uuid.uuid4().hex[:12])
    store = RedisRunStore(client, settings.run_id, register=False)
    if store.spec_json() is not None:
        raise ConfigurationError(f"Run id {settings.run_id!r} is already used by a submitted "
                                 "run; choose another.", setting="run_id")
    created = open_controls(client, settings.run_id, options)
    try:
        return submit_run(client, send, settings, X, y, description, agent_class=agent_class,
                          api_key=api_key)
    except BaseException:
        if created:
            store.controls.delete_controls()
        raise

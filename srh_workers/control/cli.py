"""The cluster's side of ``srh pause|resume|message|next-branch|next-restart|settings RUN_ID``.

:func:`cluster_target` is registered in ``srh_core.cli.control_commands.CONTROL_TARGETS``
by the workers' CLI plugin: a target that is not a run directory is looked
up as a run id in the cluster's Redis (``SRH_REDIS_URL``), and commands are
applied there; a release re-sends parked steps through the broker
(``SRH_BROKER_URL``). Importing this module imports neither redis nor Celery.
"""

from __future__ import annotations

from typing import Any


def cluster_target(target: str) -> Any:
    """The :class:`~srh_workers.control.RedisControlChannel` of run ``target``, or None.

    Raises:
        ConfigurationError: Redis does not answer.
    """
    from srh_core.errors import ConfigurationError
    from srh_workers.store import RedisRunStore, RunKeys

    try:
        RunKeys(target)
    except ConfigurationError:
        return None
    from srh_workers.cli.connections import checked, connections
    from srh_workers.control.channel import RedisControlChannel
    from srh_workers.flow.tasks import sender

    client, app = connections()
    if RedisRunStore(checked(client), target, register=False).spec_json() is None:
        return None
    return RedisControlChannel(client, target, sender(app))

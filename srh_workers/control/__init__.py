"""Watch and steer a run on the cluster: the interactive controls over the run's Redis keys.

The same controls as an embedded ``srh run --interactive`` (pause,
force-pause, resume, message, next_c, next_r; the same event kinds), acting
at the same step boundaries, with the interaction state in Redis instead of
one process's memory:

- :mod:`srh_workers.control.state`: the state and what each control does to it
  (the rules are :class:`~srh_core.interactive.SRInteractionManager`'s);
- :mod:`srh_workers.control.channel`: :class:`RedisControlChannel`, what a
  controller (``srh pause``, ``srh web``) talks to;
- :mod:`srh_workers.control.parking`: where step tasks park a paused branch
  (it holds no worker) and what a release re-sends;
- :mod:`srh_workers.control.agent`: :class:`RedisAgentControls`, the agent's
  view on a worker (events, force-pause watch);
- :mod:`srh_workers.control.submit`: :func:`submit_interactive`.

Names are imported on first use.
"""

from __future__ import annotations

from srh_engine.lazy import lazy_exports

_EXPORTS = {
    "RedisControlChannel": "srh_workers.control.channel",
    "open_controls": "srh_workers.control.channel",
    "RedisAgentControls": "srh_workers.control.agent",
    "RedisCancelSignal": "srh_workers.control.agent",
    "submit_interactive": "srh_workers.control.submit",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

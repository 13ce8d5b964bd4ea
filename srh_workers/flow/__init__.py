"""The distributed run's flow: task names, the worker's view of a run, the task bodies.

- :mod:`srh_workers.flow.names`: every task name, defined once, and :class:`Action`;
- :mod:`srh_workers.flow.run_view`: :class:`WorkerRunView` (spec, store, data, agents) and
  the granularity rule;
- :mod:`srh_workers.flow.steps`: one function per task kind (no Celery in them), carrying
  out the scheduler's actions (:mod:`srh_core.agent.scheduler`);
- :mod:`srh_workers.flow.whole_run`: a whole run as one chunked task (granularity "run");
- :mod:`srh_workers.flow.handlers`: the bodies by task name, and a run driven in-process;
- :mod:`srh_workers.flow.tasks`: the Celery tasks wrapping them (imported by workers).

Names are imported on first use, so :mod:`srh_workers.flow.names` loads alone.
"""

from __future__ import annotations

from srh_engine.lazy import lazy_exports

_EXPORTS = {
    "FLOW_TASKS": "srh_workers.flow.names",
    "Action": "srh_workers.flow.names",
    "WorkerRunView": "srh_workers.flow.run_view",
    "resolve_granularity": "srh_workers.flow.run_view",
    "run_view_for": "srh_workers.flow.run_view",
    "dispatch": "srh_workers.flow.handlers",
    "run_inline": "srh_workers.flow.handlers",
    "finalize_run": "srh_workers.flow.steps",
    "repair_actions": "srh_workers.flow.steps",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

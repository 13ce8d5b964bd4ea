"""The distributed run's flow: task names, the worker's view of a run, the task bodies.

- :mod:`srh_workers.flow.names`: every task name, defined once, and :class:`Action`;
- :mod:`srh_workers.flow.runtime`: :class:`RunRuntime` (spec, store, data, agents) and
  the granularity rule;
- :mod:`srh_workers.flow.steps`: one function per task kind (no Celery in them);
- :mod:`srh_workers.flow.whole_run`: a whole run as one chunked task (granularity "run");
- :mod:`srh_workers.flow.tasks`: the Celery tasks wrapping them (imported by workers).
"""

from srh_workers.flow.names import FLOW_TASKS, Action
from srh_workers.flow.runtime import RunRuntime, resolve_granularity, runtime_for
from srh_workers.flow.steps import dispatch, finalize_run, repair_actions, run_inline

__all__ = ["FLOW_TASKS", "Action", "RunRuntime", "dispatch", "finalize_run", "repair_actions",
           "resolve_granularity", "run_inline", "runtime_for"]

"""The embedded runtime: the search in one process, no services.

- :mod:`srh_core.embedded.runner`: ``run_search``, ``resume_search`` and the
  threaded :class:`~srh_core.embedded.runner.LocalBranchRunner`;
- :mod:`srh_core.embedded.executor`: serial and process-pool tool executors;
- :mod:`srh_core.embedded.run_dir`: the run directory (its only writer and
  reader, for both runtimes).

Names are imported on first use: the stores below the runtime import the
run directory without loading the runner.
"""

from __future__ import annotations

from srh_engine.lazy import lazy_exports

_EXPORTS = {
    "LocalBranchRunner": "srh_core.embedded.runner",
    "resume_search": "srh_core.embedded.runner",
    "run_search": "srh_core.embedded.runner",
    "ProcessToolExecutor": "srh_core.embedded.executor",
    "SerialToolExecutor": "srh_core.embedded.executor",
    "RunDirectory": "srh_core.embedded.run_dir",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

"""The embedded runtime: the search in one process, no services.

- :mod:`srh_core.embedded.runner`: ``run_search``, ``resume_search`` and the
  threaded :class:`~srh_core.embedded.runner.LocalBranchRunner`;
- :mod:`srh_core.embedded.executor`: serial and process-pool tool executors;
- :mod:`srh_core.embedded.run_dir`: the run directory (its only writer and
  reader, for both runtimes).
"""

from srh_core.embedded.executor import ProcessToolExecutor, SerialToolExecutor
from srh_core.embedded.run_dir import RunDirectory
from srh_core.embedded.runner import LocalBranchRunner, resume_search, run_search

__all__ = ["LocalBranchRunner", "ProcessToolExecutor", "RunDirectory", "SerialToolExecutor",
           "resume_search", "run_search"]

"""Sweeps on the cluster: cells as distributed runs, coordinated by the workers.

- :mod:`srh_workers.sweeps.backend`: :class:`CelerySweepBackend`, the sweep runner's
  backend whose cells are distributed runs;
- :mod:`srh_workers.sweeps.store`: a sweep's keys in Redis (spec, inputs, cells,
  controls, the coordinator's lease);
- :mod:`srh_workers.sweeps.coordinator`: the thread in every worker that holds the
  sweeps' leases and drives their cells (taken over when its worker dies);
- :mod:`srh_workers.sweeps.control`: submit, status, list, pause, resume, stop, cancel;
- :mod:`srh_workers.sweeps.cli`: ``srh sweep submit|status|list|pause|resume|stop|cancel``.
"""

from __future__ import annotations

from srh_engine.lazy import lazy_exports

__all__ = ["CelerySweepBackend"]

# Loaded on first use: ``srh sweep``'s cluster actions register through
# srh_workers.sweeps.cli without importing the Redis client.
_LAZY = {"CelerySweepBackend": "backend"}

__getattr__, __dir__ = lazy_exports(__name__, _LAZY)

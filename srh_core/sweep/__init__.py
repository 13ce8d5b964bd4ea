"""Sweeps: a suite file (problems x seeds x settings) as one run per cell, one results table.

- :mod:`srh_core.sweep.spec`: the sweep file (TOML), validated;
- :mod:`srh_core.sweep.runner`: :class:`SweepRunner` (progress, retries, resume, the table)
  over a :class:`SweepBackend`;
- :mod:`srh_core.sweep.embedded`: cells in this machine's processes (``srh sweep --jobs N``).

``srh_workers`` adds the cluster backend (``srh sweep --backend celery``).
"""

from srh_core.sweep.embedded import EmbeddedSweepBackend, default_jobs
from srh_core.sweep.runner import BackendUnavailable, CellData, RunLost, SweepBackend, SweepRunner
from srh_core.sweep.spec import Cell, SweepSpec, cells, load_sweep

__all__ = ["BackendUnavailable", "Cell", "CellData", "EmbeddedSweepBackend", "RunLost",
           "SweepBackend", "SweepRunner", "SweepSpec", "cells", "default_jobs", "load_sweep"]

"""Sweeps: a suite file (problems x seeds x settings) as one run per cell, one results table.

- :mod:`srh_core.sweep.spec`: the sweep file (TOML), validated;
- :mod:`srh_core.sweep.runner`: :class:`SweepRunner` (progress, retries, resume, the table)
  over a :class:`SweepBackend`;
- :mod:`srh_core.sweep.embedded`: cells in this machine's processes (``srh sweep --jobs N``);
- :mod:`srh_core.sweep.progress`: progress for a terminal and for a log;
- :mod:`srh_core.sweep.report`: rates with confidence intervals, comparisons (``srh sweep report``).

``srh_workers.sweeps`` adds sweeps as cluster jobs (``srh sweep submit``, the coordinator).
"""

from srh_core.sweep.embedded import EmbeddedSweepBackend, default_jobs
from srh_core.sweep.report import build_report
from srh_core.sweep.runner import (
    BackendUnavailable,
    CellData,
    FileSweepState,
    RunLost,
    SweepBackend,
    SweepRunner,
    SweepState,
)
from srh_core.sweep.spec import Cell, SweepSpec, cells, load_sweep

__all__ = ["BackendUnavailable", "Cell", "CellData", "EmbeddedSweepBackend", "FileSweepState",
           "RunLost", "SweepBackend", "SweepRunner", "SweepSpec", "SweepState", "build_report",
           "cells", "default_jobs", "load_sweep"]

"""How the ``srh`` process ends: on its own, on Ctrl-C, on SIGTERM.

The console script runs :func:`console_main`, which wraps :func:`srh_core.cli.main`:

- SIGINT and SIGTERM do what Ctrl-C does: the first raises
  ``KeyboardInterrupt`` in the main thread, so a run records what it has,
  writes its result (status "interrupted", resumable) and stops its pools;
  the second ends the process at once (its children end with it, see
  :mod:`srh_engine.processes`). Batch schedulers send SIGTERM, terminals
  SIGINT: both must leave a resumable run directory.
- When the command is done, its result written and printed, the process
  exits without waiting for threads still inside a tool call it no longer
  needs (after an interrupt, a branch thread may be in a pure-Python tool
  that cannot be cut): a batch job must return, and nothing of theirs is
  read any more.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from collections.abc import Sequence
from typing import NoReturn

from srh_engine.processes import interrupt_on, stop_signals_received

__all__ = ["STOP_SIGNALS", "console_main", "exit_now"]

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
logger = logging.getLogger("srh.cli")


def _stop_pools() -> None:
    """Stop process-wide pools this command started (bounded)."""
    pool = sys.modules.get("srh_engine.search.pool")
    if pool is not None:
        pool.shutdown()


def exit_now(code: int) -> NoReturn:
    """Flush the output and end the process with ``code``, whatever threads still run."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def console_main(argv: Sequence[str] | None = None) -> NoReturn:
    """The ``srh`` console script: :func:`srh_core.cli.main` with signals and a bounded exit."""
    from srh_core.cli import main

    interrupt_on(STOP_SIGNALS)
    code = main(argv)
    received = stop_signals_received()
    if code == 130 and received and received[0] == signal.SIGTERM:
        code = 128 + signal.SIGTERM
    try:
        _stop_pools()
    except KeyboardInterrupt:
        pass
    lingering = [thread for thread in threading.enumerate()
                 if thread is not threading.main_thread() and not thread.daemon
                 and thread.is_alive()]
    if lingering:
        logger.debug("Exiting with %d thread(s) still running: %s", len(lingering),
                     ", ".join(thread.name for thread in lingering))
        exit_now(code)
    sys.exit(code)

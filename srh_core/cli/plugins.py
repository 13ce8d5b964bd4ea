"""What plugins of ``srh`` (the ``srh.commands`` entry points) add to: backends and sweeps.

Kept apart from :mod:`srh_core.cli` so that the commands read them without importing
the command line's entry module; ``srh_core.cli`` re-exports every name.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

Backend = Callable[[argparse.Namespace], int]
#: ``srh run`` backends by name (``embedded``; a plugin adds ``celery``).
BACKENDS: dict[str, Backend] = {}
#: Sweep backends by name: a factory from the parsed arguments to a SweepBackend.
SWEEP_BACKENDS: dict[str, Callable[[argparse.Namespace], Any]] = {}
#: Sweep backends that coordinate the sweep elsewhere (the cluster): ``(args, spec, out)``
#: submits and follows it, returning the exit code.
SWEEP_FOLLOWERS: dict[str, Callable[..., int]] = {}
#: Adders of ``srh sweep`` actions (``submit``, ``status``, ...): called with the actions'
#: subparsers. Plugins append to it when they register.
SWEEP_ACTIONS: list[Callable[[Any], None]] = []
#: Finders of sweeps by name beyond local directories: ``name -> (name, status, rows)``
#: or None.
SWEEP_SOURCES: list[Callable[[str], Any]] = []

__all__ = ["BACKENDS", "SWEEP_ACTIONS", "SWEEP_BACKENDS", "SWEEP_FOLLOWERS", "SWEEP_SOURCES",
           "Backend"]

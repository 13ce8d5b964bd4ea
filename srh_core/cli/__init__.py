"""The ``srh`` command line.

Core commands live here (``run``, ``resume``, ``show``, ``problems``,
``sweep``); packages above srh_core add commands and backends through the
``srh.commands`` entry-point group (``srh_workers`` adds ``worker``,
``status``, ``result``, ``cancel``, ``kick`` and ``--backend celery`` for ``run``
and ``sweep``), so srh_core never imports them.

Exit codes: 0 a finished run (completed, early stop, or the time budget
ended it), 1 a failed run, 2 bad usage or configuration, 130 interrupted
by Ctrl-C.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence
from importlib.metadata import entry_points
from typing import Any

from srh_core.errors import SRHarnessError

Backend = Callable[[argparse.Namespace], int]
BACKENDS: dict[str, Backend] = {}
#: Sweep backends by name: a factory from the parsed arguments to a SweepBackend.
SWEEP_BACKENDS: dict[str, Callable[[argparse.Namespace], Any]] = {}
PLUGIN_GROUP = "srh.commands"
logger = logging.getLogger("srh.cli")


def build_parser() -> argparse.ArgumentParser:
    from srh_core.cli import commands

    parser = argparse.ArgumentParser(prog="srh", description=(
        "SRHarness: agentic symbolic regression, embedded or on a Celery + Redis cluster."))
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging on stderr")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    BACKENDS.setdefault("embedded", commands.run_embedded)
    commands.register(subparsers)
    for plugin in _plugins():
        plugin(subparsers, BACKENDS)
    return parser


def _plugins() -> list[Callable[..., Any]]:
    loaded = []
    for entry in entry_points(group=PLUGIN_GROUP):
        try:
            loaded.append(entry.load())
        except Exception as error:  # a broken plugin must not take the core CLI down
            logger.warning("srh plugin %r could not be loaded: %s", entry.name, error)
    return loaded


def configure_logging(verbose: bool) -> None:
    logging.basicConfig(level=logging.DEBUG if verbose else logging.WARNING, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("srh").setLevel(logging.DEBUG if verbose else logging.INFO)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``srh``; returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    configure_logging(args.verbose)
    try:
        return int(args.handler(args))
    except SRHarnessError as error:
        print(f"srh: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("srh: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

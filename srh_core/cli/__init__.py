"""The ``srh`` command line.

Core commands live here (``run``, ``resume``, ``show``, ``problems``,
``sweep``); packages above srh_core add commands and backends through the
``srh.commands`` entry-point group (``srh_workers`` adds ``worker``,
``status``, ``result``, ``cancel``, ``kick`` and ``--backend celery`` for ``run``
and ``sweep``), so srh_core never imports them.

Exit codes: 0 a finished run (completed, early stop, or the time budget
ended it), 1 a failed run, 2 bad usage or configuration, 130 interrupted
by Ctrl-C, 141 the reader of the output went away (``srh problems | head -1``:
the command ends quietly, without an error line).

Error boundary: every user error (a bad flag, setting, TOML file, data file
or manifest: the ``SRHarnessError`` family, argparse's usage errors, and
files that cannot be read or written) ends in exactly one last line
``srh: error: ...`` on stderr and exit code 2, without a traceback. Log
records keep their message but lose their traceback (the exception's one
line summary is appended instead). ``--debug``, before or after the command,
shows the tracebacks.
"""

from __future__ import annotations

import argparse
import logging
import os
import select
import sys
import traceback
from collections.abc import Callable, Sequence
from importlib.metadata import entry_points
from typing import Any, NoReturn

from srh_core.cli.plugins import (
    BACKENDS,
    SWEEP_ACTIONS,
    SWEEP_BACKENDS,
    SWEEP_FOLLOWERS,
    SWEEP_SOURCES,
    Backend,
)
from srh_core.errors import SRHarnessError

PLUGIN_GROUP = "srh.commands"
__all__ = ["BACKENDS", "OUTPUT_CLOSED_EXIT", "PLUGIN_GROUP", "SWEEP_ACTIONS", "SWEEP_BACKENDS",
           "SWEEP_FOLLOWERS", "SWEEP_SOURCES", "USAGE_EXIT", "Backend", "UsageError",
           "build_parser", "configure_logging", "main", "one_line", "sweep_shorthand"]
USAGE_EXIT = 2
#: Exit code when the reader of the output went away (``srh ... | head``): 128 + SIGPIPE,
#: what a shell reports for a command the signal ended.
OUTPUT_CLOSED_EXIT = 141
logger = logging.getLogger("srh.cli")


class UsageError(SRHarnessError):
    """A command-line usage error found by argparse; ``usage`` is the command's usage text."""

    def __init__(self, message: str, usage: str = "") -> None:
        super().__init__(message)
        self.usage = usage


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of printing and exiting, so one boundary reports."""

    def error(self, message: str) -> NoReturn:
        command = self.prog.removeprefix("srh").strip()
        raise UsageError(f"{command}: {message}" if command else message, self.format_usage())


def build_parser() -> argparse.ArgumentParser:
    from srh_core.cli import (
        authoring_commands,
        benchmark_commands,
        commands,
        control_commands,
        model_check,
        tool_commands,
    )

    parser = _Parser(prog="srh", description=(
        "SRHarness: agentic symbolic regression, embedded or on a Celery + Redis cluster."))
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging on stderr")
    parser.add_argument("--debug", action="store_true",
                        help="show tracebacks of errors (also accepted after the command)")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    BACKENDS.setdefault("embedded", commands.run_embedded)
    commands.register(subparsers)
    benchmark_commands.register(subparsers)
    tool_commands.register(subparsers)
    authoring_commands.register(subparsers)
    model_check.register(subparsers)
    control_commands.register_control_commands(subparsers)
    for plugin in _plugins():
        plugin(subparsers, BACKENDS)
    sweep_actions = _subcommands(subparsers.choices["sweep"])
    for adder in SWEEP_ACTIONS:
        adder(sweep_actions)
    for command in [*subparsers.choices.values(), *sweep_actions.choices.values()]:
        if not any("--debug" in action.option_strings for action in command._actions):
            command.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                                 help="show tracebacks of errors")
    return parser


def _plugins() -> list[Callable[..., Any]]:
    loaded = []
    for entry in entry_points(group=PLUGIN_GROUP):
        try:
            loaded.append(entry.load())
        except Exception as error:  # a broken plugin must not take the core CLI down
            logger.warning("srh plugin %r could not be loaded: %s", entry.name, error)
    return loaded


class _OneLineTracebacks(logging.Filter):
    """Replace a record's traceback by the exception's one-line summary."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            record.msg = f"{record.getMessage()} ({type(error).__name__}: {one_line(error)}; " \
                         "--debug shows the traceback)"
            record.args = None
            record.exc_info = record.exc_text = None
        return True


def configure_logging(verbose: bool, debug: bool = False) -> None:
    logging.basicConfig(level=logging.DEBUG if verbose else logging.WARNING, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("srh").setLevel(logging.DEBUG if verbose else logging.INFO)
    if debug:
        return
    for handler in logging.getLogger().handlers:
        on_stderr = getattr(handler, "stream", None) in (sys.stderr, sys.__stderr__)
        if on_stderr and not any(isinstance(f, _OneLineTracebacks) for f in handler.filters):
            handler.addFilter(_OneLineTracebacks())


def one_line(error: BaseException | str) -> str:
    """An error message on one line: list items joined with "; ", other breaks as spaces."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    if not lines:
        return type(error).__name__ if isinstance(error, BaseException) else ""
    head, items = lines[0], [line.removeprefix("- ") for line in lines[1:]]
    return head if not items else f"{head.rstrip(':')}: {'; '.join(items)}"


def _report(error: BaseException, debug: bool) -> int:
    if debug:
        traceback.print_exception(error, file=sys.stderr)
    if isinstance(error, UsageError) and error.usage:
        sys.stderr.write(error.usage)
    if isinstance(error, OSError) and not isinstance(error, SRHarnessError):
        where = f" {error.filename}" if error.filename else ""
        text = f"cannot access{where}: {error.strerror or error}"
    else:
        text = one_line(error)
    print(f"srh: error: {text}", file=sys.stderr)
    return USAGE_EXIT


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``srh``; returns the process exit code."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    try:
        try:
            return _command(arguments)
        finally:
            sys.stdout.flush()  # a closed pipe fails here, not in the interpreter's exit
    except BrokenPipeError as error:
        if not _silence_closed_outputs():
            return _report(error, "--debug" in arguments)
        return OUTPUT_CLOSED_EXIT


def sweep_shorthand(parser: argparse.ArgumentParser, arguments: list[str]) -> list[str]:
    """``srh sweep FILE ...`` means ``srh sweep run FILE ...``."""
    words = [i for i, word in enumerate(arguments) if not word.startswith("-")]
    if not words or arguments[words[0]] != "sweep" or len(arguments) <= words[0] + 1:
        return arguments
    after = words[0] + 1
    actions = _subcommands(_subcommands(parser).choices["sweep"]).choices
    if arguments[after].startswith("-") or arguments[after] in actions:
        return arguments
    return [*arguments[:after], "run", *arguments[after:]]


def _subcommands(parser: argparse.ArgumentParser) -> Any:
    """A parser's subparsers action (its ``choices`` are the subcommands)."""
    return next(action for action in parser._actions
                if isinstance(action, argparse._SubParsersAction))


def _command(arguments: list[str]) -> int:
    debug = "--debug" in arguments
    try:
        parser = build_parser()
        args = parser.parse_args(sweep_shorthand(parser, arguments))
        debug = bool(getattr(args, "debug", False)) or debug
        configure_logging(args.verbose, debug)
        from srh_core.cli.checks import check_arguments

        check_arguments(args)
        return int(args.handler(args))
    except BrokenPipeError:
        raise  # main's: most likely the reader of the output went away
    except (SRHarnessError, OSError) as error:
        return _report(error, debug)
    except KeyboardInterrupt:
        print("srh: interrupted", file=sys.stderr)
        return 130


def _silence_closed_outputs() -> bool:
    """Point stdout and stderr at os.devnull where their reader is gone; whether one was.

    Nothing more can reach that reader, and Python would report the data still
    buffered when it flushes the stream at exit ("Exception ignored ...").
    """
    closed = False
    for stream in (sys.stdout, sys.stderr):
        try:
            descriptor = stream.fileno()
        except (AttributeError, OSError, ValueError):  # replaced, e.g. captured by a test
            continue
        if _reader_gone(descriptor):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, descriptor)
            os.close(devnull)
            closed = True
    return closed


def _reader_gone(descriptor: int) -> bool:
    """Whether ``descriptor`` is a pipe or socket whose reading end was closed."""
    if not hasattr(select, "poll"):  # Windows: a broken pipe here is the output's
        return True
    poll = select.poll()
    poll.register(descriptor, 0)  # POLLERR and POLLHUP are always reported
    return any(events & (select.POLLERR | select.POLLHUP) for _, events in poll.poll(0))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

"""Shared pieces of the workspace shell commands: context, output, options, input."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from srh_core.errors import WorkspaceError
from srh_core.workspace.workspace import Workspace

#: Largest input (file or pipe) a text command reads; the rest is ignored with a warning.
MAX_INPUT_BYTES = 32 * 1024 * 1024
#: Largest total input of one command (e.g. ``cat`` of many files).
MAX_TOTAL_INPUT_BYTES = 64 * 1024 * 1024


class CommandError(Exception):
    """A command failed; the message goes to stderr (prefixed by the command name)."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@dataclass
class CommandOutput:
    """What one command produced (mutable while the command builds it)."""

    stdout: list[str] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)
    exit_code: int = 0
    bytes_read: int = 0

    def error(self, message: str, exit_code: int = 1) -> None:
        """Record a non-fatal error (the command goes on with the next operand)."""
        self.stderr.append(message)
        self.exit_code = max(self.exit_code, exit_code)


@dataclass(frozen=True)
class CommandContext:
    """The workspace a command runs in and the text it receives on stdin."""

    workspace: Workspace
    stdin: str | None = None


@dataclass(frozen=True)
class Options:
    """Parsed short options: flags seen, option values, and operands."""

    flags: frozenset[str]
    values: dict[str, str]
    operands: list[str]

    def value(self, name: str, default: str | None = None) -> str | None:
        """The value of option ``name`` (last occurrence wins)."""
        return self.values.get(name, default)


def parse_options(
    command: str, args: Sequence[str], flags: str, valued: str = "", *, numeric: bool = False
) -> Options:
    """Parse short options such as ``-la``, ``-n 5``, ``-n5`` and ``--``.

    Args:
        command: Command name, for messages.
        args: Arguments after the command name.
        flags: Letters of options without a value.
        valued: Letters of options that take a value.
        numeric: Accept ``-5`` as ``-n 5`` (head, tail).

    Raises:
        CommandError: An option is unknown or lacks its value (exit code 2).
    """
    seen: set[str] = set()
    values: dict[str, str] = {}
    operands: list[str] = []
    index = 0
    while index < len(args):
        arg = args[index]
        index += 1
        if arg == "--":
            operands += args[index:]
            break
        if arg.startswith("--"):
            raise CommandError(f"unsupported option {arg!r}; supported: "
                               f"{_supported(flags, valued)}", 2)
        if arg == "-" or not arg.startswith("-"):
            operands.append(arg)
            continue
        if numeric and arg[1:].isdigit():
            values["n"] = arg[1:]
            continue
        index = _short_cluster(command, arg, args, index, flags, valued, seen, values)
    return Options(frozenset(seen), values, operands)


def _short_cluster(
    command: str, arg: str, args: Sequence[str], index: int, flags: str, valued: str,
    seen: set[str], values: dict[str, str],
) -> int:
    for position, letter in enumerate(arg[1:], start=1):
        if letter in valued:
            value = arg[position + 1:]
            if not value:
                if index >= len(args):
                    raise CommandError(f"option -{letter} needs a value", 2)
                value, index = args[index], index + 1
            values[letter] = value
            return index
        if letter not in flags:
            raise CommandError(f"unsupported option -{letter}; supported: "
                               f"{_supported(flags, valued)}", 2)
        seen.add(letter)
    return index


def _supported(flags: str, valued: str) -> str:
    parts = [f"-{letter}" for letter in flags] + [f"-{letter} VALUE" for letter in valued]
    return " ".join(parts) or "none"


def parse_count(command: str, text: str | None, default: int) -> int:
    """Parse a non-negative line count such as ``-n 5``."""
    if text is None:
        return default
    if not text.lstrip("+").isdigit():
        raise CommandError(f"invalid count {text!r}: expected a non-negative integer", 2)
    return int(text.lstrip("+"))


def read_input(context: CommandContext, operand: str | None, output: CommandOutput) -> str:
    """Text of a file operand, or of stdin when ``operand`` is ``None`` or ``-``.

    Raises:
        CommandError: The file is missing, a directory, or outside the workspace.
    """
    if operand in (None, "-"):
        return context.stdin or ""
    try:
        path = context.workspace.resolve(operand)
    except WorkspaceError as error:
        raise CommandError(f"{operand}: {error}") from error
    if path.is_dir():
        raise CommandError(f"{operand}: is a directory")
    if not path.is_file():
        raise CommandError(f"{operand}: no such file")
    with path.open("rb") as handle:
        data = handle.read(MAX_INPUT_BYTES + 1)
    if len(data) > MAX_INPUT_BYTES:
        output.error(f"{operand}: only the first {MAX_INPUT_BYTES} bytes were read")
        data = data[:MAX_INPUT_BYTES]
    output.bytes_read += len(data)
    if output.bytes_read > MAX_TOTAL_INPUT_BYTES:
        raise CommandError(f"input limit of {MAX_TOTAL_INPUT_BYTES} bytes per command exceeded")
    return data.decode("utf-8", errors="replace")


def split_lines(text: str) -> list[str]:
    """Lines without their terminators (a final newline adds no empty line)."""
    return text.splitlines()


def join_lines(lines: Sequence[str]) -> str:
    """Join lines with newlines, ending with one when there is any line."""
    return "".join(line + "\n" for line in lines)

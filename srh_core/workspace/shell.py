"""``workspace_shell``: a restricted command line over a :class:`Workspace`.

No shell is involved (the only process ever started is grep's time-limited
matcher for a pattern that may backtrack, see
:mod:`~srh_core.workspace.grep_match`): the line is tokenised by
:mod:`~srh_core.workspace.shell_parse` (pipelines only; ``;``, ``&&``,
redirections, ``$(...)``, backticks and ``$VAR`` are refused before anything
runs), unquoted glob words are expanded by :func:`expand_glob` inside the
workspace (no ``..``, no absolute patterns, hidden names only when the
pattern segment starts with ``.``; a pattern that matches nothing stays
literal, as in sh), and each command is a pure-Python function whose every
path goes through :meth:`Workspace.resolve`. Supported commands:

- ``ls [-l -a -R]``, ``cat [-n]``, ``head``/``tail [-n N]``, ``wc [-l -w -c]``,
  ``grep [-i -v -n -c -E -F -l] PATTERN``, ``sort [-n -r -u -f -k N[,M] -t SEP]``,
  ``cut -d SEP -f LIST | -c LIST``;
- ``cp [-r]``, ``mv``, ``rm [-r -f]``, ``mkdir [-p]``;
- ``gzip [-k -f -d]``, ``gunzip [-k -f -c]``, ``unzip [-o -l] ARCHIVE [-d DIR]``,
  ``tar -x|-c|-t [-z -v] -f ARCHIVE [-C DIR]`` (see
  :mod:`~srh_core.workspace.shell_archive` for the extraction guards).

Pipelines pass text from one stage to the next (at most ``MAX_INPUT_BYTES``);
the exit code is the last stage's, stderr collects every stage's messages,
and stdout is cut at ``output_limit_bytes`` with a note. Exit codes: 0 ok,
1 failure (or no grep match), 2 usage or syntax error, 127 unknown command.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase

from srh_core.errors import ConfigurationError, WorkspaceError, did_you_mean
from srh_core.workspace.paths import split_relative
from srh_core.workspace.shell_archive import cmd_gunzip, cmd_gzip, cmd_tar, cmd_unzip
from srh_core.workspace.shell_common import (
    MAX_INPUT_BYTES,
    CommandContext,
    CommandError,
    CommandOutput,
)
from srh_core.workspace.shell_files import cmd_cp, cmd_mkdir, cmd_mv, cmd_rm
from srh_core.workspace.shell_parse import ShellSyntaxError, Word, parse_pipeline
from srh_core.workspace.shell_text import (
    cmd_cat,
    cmd_cut,
    cmd_grep,
    cmd_head,
    cmd_ls,
    cmd_sort,
    cmd_tail,
    cmd_wc,
)
from srh_core.workspace.workspace import Workspace

DEFAULT_OUTPUT_LIMIT_BYTES = 64 * 1024
MIN_OUTPUT_LIMIT_BYTES = 256
MAX_OUTPUT_LIMIT_BYTES = 16 * 1024 * 1024
MAX_GLOB_MATCHES = 1000
EXIT_USAGE = 2
EXIT_UNKNOWN_COMMAND = 127

Command = Callable[[CommandContext, Sequence[str], CommandOutput], None]
COMMANDS: dict[str, Command] = {
    "ls": cmd_ls, "cat": cmd_cat, "head": cmd_head, "tail": cmd_tail, "wc": cmd_wc,
    "grep": cmd_grep, "sort": cmd_sort, "cut": cmd_cut, "cp": cmd_cp, "mv": cmd_mv,
    "rm": cmd_rm, "mkdir": cmd_mkdir, "gunzip": cmd_gunzip, "gzip": cmd_gzip,
    "unzip": cmd_unzip, "tar": cmd_tar,
}
ALLOWED_COMMANDS = tuple(COMMANDS)


@dataclass(frozen=True)
class ShellResult:
    """Outcome of one command line.

    Attributes:
        stdout: Output of the last stage (cut at the limit, with a note).
        stderr: Messages of every stage, prefixed by the command name.
        exit_code: Exit status of the last stage (see the module docstring).
        stdout_truncated: stdout was cut at ``output_limit_bytes``.
    """

    stdout: str
    stderr: str
    exit_code: int
    stdout_truncated: bool = False

    @property
    def ok(self) -> bool:
        """The last stage exited with status 0."""
        return self.exit_code == 0


def expand_glob(workspace: Workspace, pattern: str) -> list[str]:
    """Expand a glob word inside the workspace; ``[pattern]`` when nothing matches."""
    try:
        segments = split_relative(pattern)
    except WorkspaceError:
        return [pattern]  # the command reports the invalid path itself
    matches = [""]
    for part in segments:
        following = []
        for prefix in matches:
            following += _glob_step(workspace, prefix, part)
            if len(following) > MAX_GLOB_MATCHES:
                return following[:MAX_GLOB_MATCHES]
        matches = following
    return sorted(matches) or [pattern]


def _glob_step(workspace: Workspace, prefix: str, part: str) -> list[str]:
    join = (lambda name: f"{prefix}/{name}") if prefix else (lambda name: name)
    if not any(char in part for char in "*?["):
        return [join(part)] if _exists(workspace, join(part)) else []
    try:
        directory = workspace.resolve(prefix or ".")
    except WorkspaceError:
        return []
    if not directory.is_dir():
        return []
    names = sorted(entry.name for entry in os.scandir(directory))
    return [join(name) for name in names
            if fnmatchcase(name, part) and (part.startswith(".") or not name.startswith("."))]


def _exists(workspace: Workspace, logical: str) -> bool:
    try:
        return workspace.exists(logical)
    except WorkspaceError:
        return False


class WorkspaceShell:
    """Run restricted command lines in one workspace.

    Args:
        workspace: The workspace every path is resolved in.
        output_limit_bytes: stdout capture limit in [256, 16 MiB].

    Raises:
        ConfigurationError: ``output_limit_bytes`` is out of range.
    """

    def __init__(self, workspace: Workspace,
                 output_limit_bytes: int = DEFAULT_OUTPUT_LIMIT_BYTES) -> None:
        if isinstance(output_limit_bytes, bool) or not isinstance(output_limit_bytes, int) or \
                not MIN_OUTPUT_LIMIT_BYTES <= output_limit_bytes <= MAX_OUTPUT_LIMIT_BYTES:
            raise ConfigurationError(
                f"The 'output_limit_bytes' setting of workspace_shell must be an int in "
                f"[{MIN_OUTPUT_LIMIT_BYTES}, {MAX_OUTPUT_LIMIT_BYTES}]. "
                f"Got {output_limit_bytes!r} instead.", setting="output_limit_bytes")
        self.workspace = workspace
        self.output_limit_bytes = output_limit_bytes

    def run(self, command_line: str) -> ShellResult:
        """Parse and run ``command_line``; never raises for bad input.

        Args:
            command_line: e.g. ``"cat data.csv | head -5"``.

        Returns:
            The pipeline's stdout, stderr and exit code.
        """
        try:
            stages = parse_pipeline(command_line)
        except ShellSyntaxError as error:
            return ShellResult("", f"workspace_shell: {error}\n", EXIT_USAGE)
        for stage in stages:
            if stage[0].text not in COMMANDS:
                return ShellResult("", _unknown_command(stage[0].text), EXIT_UNKNOWN_COMMAND)
        return self._run_stages(stages)

    def _run_stages(self, stages: list[list[Word]]) -> ShellResult:
        stdin: str | None = None
        errors: list[str] = []
        output = CommandOutput()
        for stage in stages:
            output = self._run_one(stage, stdin)
            errors += output.stderr
            stdin = "".join(output.stdout)[:MAX_INPUT_BYTES]
        stdout, truncated = _bounded("".join(output.stdout), self.output_limit_bytes)
        return ShellResult(stdout, "".join(line.rstrip("\n") + "\n" for line in errors),
                           output.exit_code, truncated)

    def _run_one(self, stage: list[Word], stdin: str | None) -> CommandOutput:
        name = stage[0].text
        args: list[str] = []
        for word in stage[1:]:
            args += expand_glob(self.workspace, word.text) if word.glob else [word.text]
        output = CommandOutput()
        try:
            COMMANDS[name](CommandContext(self.workspace, stdin), args, output)
        except CommandError as error:
            output.error(f"{name}: {error}", error.exit_code)
        except (WorkspaceError, OSError) as error:
            output.error(f"{name}: {error}")
        output.stderr = [line if line.startswith(f"{name}: ") else f"{name}: {line}"
                         for line in output.stderr]
        return output


def run_workspace_shell(workspace: Workspace, command_line: str,
                        output_limit_bytes: int = DEFAULT_OUTPUT_LIMIT_BYTES) -> ShellResult:
    """Run one restricted command line in ``workspace`` (see :class:`WorkspaceShell`)."""
    return WorkspaceShell(workspace, output_limit_bytes).run(command_line)


def _unknown_command(name: str) -> str:
    return (f"workspace_shell: unknown command {name!r}.{did_you_mean(name, COMMANDS)} "
            f"Allowed commands: {', '.join(ALLOWED_COMMANDS)}.\n")


def _bounded(text: str, limit: int) -> tuple[str, bool]:
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text, False
    kept = data[:limit].decode("utf-8", errors="ignore")
    return f"{kept}\n... [output truncated: {len(data) - limit} bytes omitted]", True

"""File-changing commands of the workspace shell: cp mv rm mkdir.

Every source goes through :meth:`Workspace.resolve` (reading mounts is fine)
and every destination through ``resolve(..., for_write=True)`` or
:meth:`Workspace.resolve_removable`, so mounts stay read-only, locks hold and
no path leaves the workspace. Copies never follow symlinks inside a tree
(links are skipped with a warning) and are capped at ``MAX_COPY_BYTES``.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path

from srh_core.errors import WorkspaceError
from srh_core.workspace.shell_common import (
    CommandContext,
    CommandError,
    CommandOutput,
    parse_options,
)

MAX_COPY_BYTES = 512 * 1024 * 1024
COPY_CHUNK_BYTES = 1024 * 1024


def _join(*parts: str) -> str:
    return "/".join(part.strip("/") for part in parts if part.strip("/") not in ("", "."))


def _basename(logical: str) -> str:
    return logical.rstrip("/").rsplit("/", 1)[-1]


def _destination(context: CommandContext, source: str, target: str, many: bool) -> str:
    """Logical destination of ``source``: into ``target`` if it is a directory."""
    target_path = context.workspace.resolve(target)
    if target_path.is_dir():
        return _join(target, _basename(source))
    if many:
        raise CommandError(f"target {target!r} is not a directory")
    return target


class _Budget:
    """Bytes left to copy in one command."""

    def __init__(self, limit: int) -> None:
        self.left = limit

    def copy(self, source: Path, destination: Path) -> None:
        with source.open("rb") as reader, destination.open("wb") as writer:
            while chunk := reader.read(COPY_CHUNK_BYTES):
                self.left -= len(chunk)
                if self.left < 0:
                    raise CommandError(f"copy stopped: more than {MAX_COPY_BYTES} bytes")
                writer.write(chunk)


def _copy_file(context: CommandContext, source: Path, logical: str, budget: _Budget) -> None:
    destination = context.workspace.resolve(logical, for_write=True)
    if destination.is_dir():
        raise CommandError(f"cannot overwrite directory {logical!r} with a file")
    if destination.exists() and os.path.samefile(source, destination):
        raise CommandError(f"{logical!r} and its source are the same file")
    budget.copy(source, destination)


def _copy_tree(context: CommandContext, source: Path, logical: str, budget: _Budget,
               output: CommandOutput) -> None:
    context.workspace.mkdir(logical)
    for entry in sorted(os.scandir(source), key=lambda item: item.name):
        child = _join(logical, entry.name)
        if entry.is_symlink():
            output.error(f"cp: skipping symlink {entry.name!r} (links are not copied)")
        elif entry.is_dir(follow_symlinks=False):
            _copy_tree(context, Path(entry.path), child, budget, output)
        elif entry.is_file(follow_symlinks=False):
            _copy_file(context, Path(entry.path), child, budget)


def cmd_cp(context: CommandContext, args: Sequence[str], output: CommandOutput) -> None:
    """cp [-r] SOURCE... DEST"""
    options = parse_options("cp", args, "rRf")
    if len(options.operands) < 2:
        raise CommandError("usage: cp [-r] SOURCE... DEST", 2)
    *sources, target = options.operands
    budget = _Budget(MAX_COPY_BYTES)
    for source in sources:
        try:
            _copy_one(context, source, target, len(sources) > 1, options.flags, budget, output)
        except (CommandError, WorkspaceError, OSError) as error:
            output.error(f"cp: {source}: {error}")


def _copy_one(context: CommandContext, source: str, target: str, many: bool,
              flags: frozenset[str], budget: _Budget, output: CommandOutput) -> None:
    source_path = context.workspace.resolve(source)
    if not source_path.exists():
        raise CommandError("no such file or directory")
    logical = _destination(context, source, target, many)
    if not source_path.is_dir():
        _copy_file(context, source_path, logical, budget)
        return
    if not flags & {"r", "R"}:
        raise CommandError("is a directory (use cp -r)")
    destination = context.workspace.resolve(logical, for_write=True)
    if destination == source_path or destination.is_relative_to(source_path):
        raise CommandError("cannot copy a directory into itself")
    _copy_tree(context, source_path, logical, budget, output)


def cmd_mv(context: CommandContext, args: Sequence[str], output: CommandOutput) -> None:
    """mv SOURCE... DEST"""
    options = parse_options("mv", args, "f")
    if len(options.operands) < 2:
        raise CommandError("usage: mv SOURCE... DEST", 2)
    *sources, target = options.operands
    for source in sources:
        try:
            _move_one(context, source, target, len(sources) > 1)
        except (CommandError, WorkspaceError, OSError) as error:
            output.error(f"mv: {source}: {error}")


def _move_one(context: CommandContext, source: str, target: str, many: bool) -> None:
    workspace = context.workspace
    source_path = workspace.resolve_removable(source)
    if not os.path.lexists(source_path):
        raise CommandError("no such file or directory")
    logical = _destination(context, source, target, many)
    destination_path = workspace.resolve(logical, for_write=True)
    if os.path.lexists(destination_path):
        destination_path = workspace.resolve_removable(logical)
        if destination_path.is_dir() and not destination_path.is_symlink():
            raise CommandError(f"cannot overwrite directory {logical!r}")
    if source_path.is_dir() and destination_path.is_relative_to(source_path.resolve()):
        raise CommandError("cannot move a directory into itself")
    os.replace(source_path, destination_path)


def cmd_rm(context: CommandContext, args: Sequence[str], output: CommandOutput) -> None:
    """rm [-r] [-f] PATH..."""
    options = parse_options("rm", args, "rRf")
    if not options.operands:
        raise CommandError("usage: rm [-r] [-f] PATH...", 2)
    for operand in options.operands:
        try:
            _remove_one(context, operand, options.flags)
        except (CommandError, WorkspaceError, OSError) as error:
            output.error(f"rm: {operand}: {error}")


def _remove_one(context: CommandContext, operand: str, flags: frozenset[str]) -> None:
    entry = context.workspace.resolve_removable(operand)
    if not os.path.lexists(entry):
        if "f" not in flags:
            raise CommandError("no such file or directory")
        return
    if entry.is_dir() and not entry.is_symlink():
        if not flags & {"r", "R"}:
            raise CommandError("is a directory (use rm -r)")
        shutil.rmtree(entry)
    else:
        entry.unlink()


def cmd_mkdir(context: CommandContext, args: Sequence[str], output: CommandOutput) -> None:
    """mkdir [-p] DIR..."""
    options = parse_options("mkdir", args, "p")
    if not options.operands:
        raise CommandError("usage: mkdir [-p] DIR...", 2)
    for operand in options.operands:
        try:
            path = context.workspace.resolve(operand, for_write=True)
            if os.path.lexists(path) and "p" not in options.flags:
                raise CommandError("file exists")
            if "p" not in options.flags and not path.parent.is_dir():
                raise CommandError("parent directory does not exist (use mkdir -p)")
            context.workspace.mkdir(operand, parents=True)
        except (CommandError, WorkspaceError, OSError) as error:
            output.error(f"mkdir: {operand}: {error}")

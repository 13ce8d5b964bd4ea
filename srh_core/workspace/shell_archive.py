"""Archive commands of the workspace shell: gzip gunzip unzip tar.

Extraction is where workspaces usually get escaped, so every archive is
checked *before* anything is written: at most ``MAX_ARCHIVE_MEMBERS``
members; member names must be plain relative paths (no absolute names, no
drive letters, no backslashes, no ``..``, no NUL); only regular files and
directories are accepted (symlinks, hard links, devices and fifos are
refused); declared sizes must add up to at most ``MAX_EXTRACT_BYTES``. While
writing, actual bytes are counted against the same budget (declared sizes can
lie, and gzip streams declare nothing), and every target goes through
``Workspace.resolve(..., for_write=True)`` so locks, mounts and symlinked
directories are honoured. A gzip stream that inflates past the budget is
deleted and reported as a possible decompression bomb.
"""

from __future__ import annotations

import gzip
import os
import re
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import IO

from srh_core.errors import WorkspaceError
from srh_core.workspace.paths import split_relative
from srh_core.workspace.shell_common import (
    MAX_INPUT_BYTES,
    CommandContext,
    CommandError,
    CommandOutput,
    parse_options,
)

MAX_ARCHIVE_MEMBERS = 10_000
MAX_EXTRACT_BYTES = 512 * 1024 * 1024
CHUNK_BYTES = 1024 * 1024
DRIVE_PREFIX = re.compile(r"^[A-Za-z]:")


class _Budget:
    """Bytes that may still be extracted by one command."""

    def __init__(self) -> None:
        self.left = MAX_EXTRACT_BYTES

    def stream(self, reader: IO[bytes], destination: Path) -> None:
        """Copy ``reader`` into ``destination``; delete it if the budget runs out."""
        try:
            with destination.open("wb") as writer:
                while chunk := reader.read(CHUNK_BYTES):
                    self.left -= len(chunk)
                    if self.left < 0:
                        raise CommandError(f"extracted data exceeds {MAX_EXTRACT_BYTES} bytes "
                                           "(possible decompression bomb); stopped")
                    writer.write(chunk)
        except BaseException:
            destination.unlink(missing_ok=True)
            raise


def safe_member_name(name: str) -> str:
    """Validate an archive member name; return it as a logical relative path.

    Raises:
        CommandError: The name is absolute, uses ``..``, a drive or backslashes.
    """
    cleaned = name[2:] if name.startswith("./") else name
    if (not cleaned.strip("/") or cleaned.startswith("/") or "\\" in cleaned
            or DRIVE_PREFIX.match(cleaned)):
        raise CommandError(f"refusing archive member {name!r}: member names must be plain "
                           "relative paths")
    try:
        return "/".join(split_relative(cleaned))
    except WorkspaceError as error:
        raise CommandError(f"refusing archive member {name!r}: {error}") from error


def _resolve_target(context: CommandContext, logical: str) -> Path:
    try:
        return context.workspace.resolve(logical, for_write=True)
    except WorkspaceError as error:
        raise CommandError(str(error)) from error


def _gzip_one(context: CommandContext, operand: str, keep: bool, force: bool) -> None:
    workspace = context.workspace
    source = workspace.resolve(operand)
    if not source.is_file():
        raise CommandError("no such file")
    if operand.endswith(".gz"):
        raise CommandError("already has the .gz suffix")
    target = _resolve_target(context, operand + ".gz")
    if os.path.lexists(target) and not force:
        raise CommandError(f"{operand}.gz already exists (use -f)")
    with source.open("rb") as reader, gzip.open(target, "wb") as writer:
        while chunk := reader.read(CHUNK_BYTES):
            writer.write(chunk)
    if not keep:
        workspace.resolve_removable(operand).unlink()


def _gunzip_one(context: CommandContext, operand: str, flags: frozenset[str],
                output: CommandOutput) -> None:
    workspace = context.workspace
    source = workspace.resolve(operand)
    if not source.is_file():
        raise CommandError("no such file")
    try:
        if "c" in flags:
            with gzip.open(source, "rb") as reader:
                data = reader.read(MAX_INPUT_BYTES)
            output.stdout.append(data.decode("utf-8", errors="replace"))
            return
        _gunzip_to_file(context, operand, source, flags)
    except (OSError, EOFError, zlib.error) as error:
        raise CommandError(f"not a valid gzip file ({error})") from error


def _gunzip_to_file(context: CommandContext, operand: str, source: Path,
                    flags: frozenset[str]) -> None:
    if operand.endswith(".tgz"):
        logical = operand[:-4] + ".tar"
    elif operand.endswith(".gz") and len(operand) > 3:
        logical = operand[:-3]
    else:
        raise CommandError("unknown suffix (expected .gz or .tgz)")
    target = _resolve_target(context, logical)
    if os.path.lexists(target) and "f" not in flags:
        raise CommandError(f"{logical} already exists (use -f)")
    with gzip.open(source, "rb") as reader:
        _Budget().stream(reader, target)
    if "k" not in flags:
        context.workspace.resolve_removable(operand).unlink()


def cmd_gzip(context: CommandContext, args: Sequence[str], output: CommandOutput) -> None:
    """gzip [-k] [-f] [-d] [-c] FILE... (-c only with -d: text to stdout)."""
    options = parse_options("gzip", args, "kfdc")
    if not options.operands:
        raise CommandError("usage: gzip [-k] [-f] [-d] FILE...", 2)
    if "c" in options.flags and "d" not in options.flags:
        raise CommandError("-c is supported for decompression only (gzip -dc, gunzip -c)", 2)
    for operand in options.operands:
        try:
            if "d" in options.flags:
                _gunzip_one(context, operand, options.flags, output)
            else:
                _gzip_one(context, operand, "k" in options.flags, "f" in options.flags)
        except (CommandError, WorkspaceError, OSError) as error:
            output.error(f"gzip: {operand}: {error}")


def cmd_gunzip(context: CommandContext, args: Sequence[str], output: CommandOutput) -> None:
    """gunzip [-k] [-f] [-c] FILE.gz..."""
    options = parse_options("gunzip", args, "kfc")
    if not options.operands:
        raise CommandError("usage: gunzip [-k] [-f] [-c] FILE.gz...", 2)
    for operand in options.operands:
        try:
            _gunzip_one(context, operand, options.flags, output)
        except (CommandError, WorkspaceError, OSError) as error:
            output.error(f"gunzip: {operand}: {error}")


def _check_totals(count: int, total: int) -> None:
    if count > MAX_ARCHIVE_MEMBERS:
        raise CommandError(f"archive has more than {MAX_ARCHIVE_MEMBERS} members; refused")
    if total > MAX_EXTRACT_BYTES:
        raise CommandError(f"archive would extract more than {MAX_EXTRACT_BYTES} bytes; "
                           "refused (possible decompression bomb)")


def _zip_plan(context: CommandContext, archive: zipfile.ZipFile, base: str,
              overwrite: bool) -> list[tuple[zipfile.ZipInfo, str]]:
    members = archive.infolist()
    _check_totals(len(members), sum(info.file_size for info in members))
    plan = []
    for info in members:
        mode = info.external_attr >> 16
        if stat.S_ISLNK(mode) or (mode and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))):
            raise CommandError(f"refusing archive member {info.filename!r}: only regular "
                               "files and directories can be extracted")
        if info.flag_bits & 0x1:
            raise CommandError(f"refusing encrypted archive member {info.filename!r}")
        logical = "/".join(part for part in (base, safe_member_name(info.filename))
                           if part not in ("", "."))
        target = _resolve_target(context, logical)
        if not info.is_dir() and os.path.lexists(target) and not overwrite:
            raise CommandError(f"{logical} already exists (use unzip -o to overwrite)")
        plan.append((info, logical))
    return plan


def cmd_unzip(context: CommandContext, args: Sequence[str], output: CommandOutput) -> None:
    """unzip [-o] [-l] [-q] ARCHIVE [-d DIR]"""
    options = parse_options("unzip", args, "olq", "d")
    if len(options.operands) != 1:
        raise CommandError("usage: unzip [-o] [-l] ARCHIVE [-d DIR]", 2)
    source = context.workspace.resolve(options.operands[0])
    if not source.is_file():
        raise CommandError(f"{options.operands[0]}: no such file")
    try:
        with zipfile.ZipFile(source) as archive:
            if "l" in options.flags:
                for info in archive.infolist()[:MAX_ARCHIVE_MEMBERS]:
                    output.stdout.append(f"{info.file_size:>10}  {info.filename}\n")
                return
            base = options.value("d", ".") or "."
            _extract_zip(context, archive, _zip_plan(context, archive, base, "o" in
                                                     options.flags), output, "q" in options.flags)
    except (zipfile.BadZipFile, zlib.error, EOFError) as error:
        raise CommandError(f"{options.operands[0]}: not a valid zip archive ({error})") from error


def _extract_zip(context: CommandContext, archive: zipfile.ZipFile,
                 plan: list[tuple[zipfile.ZipInfo, str]], output: CommandOutput,
                 quiet: bool) -> None:
    budget = _Budget()
    for info, logical in plan:
        if info.is_dir():
            context.workspace.mkdir(logical, parents=True)
            continue
        parent = logical.rpartition("/")[0]
        if parent:
            context.workspace.mkdir(parent, parents=True)
        with archive.open(info) as reader:
            budget.stream(reader, _resolve_target(context, logical))
        if not quiet:
            output.stdout.append(f"  inflating: {logical}\n")


def _tar_args(args: Sequence[str]) -> list[str]:
    # "tar xzf a.tgz" is common; treat a leading bundle without a dash as options.
    if args and not args[0].startswith("-") and set(args[0]) <= set("xctzvfC"):
        return ["-" + args[0], *args[1:]]
    return list(args)


def cmd_tar(context: CommandContext, args: Sequence[str], output: CommandOutput) -> None:
    """tar -x|-c|-t [-z] [-v] -f ARCHIVE [-C DIR] [PATH...]"""
    options = parse_options("tar", _tar_args(args), "xctzv", "fC")
    modes = options.flags & {"x", "c", "t"}
    archive = options.value("f")
    if len(modes) != 1 or not archive:
        raise CommandError("usage: tar -x|-c|-t [-z] [-v] -f ARCHIVE [-C DIR] [PATH...]", 2)
    base = options.value("C", ".") or "."
    if "c" in modes:
        _tar_create(context, archive, base, options.operands, options.flags, output)
        return
    source = context.workspace.resolve(archive)
    if not source.is_file():
        raise CommandError(f"{archive}: no such file")
    try:
        with tarfile.open(source, "r:*") as tar:
            members = _tar_members(tar)
            if "t" in modes:
                output.stdout += [f"{member.name}\n" for member in members]
                return
            _tar_extract(context, tar, members, base, "v" in options.flags, output)
    except (tarfile.TarError, zlib.error, EOFError) as error:
        raise CommandError(f"{archive}: not a valid tar archive ({error})") from error


def _tar_members(tar: tarfile.TarFile) -> list[tarfile.TarInfo]:
    members = []
    total = 0
    for member in tar:
        members.append(member)
        total += member.size
        # Checked while reading headers, so a huge archive is refused early.
        _check_totals(len(members), total)
    return members


def _tar_extract(context: CommandContext, tar: tarfile.TarFile,
                 members: list[tarfile.TarInfo], base: str, verbose: bool,
                 output: CommandOutput) -> None:
    plan = []
    for member in members:
        if not (member.isfile() or member.isdir()):
            raise CommandError(f"refusing archive member {member.name!r}: only regular files "
                               "and directories can be extracted (no links or devices)")
        logical = "/".join(part for part in (base, safe_member_name(member.name))
                           if part not in ("", "."))
        _resolve_target(context, logical)
        plan.append((member, logical))
    budget = _Budget()
    for member, logical in plan:
        if member.isdir():
            context.workspace.mkdir(logical, parents=True)
        else:
            parent = logical.rpartition("/")[0]
            if parent:
                context.workspace.mkdir(parent, parents=True)
            reader = tar.extractfile(member)
            if reader is not None:
                budget.stream(reader, _resolve_target(context, logical))
        if verbose:
            output.stdout.append(logical + "\n")


def _tar_inputs(context: CommandContext, base: str, operand: str,
                archive_path: Path) -> Iterable[tuple[Path, str]]:
    logical = "/".join(part for part in (base, operand) if part not in ("", "."))
    path = context.workspace.resolve(logical)
    if not os.path.lexists(path):
        raise CommandError(f"{operand}: no such file or directory")
    yield path, operand
    if path.is_dir() and not path.is_symlink():
        for root, dirs, files in os.walk(path):
            dirs.sort()
            for name in sorted(dirs) + sorted(files):
                child = Path(root) / name
                if not child.is_symlink() and child != archive_path:
                    yield child, f"{operand.rstrip('/')}/{child.relative_to(path).as_posix()}"


def _tar_create(context: CommandContext, archive: str, base: str, operands: Sequence[str],
                flags: frozenset[str], output: CommandOutput) -> None:
    if not operands:
        raise CommandError("tar -c needs at least one PATH to archive", 2)
    target = _resolve_target(context, archive)
    budget = MAX_EXTRACT_BYTES
    with tarfile.open(target, "w:gz" if "z" in flags else "w") as tar:
        for operand in operands:
            for path, name in _tar_inputs(context, base, operand, target):
                if path == target:
                    continue
                budget -= path.stat().st_size if path.is_file() else 0
                if budget < 0:
                    raise CommandError(f"archive would exceed {MAX_EXTRACT_BYTES} bytes")
                tar.add(path, arcname=name, recursive=False)
                if "v" in flags:
                    output.stdout.append(name + "\n")

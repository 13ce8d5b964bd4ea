"""Read-only text commands of the workspace shell: ls cat head tail wc grep sort cut.

Each is a pure-Python function over the :class:`Workspace`; none starts a
process. grep patterns are POSIX basic regexes by default (``\\|``, ``\\(``,
``\\+`` are the operators, as in GNU grep) and extended ones with ``-E``; both
are translated to Python's ``re`` (classes like ``[[:digit:]]`` are not
supported; ``\\d``, ``\\w`` work). Patterns with nested unbounded repetition such
as ``(a+)+`` are refused at once; any other pattern that backtracks for long is
stopped at a time bound (see :mod:`~srh_core.workspace.grep_match`).
"""

from __future__ import annotations

import re
import stat
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from srh_core.errors import WorkspaceError
from srh_core.workspace.grep_match import LineRegex
from srh_core.workspace.shell_common import (
    CommandContext,
    CommandError,
    CommandOutput,
    Options,
    join_lines,
    parse_count,
    parse_options,
    read_input,
    split_lines,
)

MAX_LS_ENTRIES = 5000
MAX_LS_LINES = 20_000
MAX_PATTERN_CHARS = 1000
#: Characters whose escaped and plain forms swap meaning between basic regexes and Python.
BRE_SWAPPED = frozenset("|(){}+?")


def _inputs(context: CommandContext, operands: Sequence[str]) -> list[str | None]:
    return list(operands) if operands else [None]


def cmd_cat(context: CommandContext, args: Sequence[str], output: CommandOutput) -> None:
    """cat [-n] [FILE...]"""
    options = parse_options("cat", args, "n")
    number = 0
    for operand in _inputs(context, options.operands):
        try:
            lines = split_lines(read_input(context, operand, output))
        except CommandError as error:
            output.error(str(error))
            continue
        for line in lines:
            number += 1
            output.stdout.append(f"{number:6}\t{line}\n" if "n" in options.flags else line + "\n")


def _head_tail(name: str, context: CommandContext, args: Sequence[str],
               output: CommandOutput) -> None:
    options = parse_options(name, args, "", "n", numeric=True)
    raw = options.value("n")
    count = parse_count(name, raw, 10)
    from_start = name == "tail" and raw is not None and raw.startswith("+")
    operands = _inputs(context, options.operands)
    for index, operand in enumerate(operands):
        try:
            lines = split_lines(read_input(context, operand, output))
        except CommandError as error:
            output.error(str(error))
            continue
        if len(operands) > 1:
            output.stdout.append(("\n" if index else "") + f"==> {operand} <==\n")
        if name == "head":
            chosen = lines[:count]
        else:
            chosen = lines[max(count - 1, 0):] if from_start else lines[-count:] if count else []
        output.stdout.append(join_lines(chosen))


def cmd_head(context: CommandContext, args: Sequence[str], output: CommandOutput) -> None:
    """head [-n N | -N] [FILE...]"""
    _head_tail("head", context, args, output)


def cmd_tail(context: CommandContext, args: Sequence[str], output: CommandOutput) -> None:
    """tail [-n N | -n +N | -N] [FILE...]"""
    _head_tail("tail", context, args, output)


def cmd_wc(context: CommandContext, args: Sequence[str], output: CommandOutput) -> None:
    """wc [-l] [-w] [-c] [FILE...]"""
    options = parse_options("wc", args, "lwc")
    chosen = [letter for letter in "lwc" if letter in options.flags] or ["l", "w", "c"]
    totals = dict.fromkeys("lwc", 0)
    operands = _inputs(context, options.operands)
    for operand in operands:
        try:
            text = read_input(context, operand, output)
        except CommandError as error:
            output.error(str(error))
            continue
        counts = {"l": text.count("\n"), "w": len(text.split()),
                  "c": len(text.encode("utf-8"))}
        for letter in totals:
            totals[letter] += counts[letter]
        output.stdout.append(_wc_line(counts, chosen, operand))
    if len(operands) > 1:
        output.stdout.append(_wc_line(totals, chosen, "total"))


def _wc_line(counts: dict[str, int], chosen: list[str], name: str | None) -> str:
    numbers = " ".join(f"{counts[letter]:7}" for letter in chosen)
    return f"{numbers} {name}\n" if name else numbers + "\n"


def _check_pattern(pattern: str) -> None:
    """Refuse patterns that are too long or nest unbounded repetitions."""
    if len(pattern) > MAX_PATTERN_CHARS:
        raise CommandError(f"pattern longer than {MAX_PATTERN_CHARS} characters", 2)
    if re.search(r"\([^()]*[*+}][^()]*\)\s*[*+{]", pattern):
        raise CommandError("pattern nests unbounded repetitions (like '(a+)+'), which can "
                           "run for minutes; simplify it or use -F for a fixed string", 2)


def basic_to_python(pattern: str) -> str:
    """Translate a POSIX basic regex (grep without -E) to Python syntax.

    In a basic regex ``| ( ) { } + ?`` are literal and their backslashed forms
    are operators (GNU extensions); in Python it is the other way round.
    """
    translated: list[str] = []
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\" and index + 1 < len(pattern):
            following = pattern[index + 1]
            translated.append(following if following in BRE_SWAPPED else char + following)
            index += 2
            continue
        translated.append("\\" + char if char in BRE_SWAPPED else char)
        index += 1
    return "".join(translated)


def _grep_matcher(options_flags: frozenset[str],
                  pattern: str) -> Callable[[list[str]], list[bool]]:
    """Whether each line matches: a fixed string, or a regex cut at a time bound."""
    ignore_case = "i" in options_flags
    if "F" in options_flags:
        needle = pattern.lower() if ignore_case else pattern
        return lambda lines: [needle in (line.lower() if ignore_case else line)
                              for line in lines]
    if "E" not in options_flags:
        pattern = basic_to_python(pattern)
    _check_pattern(pattern)
    return LineRegex(pattern, re.IGNORECASE if ignore_case else 0).matches


def cmd_grep(context: CommandContext, args: Sequence[str], output: CommandOutput) -> None:
    """grep [-i -v -n -c -E -F -l] PATTERN [FILE...] (exit 1 when nothing matches)."""
    options = parse_options("grep", args, "ivncEFlH", "e")
    operands = list(options.operands)
    pattern = options.value("e")
    if pattern is None:
        if not operands:
            raise CommandError("usage: grep [-ivncEFl] PATTERN [FILE...]", 2)
        pattern = operands.pop(0)
    matches = _grep_matcher(options.flags, pattern)
    inputs = _inputs(context, operands)
    found = False
    for operand in inputs:
        try:
            lines = split_lines(read_input(context, operand, output))
        except CommandError as error:
            output.error(str(error), 2)
            continue
        prefix = f"{operand}:" if len(inputs) > 1 or "H" in options.flags else ""
        found |= _grep_lines(options.flags, matches, lines, prefix, operand, output)
    if not found and output.exit_code == 0:
        output.exit_code = 1


def _grep_lines(flags: frozenset[str], matches: Callable[[list[str]], list[bool]],
                lines: list[str], prefix: str, operand: str | None,
                output: CommandOutput) -> bool:
    invert = "v" in flags
    hits = [(number, line) for number, (line, hit) in enumerate(zip(lines, matches(lines),
                                                                   strict=True), 1)
            if hit != invert]
    if "l" in flags:
        if hits:
            output.stdout.append(f"{operand or '(standard input)'}\n")
    elif "c" in flags:
        output.stdout.append(f"{prefix}{len(hits)}\n")
    else:
        for number, line in hits:
            output.stdout.append(f"{prefix}{number}:{line}\n" if "n" in flags
                                 else f"{prefix}{line}\n")
    return bool(hits)


def _sort_key(options_values: dict[str, str], flags: frozenset[str]) -> Callable[[str], object]:
    separator = options_values.get("t")
    field_spec = options_values.get("k")
    start = end = None
    if field_spec is not None:
        match = re.fullmatch(r"(\d+)(?:,(\d+))?", field_spec)
        if not match or int(match.group(1)) < 1:
            raise CommandError(f"invalid key {field_spec!r}: use -k N or -k N,M", 2)
        start = int(match.group(1)) - 1
        end = int(match.group(2)) if match.group(2) else None

    def key(line: str) -> object:
        text = line
        if start is not None:
            fields = line.split(separator) if separator else line.split()
            text = (separator or " ").join(fields[start:end])
        if "n" in flags:
            number = re.match(r"\s*([-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?)", text)
            return float(number.group(1)) if number else 0.0
        return text.lower() if "f" in flags else text

    return key


def cmd_sort(context: CommandContext, args: Sequence[str], output: CommandOutput) -> None:
    """sort [-n -r -u -f] [-k N[,M]] [-t SEP] [FILE...]"""
    options = parse_options("sort", args, "nruf", "kt")
    if options.value("t") is not None and len(options.value("t") or "") != 1:
        raise CommandError("the -t separator must be a single character", 2)
    lines: list[str] = []
    for operand in _inputs(context, options.operands):
        lines += split_lines(read_input(context, operand, output))
    key = _sort_key(options.values, options.flags)
    ordered = sorted(lines, key=key, reverse="r" in options.flags)
    if "u" in options.flags:
        seen: set[object] = set()
        unique = []
        for line in ordered:
            if (marker := key(line)) not in seen:
                seen.add(marker)
                unique.append(line)
        ordered = unique
    output.stdout.append(join_lines(ordered))


def _field_ranges(spec: str) -> list[tuple[int, int | None]]:
    ranges: list[tuple[int, int | None]] = []
    for part in spec.split(","):
        match = re.fullmatch(r"(\d*)(-?)(\d*)", part)
        if not match or not (match.group(1) or match.group(3)):
            raise CommandError(f"invalid field list {spec!r}: use e.g. 1,3 or 2-4 or 3-", 2)
        low = int(match.group(1) or 1)
        high = int(match.group(3)) if match.group(3) else (None if match.group(2) else low)
        if low < 1:
            raise CommandError("fields are numbered from 1", 2)
        ranges.append((low, high))
    return ranges


def cmd_cut(context: CommandContext, args: Sequence[str], output: CommandOutput) -> None:
    """cut -f LIST [-d DELIM] [FILE...] | cut -c LIST [FILE...]"""
    options = parse_options("cut", args, "", "dfc")
    spec = options.value("f") or options.value("c")
    if spec is None:
        raise CommandError("you must specify a list of fields (-f) or characters (-c)", 2)
    delimiter = options.value("d", "\t") or "\t"
    if len(delimiter) != 1:
        raise CommandError("the delimiter must be a single character", 2)
    ranges = _field_ranges(spec)
    by_chars = options.value("f") is None
    for operand in _inputs(context, options.operands):
        for line in split_lines(read_input(context, operand, output)):
            parts = list(line) if by_chars else line.split(delimiter)
            if not by_chars and len(parts) == 1:
                output.stdout.append(line + "\n")  # lines without the delimiter pass through
                continue
            chosen = [part for index, part in enumerate(parts, 1)
                      if any(low <= index <= (high or index) for low, high in ranges)]
            output.stdout.append(("" if by_chars else delimiter).join(chosen) + "\n")


def _ls_entry(path_name: str, path: Path, long: bool) -> str:
    if not long:
        return path_name
    info = path.lstat()
    kind = "d" if stat.S_ISDIR(info.st_mode) else "l" if stat.S_ISLNK(info.st_mode) else "-"
    mode = stat.filemode(info.st_mode)[1:]
    stamp = time.strftime("%Y-%m-%d %H:%M", time.localtime(info.st_mtime))
    return f"{kind}{mode} {info.st_size:>10} {stamp} {path_name}"


def _ls_directory(context: CommandContext, operand: str, options: Options,
                  output: CommandOutput, header: bool) -> None:
    workspace = context.workspace
    path = workspace.resolve(operand)
    if len(output.stdout) >= MAX_LS_LINES:
        output.error(f"listing stopped after {MAX_LS_LINES} lines")
        return
    names = sorted(entry for entry in (p.name for p in path.iterdir())
                   if "a" in options.flags or not entry.startswith("."))[:MAX_LS_ENTRIES]
    if header:
        output.stdout.append(f"{operand}:\n")
    for name in names:
        line = _ls_entry(name, path / name, "l" in options.flags)
        if operand in (".", "") and name in workspace.mounts:
            line += " -> [read-only mount]" if "l" in options.flags else "/"
        elif (path / name).is_dir() and "l" not in options.flags:
            line += "/"
        output.stdout.append(line + "\n")
    if "R" in options.flags:
        for name in names:
            child = name if operand in (".", "") else f"{operand}/{name}"
            if (path / name).is_dir() and not (path / name).is_symlink():
                output.stdout.append("\n")
                _ls_directory(context, child, options, output, True)


def cmd_ls(context: CommandContext, args: Sequence[str], output: CommandOutput) -> None:
    """ls [-l -a -R -1] [PATH...] (directories end with '/' in the short form)."""
    options = parse_options("ls", args, "laR1")
    operands = options.operands or ["."]
    for index, operand in enumerate(operands):
        try:
            path = context.workspace.resolve(operand)
        except WorkspaceError as error:
            output.error(f"{operand}: {error}", 2)
            continue
        if not path.exists():
            output.error(f"cannot access {operand!r}: no such file or directory", 2)
        elif path.is_dir():
            if index:
                output.stdout.append("\n")
            _ls_directory(context, operand, options, output,
                          len(operands) > 1 or "R" in options.flags)
        else:
            output.stdout.append(_ls_entry(operand, path, "l" in options.flags) + "\n")

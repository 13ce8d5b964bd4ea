"""Plain CSV files (header row + numeric columns), as the CLI reads them.

Cells parse like ``float()``; an empty cell or one of :data:`MISSING_TOKENS`
(any case) is a missing value (nan). Everything else that is not a number is
an error naming the line and column. ``inf`` parses, and is then rejected by
the context's data policy with the column's name.

Large files: the data rows are cut into parts of about ``PART_BYTES`` at line
ends (a first pass counts the rows, so the result is allocated once, in
column-major order: every column is a contiguous view of one float64 block,
and peak memory stays near that block plus one part). Each part is parsed by
the fastest reader available: pyarrow's CSV reader (the ``csv`` extra:
multi-threaded, correctly rounded), else numpy's ``loadtxt``. A part either
reader refuses (a missing-value token, a quoted cell, a ragged or bad row) is
parsed again by the exact reader below, which knows the missing-value rules
and names the line and column of a bad cell, so the result never depends on
the reader. ``scripts/bench_csv.py`` measures the readers side by side.

Bounds (:mod:`srh_core.input_limits`): a file larger than the data limit
(``SRH_MAX_DATA_BYTES``, default 8 GiB), a line longer than ``MAX_LINE_BYTES``
and a table that does not fit in the free memory are refused before they are
read or allocated. A file that is not a regular file (a pipe such as
``<(zcat data.csv.gz)``, a FIFO, a device) is first copied into a temporary
file in chunks, so ``/dev/zero`` or an endless pipe ends at a limit instead of
in memory.
"""

from __future__ import annotations

import csv
import io
import itertools
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Literal

import numpy as np

from srh_core.errors import DataError
from srh_core.input_limits import (
    DATA_LIMIT_ENV,
    MAX_LINE_BYTES,
    check_memory,
    check_regular_size,
    copy_limited,
    data_limit,
    line_too_long,
    too_large,
)

MISSING_TOKENS = frozenset({"", "nan", "na", "n/a", "null", "none"})
#: Bytes of data rows parsed at a time.
PART_BYTES = 16 * 1024 * 1024
#: Block size of pyarrow's reader inside a part (its unit of parallel work).
ARROW_BLOCK_BYTES = 2 * 1024 * 1024
#: "auto" uses pyarrow from this file size on (below, importing it costs more than it saves).
ARROW_MIN_FILE_BYTES = 8 * 1024 * 1024
READ_BYTES = 16 * 1024 * 1024
Engine = Literal["auto", "arrow", "numpy", "exact"]
PartParser = Callable[[bytes, list[str], str], np.ndarray]


@dataclass(frozen=True, slots=True)
class _Part:
    """Data rows ``[start, end)`` of the file (byte offsets), from line ``first_line``."""

    start: int
    end: int
    first_line: int
    lines: int


def load_tabular(
    path: str | Path, *, delimiter: str = ",", engine: Engine = "auto",
    max_bytes: int | None = None,
) -> tuple[dict[str, np.ndarray], list[str]]:
    """Read a CSV file whose first row names the columns.

    Args:
        path: The CSV file (UTF-8, an optional BOM is ignored), or a pipe or FIFO.
        delimiter: Field separator.
        engine: "auto" (pyarrow when installed and the file has at least
            ``ARROW_MIN_FILE_BYTES``, else numpy), or one reader for every part:
            "arrow", "numpy" or "exact" (the pure-Python reference).
        max_bytes: The largest file read; None reads up to
            :func:`~srh_core.input_limits.data_limit` (``SRH_MAX_DATA_BYTES``).

    Returns:
        ``(data, names)``: float64 columns keyed by name, and the names in file order.

    Raises:
        DataError: The file cannot be read, is empty, has no data rows, an empty
            or duplicate header name, a row with the wrong number of cells, or
            a non-numeric cell; messages give the line (1-based) and column.
        InputTooLargeError: The file is larger than the limit, a line is longer
            than ``MAX_LINE_BYTES``, or the table needs more than the free memory.
    """
    path = Path(path)
    limit = data_limit() if max_bytes is None else max_bytes
    try:
        with _seekable(path, limit) as stream:
            parse = _part_parser(engine, os.fstat(stream.fileno()).st_size)
            names, start, first_line = _read_header(path, stream, delimiter)
            parts = _split(path, stream, start, first_line, limit)
            table = _parse_parts(path, stream, parts, names, delimiter, parse)
    except OSError as exc:
        raise DataError(f"{path}: cannot read the CSV file: {exc}") from exc
    return {name: table[:, index] for index, name in enumerate(names)}, names


@contextmanager
def _seekable(path: Path, limit: int) -> Iterator[BinaryIO]:
    """``path`` opened for reading, or for a stream (no size, no seek) a bounded copy."""
    with path.open("rb") as source:
        if check_regular_size(path, source, "CSV file", limit, DATA_LIMIT_ENV):
            yield source
            return
        with tempfile.TemporaryFile(prefix="srh-csv-") as copy:
            copy_limited(path, source, copy, "CSV file", limit, DATA_LIMIT_ENV, MAX_LINE_BYTES)
            copy.seek(0)
            yield copy


def _part_parser(engine: Engine, size: int) -> PartParser | None:
    if engine == "exact":
        return None
    if engine == "arrow" or (engine == "auto" and size >= ARROW_MIN_FILE_BYTES):
        try:
            import pyarrow.csv  # noqa: F401
        except ImportError:
            if engine == "arrow":
                raise
        else:
            return _arrow_part
    return _numpy_part


def _read_header(path: Path, stream: BinaryIO, delimiter: str) -> tuple[list[str], int, int]:
    """The header names, the offset of the first data row and its line number."""
    for line_number in itertools.count(1):
        raw = stream.readline(MAX_LINE_BYTES + 1)
        if not raw:
            raise DataError(f"{path}: the file is empty; expected a header row and data rows.")
        if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
            raise line_too_long(path, "CSV file", line_number, MAX_LINE_BYTES)
        text = _decode(path, raw, line_number).lstrip("\ufeff") if line_number == 1 \
            else _decode(path, raw, line_number)
        cells = _rows(path, text, delimiter, line_number)
        if cells:
            return _header(path, cells[0]), stream.tell(), line_number + 1
    raise AssertionError("unreachable")


def _decode(path: Path, raw: bytes, line: int) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}, line {line}: cannot read the CSV file: {exc}") from exc


def _split(path: Path, stream: BinaryIO, start: int, first_line: int, max_bytes: int
           ) -> list[_Part]:
    """Cut the data rows into parts of about PART_BYTES at line ends, counting lines.

    A file that grows past ``max_bytes`` while it is read, or a line longer than
    MAX_LINE_BYTES (one part holds it whole), is refused.
    """
    parts: list[_Part] = []
    part_start, part_lines, line, block_start, last = start, 0, first_line, start, b"\n"
    stream.seek(start)
    while block := stream.read(READ_BYTES):
        if block_start + len(block) > max_bytes:
            raise too_large(path, "CSV file", max_bytes, block_start + len(block), DATA_LIMIT_ENV)
        offset = 0
        while (limit := part_start + PART_BYTES - block_start) <= len(block):
            cut = block.rfind(b"\n", offset, max(limit, offset))
            if cut < 0:
                cut = block.find(b"\n", max(limit, offset))  # a line longer than a part
            if cut < 0:
                break
            part_lines += block.count(b"\n", offset, cut + 1)
            parts.append(_Part(part_start, block_start + cut + 1, line, part_lines))
            line += part_lines
            part_start, part_lines, offset = block_start + cut + 1, 0, cut + 1
        part_lines += block.count(b"\n", offset)
        block_start, last = block_start + len(block), block[-1:]
        if block_start - part_start > PART_BYTES + MAX_LINE_BYTES:
            raise line_too_long(path, "CSV file", line + part_lines, MAX_LINE_BYTES)
    if block_start > part_start:
        parts.append(_Part(part_start, block_start, line, part_lines + (last != b"\n")))
    return parts


def _parse_parts(path: Path, stream: BinaryIO, parts: list[_Part], names: list[str],
                 delimiter: str, parse: PartParser | None) -> np.ndarray:
    rows = sum(part.lines for part in parts)
    check_memory(path, rows * len(names) * 8, f"{rows} rows x {len(names)} columns of float64")
    table = np.empty((rows, len(names)), order="F")
    row = 0
    for part in parts:
        stream.seek(part.start)
        values = _parse_part(path, stream.read(part.end - part.start), part, names, delimiter,
                             parse)
        table[row:row + len(values)] = values
        row += len(values)
    if row == 0:
        raise DataError(f"{path}: the file has a header but no data rows.")
    return table[:row]


def _parse_part(path: Path, data: bytes, part: _Part, names: list[str], delimiter: str,
                parse: PartParser | None) -> np.ndarray:
    if parse is not None:
        try:
            values = parse(data, names, delimiter)
        except (ValueError, TypeError, ArithmeticError):  # pyarrow's errors included
            pass
        else:
            if values.shape[1] == len(names):
                return values
    text = _decode(path, data, part.first_line)
    return _exact_rows(path, names, _rows(path, text, delimiter, part.first_line))


def _arrow_part(data: bytes, names: list[str], delimiter: str) -> np.ndarray:
    import pyarrow as pa
    import pyarrow.csv as pa_csv

    table = pa_csv.read_csv(
        pa.py_buffer(data),
        read_options=pa_csv.ReadOptions(column_names=names, block_size=ARROW_BLOCK_BYTES),
        parse_options=pa_csv.ParseOptions(delimiter=delimiter),
        convert_options=pa_csv.ConvertOptions(
            column_types={name: pa.float64() for name in names}, null_values=_null_spellings(),
            strings_can_be_null=False, quoted_strings_can_be_null=False),
    )
    values = np.empty((table.num_rows, len(names)))
    for index in range(len(names)):
        values[:, index] = table.column(index).to_numpy()  # nulls (missing) become nan
    return values


def _null_spellings() -> list[str]:
    """Every upper/lower-case spelling of the missing tokens (pyarrow matches exactly)."""
    spellings = set()
    for token in MISSING_TOKENS:
        for case in itertools.product(*((c.lower(), c.upper()) for c in token)):
            spellings.add("".join(case))
    return sorted(spellings)


def _numpy_part(data: bytes, names: list[str], delimiter: str) -> np.ndarray:
    lines = data.decode("utf-8").splitlines()
    return np.loadtxt(lines, delimiter=delimiter, comments=None, dtype=float, ndmin=2,
                      quotechar=None)


def _rows(path: Path, text: str, delimiter: str, first_line: int) -> list[tuple[int, list[str]]]:
    try:
        reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
        return [(first_line - 1 + reader.line_num, row) for row in reader
                if row and any(cell.strip() for cell in row)]
    except csv.Error as exc:
        raise DataError(f"{path}: cannot read the CSV file: {exc}") from exc


def _header(path: Path, header: tuple[int, list[str]]) -> list[str]:
    line, cells = header
    names = [cell.strip() for cell in cells]
    for column, name in enumerate(names, start=1):
        if not name:
            raise DataError(f"{path}, line {line}: header column {column} has no name; "
                            "every column needs one.")
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise DataError(f"{path}, line {line}: duplicate column name {name!r}; names must "
                            "be unique.", variable=name)
        seen.add(name)
    return names


def _exact_rows(path: Path, names: list[str], rows: list[tuple[int, list[str]]]) -> np.ndarray:
    table = np.empty((len(rows), len(names)), dtype=float)
    for index, (line, cells) in enumerate(rows):
        if len(cells) != len(names):
            raise DataError(f"{path}, line {line}: expected {len(names)} cells (one per header "
                            f"column); got {len(cells)}.")
        table[index] = [_cell(path, line, name, cell)
                        for name, cell in zip(names, cells, strict=True)]
    return table


def _cell(path: Path, line: int, name: str, cell: str) -> float:
    text = cell.strip()
    if text.lower() in MISSING_TOKENS:
        return float("nan")
    try:
        return float(text)
    except ValueError:
        raise DataError(f"{path}, line {line}, column {name!r}: {cell!r} is not a number.",
                        variable=name) from None

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
"""

from __future__ import annotations

import csv
import io
import itertools
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Literal

import numpy as np

from srh_core.errors import DataError

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
    path: str | Path, *, delimiter: str = ",", engine: Engine = "auto"
) -> tuple[dict[str, np.ndarray], list[str]]:
    """Read a CSV file whose first row names the columns.

    Args:
        path: The CSV file (UTF-8, an optional BOM is ignored).
        delimiter: Field separator.
        engine: "auto" (pyarrow when installed and the file has at least
            ``ARROW_MIN_FILE_BYTES``, else numpy), or one reader for every part:
            "arrow", "numpy" or "exact" (the pure-Python reference).

    Returns:
        ``(data, names)``: float64 columns keyed by name, and the names in file order.

    Raises:
        DataError: The file cannot be read, is empty, has no data rows, an empty
            or duplicate header name, a row with the wrong number of cells, or
            a non-numeric cell; messages give the line (1-based) and column.
    """
    path = Path(path)
    try:
        with path.open("rb") as stream:
            parse = _part_parser(engine, os.fstat(stream.fileno()).st_size)
            names, start, first_line = _read_header(path, stream, delimiter)
            parts = _split(stream, start, first_line)
            table = _parse_parts(path, stream, parts, names, delimiter, parse)
    except OSError as exc:
        raise DataError(f"{path}: cannot read the CSV file: {exc}") from exc
    return {name: table[:, index] for index, name in enumerate(names)}, names


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
        raw = stream.readline()
        if not raw:
            raise DataError(f"{path}: the file is empty; expected a header row and data rows.")
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


def _split(stream: BinaryIO, start: int, first_line: int) -> list[_Part]:
    """Cut the data rows into parts of about PART_BYTES at line ends, counting lines."""
    parts: list[_Part] = []
    part_start, part_lines, line, block_start, last = start, 0, first_line, start, b"\n"
    stream.seek(start)
    while block := stream.read(READ_BYTES):
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
    if block_start > part_start:
        parts.append(_Part(part_start, block_start, line, part_lines + (last != b"\n")))
    return parts


def _parse_parts(path: Path, stream: BinaryIO, parts: list[_Part], names: list[str],
                 delimiter: str, parse: PartParser | None) -> np.ndarray:
    table = np.empty((sum(part.lines for part in parts), len(names)), order="F")
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

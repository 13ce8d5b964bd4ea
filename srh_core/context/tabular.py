"""Plain CSV files (header row + numeric columns), as the CLI reads them.

Cells parse with ``float()``; an empty cell or one of :data:`MISSING_TOKENS`
(any case) is a missing value (nan). Everything else that is not a number is
an error naming the line and column. ``inf`` parses, and is then rejected by
the context's data policy with the column's name.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from srh_core.errors import DataError

MISSING_TOKENS = frozenset({"", "nan", "na", "n/a", "null", "none"})


def load_tabular(
    path: str | Path, *, delimiter: str = ","
) -> tuple[dict[str, np.ndarray], list[str]]:
    """Read a CSV file whose first row names the columns.

    Args:
        path: The CSV file (UTF-8, an optional BOM is ignored).
        delimiter: Field separator.

    Returns:
        ``(data, names)``: float64 columns keyed by name, and the names in file order.

    Raises:
        DataError: The file cannot be read, is empty, has no data rows, an empty
            or duplicate header name, a row with the wrong number of cells, or
            a non-numeric cell; messages give the line (1-based) and column.
    """
    path = Path(path)
    rows = _read_rows(path, delimiter)
    if not rows:
        raise DataError(f"{path}: the file is empty; expected a header row and data rows.")
    names = _header(path, rows[0])
    if len(rows) == 1:
        raise DataError(f"{path}: the file has a header but no data rows.")
    columns = _parse_rows(path, names, rows[1:])
    return {name: columns[:, index].copy() for index, name in enumerate(names)}, names


def _read_rows(path: Path, delimiter: str) -> list[tuple[int, list[str]]]:
    try:
        with path.open(encoding="utf-8-sig", newline="") as stream:
            reader = csv.reader(stream, delimiter=delimiter)
            return [(reader.line_num, row) for row in reader if row and any(c.strip() for c in row)]
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
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


def _parse_rows(path: Path, names: list[str], rows: list[tuple[int, list[str]]]) -> np.ndarray:
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

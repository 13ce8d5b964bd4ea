from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from srh_core.context import AgentContext, load_tabular
from srh_core.errors import DataError


def write(tmp_path: Path, text: str, name: str = "data.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_loads_numeric_columns_in_header_order(tmp_path: Path) -> None:
    data, names = load_tabular(write(tmp_path, "\ufeffx, y\n1,2\n3, 4.5\n\n-1e3,0\n"))
    assert names == ["x", "y"]
    np.testing.assert_array_equal(data["x"], [1.0, 3.0, -1000.0])
    assert data["y"].dtype == np.float64 and data["y"].flags.c_contiguous


def test_missing_tokens_become_nan(tmp_path: Path) -> None:
    data, _ = load_tabular(write(tmp_path, "x,y\n,1\nNA,2\nnan,3\n4,5\n"))
    assert np.isnan(data["x"][:3]).all() and data["x"][3] == 4.0


def test_other_delimiters(tmp_path: Path) -> None:
    data, names = load_tabular(write(tmp_path, "a;b\n1;2\n"), delimiter=";")
    assert names == ["a", "b"] and data["b"].tolist() == [2.0]


CSV_ERRORS = [
    pytest.param("", "empty", None, id="empty-file"),
    pytest.param("x,y\n", "no data rows", None, id="header-only"),
    pytest.param("x,,y\n1,2,3\n", "column 2 has no name", None, id="empty-header"),
    pytest.param("x,y,x\n1,2,3\n", "duplicate column name 'x'", "x", id="duplicate-header"),
    pytest.param("x,y\n1,2\n3\n", "line 3: expected 2 cells", None, id="ragged-short"),
    pytest.param("x,y\n1,2,3\n", "line 2: expected 2 cells", None, id="ragged-long"),
    pytest.param("x,y\n1,2\n3,abc\n", "line 3, column 'y': 'abc' is not a number", "y",
                 id="non-numeric"),
]


@pytest.mark.parametrize(("text", "phrase", "variable"), CSV_ERRORS)
def test_csv_errors_are_clear(tmp_path: Path, text: str, phrase: str, variable: str | None) -> None:
    path = write(tmp_path, text)
    with pytest.raises(DataError, match=phrase) as info:
        load_tabular(path)
    assert str(path) in str(info.value)
    assert info.value.variable == variable


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="cannot read"):
        load_tabular(tmp_path / "absent.csv")


def test_inf_cells_are_rejected_by_the_context_with_the_column_name(tmp_path: Path) -> None:
    data, names = load_tabular(write(tmp_path, "x,y\n1,inf\n2,3\n"))
    with pytest.raises(DataError, match="'y' holds 1 infinite"):
        AgentContext().commit_data(data, target="y")

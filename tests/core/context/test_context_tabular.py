from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from srh_core.context import AgentContext, load_tabular
from srh_core.errors import DataError, InputTooLargeError


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


ENGINES = ["arrow", "numpy", "exact"]
TRICKY = ["0.1", "1e-320", "2.2250738585072014e-308", "1.7976931348623157e308", "-0.0",
          "123456789012345678901234567890", "9007199254740993", "0.30000000000000004",
          "4.9406564584124654e-324", "1E5", ".5", "5.", "+3", "-2.5e-3"]


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    if request.param == "arrow":
        pytest.importorskip("pyarrow")
    return request.param


@pytest.fixture
def small_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    from srh_core.context import tabular

    monkeypatch.setattr(tabular, "PART_BYTES", 64)
    monkeypatch.setattr(tabular, "READ_BYTES", 50)


def test_every_reader_parses_like_float(tmp_path: Path, engine: str) -> None:
    text = "a,b\n" + "".join(f"{value},{len(value)}\n" for value in TRICKY)
    data, _ = load_tabular(write(tmp_path, text), engine=engine)  # type: ignore[arg-type]
    assert [float(v) for v in TRICKY] == data["a"].tolist()
    assert all(np.signbit(data["a"]) == [v.startswith("-") for v in TRICKY])


def test_parts_give_the_same_table(tmp_path: Path, engine: str, small_parts: None) -> None:
    rng = np.random.default_rng(1)
    values = rng.normal(size=(200, 3))
    lines = ["x,y,z"] + [",".join(repr(float(v)) for v in row) for row in values]
    lines[57] = "NA,Null,"  # a part with missing values goes through the exact reader
    lines[120] = ""  # a blank line is skipped
    data, _ = load_tabular(write(tmp_path, "\r\n".join(lines)), engine=engine)  # type: ignore
    expected = np.delete(values, 119, axis=0)
    expected[56] = np.nan
    for index, name in enumerate("xyz"):
        np.testing.assert_array_equal(data[name], expected[:, index])


def test_error_lines_are_right_in_later_parts(tmp_path: Path, engine: str,
                                              small_parts: None) -> None:
    lines = ["x,y"] + [f"{i},{i * 2}" for i in range(100)]
    lines[77] = "76,oops"
    with pytest.raises(DataError, match="line 78, column 'y': 'oops' is not a number"):
        load_tabular(write(tmp_path, "\n".join(lines) + "\n"), engine=engine)  # type: ignore


def test_a_line_longer_than_a_part_and_no_final_newline(tmp_path: Path, engine: str,
                                                         small_parts: None) -> None:
    names = [f"c{i}" for i in range(40)]
    text = ",".join(names) + "\n" + ",".join(["1.5"] * 40) + "\n" + ",".join(["2"] * 40)
    data, _ = load_tabular(write(tmp_path, text), engine=engine)  # type: ignore[arg-type]
    assert data["c39"].tolist() == [1.5, 2.0]


def test_quoted_cells_and_mixed_case_missing_tokens(tmp_path: Path, engine: str) -> None:
    data, _ = load_tabular(write(tmp_path, 'x,y\n"1.5",nOnE\n2,N/a\n'),
                           engine=engine)  # type: ignore[arg-type]
    assert data["x"].tolist() == [1.5, 2.0] and np.isnan(data["y"]).all()


def test_columns_share_one_float_block(tmp_path: Path) -> None:
    data, _ = load_tabular(write(tmp_path, "x,y\n1,2\n3,4\n"))
    assert data["x"].base is data["y"].base is not None
    assert all(column.flags.c_contiguous for column in data.values())


# ------------------------------------------------------------------ bounds (issue 22)


def test_a_file_past_the_data_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = write(tmp_path, "x,y\n" + "1,2\n" * 100)
    assert load_tabular(path, max_bytes=404)[0]["y"].size == 100
    with pytest.raises(InputTooLargeError, match="larger than 403 bytes.*holds 404 bytes; set "
                                                 "SRH_MAX_DATA_BYTES to raise the limit"):
        load_tabular(path, max_bytes=403)


def test_the_data_limit_defaults_to_the_environment(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SRH_MAX_DATA_BYTES", "10")
    with pytest.raises(InputTooLargeError, match="larger than 10 bytes"):
        load_tabular(write(tmp_path, "x,y\n1,2\n3,4\n"))


def test_dev_zero_ends_at_the_first_line_limit() -> None:
    with pytest.raises(InputTooLargeError, match="/dev/zero, line 1: the line goes on past "
                                                 "16 MiB without a line end"):
        load_tabular("/dev/zero")


def test_a_pipe_of_csv_text_loads_like_the_file(tmp_path: Path) -> None:
    reader, writer = os.pipe()
    with os.fdopen(writer, "wb") as stream:  # fits in the pipe's buffer: no writer thread
        stream.write(b"x,y\n1,2\n3,4\n")
    try:
        data, names = load_tabular(f"/dev/fd/{reader}")
    finally:
        os.close(reader)
    assert names == ["x", "y"] and data["y"].tolist() == [2.0, 4.0]


def test_an_endless_fifo_stops_at_the_data_limit(endless_fifo: Path) -> None:
    with pytest.raises(InputTooLargeError, match="is a stream .* went on past that"):
        load_tabular(endless_fifo, max_bytes=4 * 1024 * 1024)


def test_a_data_line_longer_than_the_line_limit(tmp_path: Path, small_parts: None,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from srh_core.context import tabular

    monkeypatch.setattr(tabular, "MAX_LINE_BYTES", 100)
    path = write(tmp_path, "x,y\n1,2\n3," + "4" * 500 + "\n5,6\n")
    with pytest.raises(InputTooLargeError, match="line 3: the line goes on past 100 bytes"):
        load_tabular(path)


def test_a_table_larger_than_free_memory_is_refused_before_allocation(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from srh_core import input_limits

    monkeypatch.setattr(input_limits, "available_memory", lambda: 47)
    with pytest.raises(InputTooLargeError, match=r"needs 48 bytes of memory \(3 rows x 2 "
                                                 r"columns of float64\) but only 47 bytes"):
        load_tabular(write(tmp_path, "x,y\n1,2\n3,4\n5,6\n"))

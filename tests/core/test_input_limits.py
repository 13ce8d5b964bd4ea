"""Size limits of user input files: measured for regular files, counted for streams."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest

from srh_core import input_limits
from srh_core.errors import ConfigurationError, InputTooLargeError
from srh_core.input_limits import (
    DATA_LIMIT_ENV,
    GIB,
    MAX_DATA_BYTES,
    MIB,
    check_array_file,
    copy_limited,
    data_limit,
    read_limited,
)


@pytest.mark.parametrize(("value", "expected"), [
    ("", MAX_DATA_BYTES), ("1000", 1000), ("16G", 16 * GIB), ("2 MiB", 2 * MIB), ("3mb", 3 * MIB),
], ids=["unset", "bytes", "suffix", "spaced-iec", "lower-case"])
def test_the_data_limit_comes_from_the_environment(value: str, expected: int) -> None:
    assert data_limit({DATA_LIMIT_ENV: value}) == expected


@pytest.mark.parametrize("value", ["abc", "0", "-1", "1.5G", "12X"])
def test_a_bad_data_limit_names_the_variable(value: str) -> None:
    with pytest.raises(ConfigurationError, match=f"The {DATA_LIMIT_ENV} environment variable "
                                                 f"must be a size in bytes > 0.*Got '{value}'"):
        data_limit({DATA_LIMIT_ENV: value})


def test_a_regular_file_past_the_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "settings.toml"
    path.write_bytes(b"x" * 101)
    assert read_limited(path, "settings file", 101) == b"x" * 101
    with pytest.raises(InputTooLargeError) as info:
        read_limited(path, "settings file", 100)
    assert info.value.size == 101 and info.value.limit == 100 and info.value.override is None
    assert f"The settings file {path} is larger than 100 bytes" in str(info.value)
    assert "holds 101 bytes; a settings file is much smaller" in str(info.value)


def test_dev_zero_is_read_only_up_to_the_limit() -> None:
    with pytest.raises(InputTooLargeError, match="is a stream .* went on past that") as info:
        read_limited("/dev/zero", "suite file", 4 * MIB)
    assert info.value.size is None


def test_an_endless_fifo_stops_at_the_limit(endless_fifo: Path) -> None:
    with pytest.raises(InputTooLargeError, match="larger than 1 MiB") as info:
        read_limited(endless_fifo, "CSV file", MIB, DATA_LIMIT_ENV)
    assert f"set {DATA_LIMIT_ENV} to raise the limit" in str(info.value)


def test_a_copied_stream_stops_at_a_line_without_end() -> None:
    target = io.BytesIO()
    with pytest.raises(InputTooLargeError, match="line 3: the line goes on past 1 KiB"):
        copy_limited("in.csv", io.BytesIO(b"x,y\n1,2\n" + b"9" * 5000), target, "CSV file",
                     MIB, max_line=1024)
    assert copy_limited("in.csv", io.BytesIO(b"x,y\n1,2\n"), target, "CSV file", MIB) == 8


def _npy_declaring(path: Path, shape: tuple[int, ...]) -> Path:
    np.save(path, np.arange(5.0))
    header = {"descr": "<f8", "fortran_order": False, "shape": shape}
    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, header)
    path.write_bytes(buffer.getvalue() + np.arange(5.0).tobytes())
    return path


def test_an_npy_header_declaring_more_than_the_limit_is_refused(tmp_path: Path) -> None:
    path = _npy_declaring(tmp_path / "x.npy", (10**11,))
    with pytest.raises(InputTooLargeError, match="array file .* holds 745 GiB"):
        check_array_file(path, MAX_DATA_BYTES, DATA_LIMIT_ENV)


def test_an_npy_array_larger_than_free_memory_is_refused(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    path = _npy_declaring(tmp_path / "x.npy", (5,))
    check_array_file(path, MAX_DATA_BYTES)
    monkeypatch.setattr(input_limits, "available_memory", lambda: 39)
    with pytest.raises(InputTooLargeError, match=r"needs 40 bytes of memory \(an array of "
                                                 r"shape \(5,\)\) but only 39 bytes"):
        check_array_file(path, MAX_DATA_BYTES)


def test_free_memory_is_known_on_linux() -> None:
    free = input_limits.available_memory()
    assert free is None or free > 0

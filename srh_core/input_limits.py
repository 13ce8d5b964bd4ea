"""Size limits of the files a user gives srh, enforced while they are read.

Every file a command reads because the user named it (a CSV table, a
``context.data`` manifest and its ``.npy`` arrays, a settings, sweep or
endpoints TOML file, a suite JSON file) goes through one of these limits, so
a file that never ends (``/dev/zero``, a FIFO, an endless pipe) or a huge
one ends in an :class:`~srh_core.errors.InputTooLargeError` that names the
file and the limit, instead of filling memory until the kernel kills the
process.

A regular file is measured before it is read; any other file (a pipe, FIFO,
socket or device has no size) is read in chunks and refused as soon as it
passes the limit. Data also has to fit in the memory that is free
(:func:`check_memory`), which is checked before the arrays are allocated.

The data limit is generous (:data:`MAX_DATA_BYTES`) and the environment
variable :data:`DATA_LIMIT_ENV` changes it; the configuration limits are
small and fixed: a real settings file is a few kB.
"""

from __future__ import annotations

import math
import os
import re
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import BinaryIO

from srh_core.errors import ConfigurationError, InputTooLargeError

KIB, MIB, GIB = 1024, 1024**2, 1024**3
#: Largest TOML file read (settings, sweep and endpoints files; real ones are a few kB).
MAX_CONFIG_BYTES = 4 * MIB
#: Largest JSON document read from a file (suite files; the built-in ones are 16 kB).
MAX_JSON_BYTES = 64 * MIB
#: Default largest data file (a CSV table, one ``.npy`` array); DATA_LIMIT_ENV changes it.
MAX_DATA_BYTES = 8 * GIB
#: Environment variable with the data limit in bytes (a K, M, G or T suffix: powers of 1024).
DATA_LIMIT_ENV = "SRH_MAX_DATA_BYTES"
#: Longest line of a CSV file (a header of 100,000 named columns is a few MB).
MAX_LINE_BYTES = 16 * MIB
#: Bytes read at a time from a stream.
STREAM_CHUNK_BYTES = 1 * MIB
_SIZE = re.compile(r"\s*(\d+)\s*([kmgt]?)(i?b)?\s*", re.IGNORECASE)
_UNITS = {"": 1, "k": KIB, "m": MIB, "g": GIB, "t": 1024 * GIB}


def data_limit(environ: Mapping[str, str] | None = None) -> int:
    """The largest data file read: ``SRH_MAX_DATA_BYTES`` when set, else MAX_DATA_BYTES.

    Raises:
        ConfigurationError: The variable is set but is not a positive size.
    """
    raw = (os.environ if environ is None else environ).get(DATA_LIMIT_ENV, "").strip()
    if not raw:
        return MAX_DATA_BYTES
    match = _SIZE.fullmatch(raw)
    value = int(match[1]) * _UNITS[match[2].lower()] if match else 0
    if value <= 0:
        raise ConfigurationError(
            f"The {DATA_LIMIT_ENV} environment variable must be a size in bytes > 0, "
            f"optionally with a K, M, G or T suffix (e.g. 32G). Got {raw!r} instead.",
            setting=DATA_LIMIT_ENV)
    return value


def size_text(size: int) -> str:
    """``size`` bytes for people: "512 bytes", "4 MiB", "9.3 GiB"."""
    for unit, name in ((1024 * GIB, "TiB"), (GIB, "GiB"), (MIB, "MiB"), (KIB, "KiB")):
        if size >= unit:
            return f"{size / unit:.3g} {name}"
    return f"{size} bytes"


def too_large(path: str | Path, what: str, limit: int, size: int | None = None,
              override: str | None = None) -> InputTooLargeError:
    """The error for ``path`` (a ``what``, e.g. "settings file") past ``limit`` bytes."""
    if size is not None:
        found = f"holds {size_text(size)}" + (f" ({size} bytes)" if size >= KIB else "")
    else:
        found = "is a stream (a pipe, FIFO or device) that went on past that"
    if override:
        fix = (f"set {override} to raise the limit (e.g. {override}="
               f"{max(2 * limit // GIB, 1)}G).")
    else:
        fix = f"a {what} is much smaller: is {path} the right file?"
    return InputTooLargeError(
        f"The {what} {path} is larger than {size_text(limit)}, the most that is read: it "
        f"{found}; {fix}", path=str(path), limit=limit, size=size, override=override)


def check_regular_size(path: str | Path, stream: BinaryIO, what: str, limit: int,
                       override: str | None = None) -> bool:
    """Whether ``stream`` is a regular file; refuse it now when it is larger than ``limit``.

    Raises:
        InputTooLargeError: A regular file larger than ``limit``.
    """
    info = os.fstat(stream.fileno())
    if stat.S_ISREG(info.st_mode) and info.st_size > limit:
        raise too_large(path, what, limit, info.st_size, override)
    return stat.S_ISREG(info.st_mode)


def read_limited(path: str | Path, what: str, limit: int, override: str | None = None) -> bytes:
    """The bytes of ``path``, at most ``limit`` of them.

    Raises:
        InputTooLargeError: The file (or the stream) holds more than ``limit`` bytes.
        OSError: The file cannot be opened or read.
    """
    with Path(path).open("rb") as stream:
        check_regular_size(path, stream, what, limit, override)
        data = stream.read(limit + 1)
    if len(data) > limit:
        raise too_large(path, what, limit, None, override)
    return data


def read_limited_text(path: str | Path, what: str, limit: int) -> str:
    """The UTF-8 text of ``path`` (see :func:`read_limited`).

    Raises:
        InputTooLargeError: The file holds more than ``limit`` bytes.
        UnicodeDecodeError: The file is not UTF-8 text.
        OSError: The file cannot be opened or read.
    """
    return read_limited(path, what, limit).decode("utf-8")


def copy_limited(path: str | Path, source: BinaryIO, target: BinaryIO, what: str, limit: int,
                 override: str | None = None, max_line: int | None = None) -> int:
    """Copy the stream ``source`` (the file ``path``) into ``target``, chunk by chunk.

    Args:
        path: The file ``source`` reads, for the messages.
        source: The stream.
        target: Where the bytes go (a temporary file: memory stays at one chunk).
        what: What the file is ("CSV file").
        limit: The most bytes copied.
        override: The environment variable that raises ``limit``, if any.
        max_line: The longest line (bytes between two line ends) accepted, if any.

    Returns:
        The number of bytes copied.

    Raises:
        InputTooLargeError: The stream went on past ``limit`` bytes, or a line past ``max_line``.
    """
    copied = line_bytes = lines = 0
    while chunk := source.read(STREAM_CHUNK_BYTES):
        copied += len(chunk)
        if copied > limit:
            raise too_large(path, what, limit, None, override)
        if max_line is not None:
            end = chunk.rfind(b"\n")
            line_bytes = len(chunk) - end - 1 if end >= 0 else line_bytes + len(chunk)
            lines += chunk.count(b"\n")
            if line_bytes > max_line:
                raise line_too_long(path, what, lines + 1, max_line)
        target.write(chunk)
    return copied


def line_too_long(path: str | Path, what: str, line: int, limit: int) -> InputTooLargeError:
    """The error for line ``line`` of ``path`` running past ``limit`` bytes without its end."""
    return InputTooLargeError(
        f"{path}, line {line}: the line goes on past {size_text(limit)} without a line end, "
        f"longer than any line of a {what}; is {path} the right file?",
        path=str(path), limit=limit)


def available_memory() -> int | None:
    """Bytes of memory this process may still take: Linux's MemAvailable, lowered by a
    cgroup (container) limit; None where neither is known."""
    known = [value for value in (_meminfo_available(), _cgroup_headroom()) if value is not None]
    return min(known) if known else None


def check_memory(path: str | Path, needed: int, what: str) -> None:
    """Refuse data whose arrays need more than the memory that is free.

    Args:
        path: The data file, for the message.
        needed: Bytes the arrays will take.
        what: What needs them ("1000000 rows x 50 columns of float64").

    Raises:
        InputTooLargeError: ``needed`` is more than :func:`available_memory`.
    """
    free = available_memory()
    if free is not None and needed > free:
        raise InputTooLargeError(
            f"The data of {path} needs {size_text(needed)} of memory ({what}) but only "
            f"{size_text(free)} are available; free memory, or use a sample of the rows.",
            path=str(path), limit=free, size=needed)


def check_array_file(path: str | Path, limit: int, override: str | None = None) -> None:
    """Refuse an ``.npy`` file before ``np.load`` allocates what its header declares.

    The header is read (a few hundred bytes); a header numpy cannot read is left
    for ``np.load`` to report.

    Raises:
        InputTooLargeError: The file, or the array its header declares, is larger
            than ``limit``, or the array (as float64) needs more than the free memory.
    """
    import numpy as np

    readers = {(1, 0): np.lib.format.read_array_header_1_0,
               (2, 0): np.lib.format.read_array_header_2_0}
    with Path(path).open("rb") as stream:
        check_regular_size(path, stream, "array file", limit, override)
        try:
            reader = readers.get(np.lib.format.read_magic(stream))
            shape, _, dtype = reader(stream) if reader else ((), False, np.dtype(float))
        except (ValueError, TypeError, OSError):
            return
    count = math.prod(shape)
    if count * dtype.itemsize > limit:
        raise too_large(path, "array file", limit, count * dtype.itemsize, override)
    check_memory(path, count * max(dtype.itemsize, 8), f"an array of shape {shape}")


def _meminfo_available() -> int | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as stream:
            for line in stream:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * KIB
    except (OSError, ValueError, IndexError):
        return None
    return None


def _cgroup_headroom() -> int | None:
    """Limit minus usage of the cgroup at /sys/fs/cgroup (v2, else v1), if it sets a limit."""
    for limit_file, usage_file in (("memory.max", "memory.current"),
                                   ("memory/memory.limit_in_bytes",
                                    "memory/memory.usage_in_bytes")):
        try:
            limit = Path("/sys/fs/cgroup", limit_file).read_text(encoding="ascii").strip()
            usage = Path("/sys/fs/cgroup", usage_file).read_text(encoding="ascii").strip()
        except OSError:
            continue
        if limit.isdigit() and usage.isdigit() and int(limit) < 2**60:  # v1: "no limit" ~2**63
            return max(int(limit) - int(usage), 0)
    return None

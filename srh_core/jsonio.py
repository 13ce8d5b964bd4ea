"""Small, crash-safe JSON file helpers shared by run directories and sweeps.

Text from a model or a user may hold lone surrogates (``"\\ud800"`` in a JSON
tool call decodes to one), which UTF-8 cannot encode: :func:`dumps` writes
them as JSON escapes (read back as the same string), and the file writers
write any other such character as a backslash escape instead of failing.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from srh_core.types import json_value

_SURROGATE = re.compile("[\ud800-\udfff]")
#: How text that UTF-8 cannot encode (lone surrogates) is written: as ``\\udXXX``.
ENCODING_ERRORS = "backslashreplace"


def dumps(value: Any, *, indent: int | None = None) -> str:
    """Strict JSON text of ``value`` (non-finite floats become null).

    Non-ASCII characters stay as they are, except lone surrogates, which only
    occur inside strings and become ``\\udXXX`` escapes, so the text always
    encodes as UTF-8 and ``json.loads`` gives the same strings back (a
    high-low pair of them is read back as the one character it stands for).
    """
    text = json.dumps(json_value(value), ensure_ascii=False, allow_nan=False, indent=indent)
    if _SURROGATE.search(text) is None:
        return text
    return _SURROGATE.sub(lambda found: f"\\u{ord(found.group()):04x}", text)


def atomic_write_text(path: str | Path, text: str) -> None:
    """Replace ``path`` with ``text`` so readers see the old or the new file, never half.

    Lone surrogates in ``text`` are written as ``\\udXXX`` (:data:`ENCODING_ERRORS`).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors=ENCODING_ERRORS) as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def atomic_write_json(path: str | Path, value: Any) -> None:
    """Atomically write ``value`` as indented strict JSON."""
    atomic_write_text(path, dumps(value, indent=1) + "\n")


def append_jsonl(path: str | Path, value: Any) -> None:
    """Append one JSON line (one write call, so lines never interleave)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8", errors=ENCODING_ERRORS) as stream:
        stream.write(dumps(value) + "\n")


def read_json(path: str | Path) -> Any:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def read_jsonl(path: str | Path) -> Iterator[Any]:
    """Yield the records of a JSONL file, skipping a torn last line."""
    path = Path(path)
    if not path.exists():
        return
    with path.open(encoding="utf-8") as stream:
        for line in stream:
            try:
                yield json.loads(line)
            except ValueError:
                continue

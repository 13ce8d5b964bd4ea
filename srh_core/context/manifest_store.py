"""Reading and atomically rewriting ``manifest.json``."""

from __future__ import annotations

import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Any, Literal

from srh_core.errors import ContextManifestError, InputTooLargeError
from srh_core.input_limits import read_limited_text
from srh_core.json_limits import depth_problem

WriteMode = Literal["atomic", "in_place"]
#: Largest manifest file read (inline axis values included).
MAX_MANIFEST_BYTES = 64 * 1024 * 1024
#: Deepest nesting of arrays and objects in a manifest (the format needs 4).
MAX_MANIFEST_DEPTH = 16


class _DuplicateKeyError(ValueError):
    pass


def _reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKeyError(f"duplicate JSON key {key!r}")
        result[key] = value
    return result


def read_manifest_json(path: Path) -> Any:
    """Parse a manifest file, rejecting duplicate keys, huge files and deep nesting.

    Raises:
        ContextManifestError: The file cannot be read, is larger than
            ``MAX_MANIFEST_BYTES``, nests deeper than ``MAX_MANIFEST_DEPTH`` or is
            not valid JSON.
    """
    try:
        text = read_limited_text(path, "manifest", MAX_MANIFEST_BYTES)
    except InputTooLargeError as exc:
        raise ContextManifestError(str(exc)) from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ContextManifestError(f"Cannot read {path.name}: {exc}") from exc
    if problem := depth_problem(text, MAX_MANIFEST_DEPTH, path.name):
        raise ContextManifestError(problem)
    try:
        return json.loads(text, object_pairs_hook=_reject_duplicates)
    except json.JSONDecodeError as exc:
        raise ContextManifestError(
            f"{path.name} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}."
        ) from exc
    except _DuplicateKeyError as exc:
        raise ContextManifestError(f"{path.name} has a {exc}; keys must be unique.") from exc


def write_json_atomic(path: Path, content: Any) -> WriteMode:
    """Replace ``path`` with ``content`` as JSON, atomically when the directory allows.

    A temporary file in the same directory is written, fsynced, given the old
    file's permissions and moved over ``path`` with ``os.replace``, so readers
    see the old or the new file, never a mix. When no file can be created in the
    directory (read-only directory) but ``path`` itself is writable, ``path`` is
    rewritten in place, as POSIX permissions allow.

    Returns:
        "atomic" or "in_place".

    Raises:
        ContextManifestError: Neither way can write the file.
    """
    text = json.dumps(content, ensure_ascii=False, indent=2) + "\n"
    try:
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".manifest-", suffix=".tmp")
    except OSError as exc:
        if not os.access(path, os.W_OK):
            raise ContextManifestError(f"Cannot write {path}: {exc}") from exc
        _write_in_place(path, text)
        return "in_place"
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, stat.S_IMODE(path.stat().st_mode))
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return "atomic"


def _write_in_place(path: Path, text: str) -> None:
    with path.open("r+", encoding="utf-8") as stream:
        stream.seek(0)
        stream.write(text)
        stream.truncate()
        stream.flush()
        os.fsync(stream.fileno())

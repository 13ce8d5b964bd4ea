"""A run's custom skills as data: packed at submit, unpacked where the run executes.

A cluster run's ``skills_dir`` names a folder on the submitter's machine;
workers do not have it. :func:`pack_skills` reads the folder into a bundle
(relative path -> base64 of the file, at most :data:`MAX_BUNDLE_BYTES` and
:data:`MAX_BUNDLE_FILES`; hidden entries and ``__pycache__`` left out) that
travels in the run's spec; :func:`unpack_skills` writes it once per content
(its digest names the folder) under a worker's temporary directory and
returns that folder, which becomes the run's ``skills_dir`` there.
"""

from __future__ import annotations

import base64
import hashlib
import shutil
import time
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from srh_core.errors import ConfigurationError, DataError, InputTooLargeError

MAX_BUNDLE_BYTES = 4 * 1024**2
MAX_BUNDLE_FILES = 1_000
UNPACKED_DIR = "srh-skills"
_SKIPPED = ("__pycache__",)


def skill_files(root: Path) -> list[tuple[str, Path]]:
    """``(relative name, path)`` of every file a skills folder ships, in name order
    (hidden entries and ``__pycache__`` left out)."""
    found = []
    for path in sorted(root.rglob("*")):
        parts = path.relative_to(root).parts
        if any(part.startswith(".") or part in _SKIPPED for part in parts) or not path.is_file():
            continue
        found.append(("/".join(parts), path))
    return found


def pack_skills(directory: str | Path) -> dict[str, str]:
    """The files of a skills folder as a bundle.

    Raises:
        ConfigurationError: ``directory`` is not a directory, or a file cannot be read.
        InputTooLargeError: Past :data:`MAX_BUNDLE_BYTES` or :data:`MAX_BUNDLE_FILES`.
    """
    root = Path(directory)
    if not root.is_dir():
        raise ConfigurationError(f"skills_dir {str(directory)!r} is not a directory.",
                                 setting="skills_dir")
    bundle: dict[str, str] = {}
    total = 0
    for name, path in skill_files(root):
        try:
            data = path.read_bytes()
        except OSError as error:
            raise ConfigurationError(f"Cannot read {path}: {error}",
                                     setting="skills_dir") from None
        total += len(data)
        if total > MAX_BUNDLE_BYTES or len(bundle) >= MAX_BUNDLE_FILES:
            raise InputTooLargeError(
                f"skills_dir {str(directory)!r} holds more than {MAX_BUNDLE_FILES} files or "
                f"{MAX_BUNDLE_BYTES // 1024**2} MiB, the most a run ships to its workers.",
                path=str(directory), limit=MAX_BUNDLE_BYTES)
        bundle[name] = base64.b64encode(data).decode("ascii")
    return bundle


def bundle_digest(bundle: Mapping[str, str]) -> str:
    digest = hashlib.sha256()
    for name in sorted(bundle):
        digest.update(name.encode() + b"\0" + bundle[name].encode() + b"\0")
    return digest.hexdigest()[:16]


def unpack_skills(bundle: Mapping[str, str], root: str | Path) -> Path:
    """Write ``bundle`` under ``root`` (once per content); return the skills folder.

    Raises:
        DataError: A name would leave the folder (absolute, ``..``) or is not base64.
    """
    folder = Path(root) / UNPACKED_DIR / bundle_digest(bundle)
    if folder.is_dir():
        return folder
    staging = folder.with_name(f".{folder.name}.{time.time_ns()}")
    try:
        for name, encoded in bundle.items():
            relative = PurePosixPath(name)
            if relative.is_absolute() or ".." in relative.parts or not relative.parts:
                raise DataError(f"The run's skills bundle names {name!r}, outside its folder.")
            target = staging.joinpath(*relative.parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                target.write_bytes(base64.b64decode(encoded, validate=True))
            except ValueError:
                raise DataError(f"The run's skills bundle has a malformed file {name!r}.") \
                    from None
        staging.mkdir(parents=True, exist_ok=True)
        try:
            staging.rename(folder)
        except OSError:  # another task of this host unpacked it first
            pass
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return folder


__all__ = ["MAX_BUNDLE_BYTES", "MAX_BUNDLE_FILES", "bundle_digest", "pack_skills",
           "skill_files", "unpack_skills"]

"""Logical workspace paths: validation and lock-pattern matching.

A logical path is relative, ``/``-separated and rooted at the workspace; see
:mod:`srh_core.workspace.workspace` for the resolution rules built on these.
"""

from __future__ import annotations

import os
from fnmatch import fnmatchcase

from srh_core.errors import WorkspaceError

MAX_PATH_CHARS = 1024
MAX_SEGMENT_BYTES = 255
GLOB_CHARS = frozenset("*?[")
PATH_HINT = "use a path relative to the workspace root, such as 'data/train.csv'"


def split_relative(relative: str | os.PathLike[str]) -> tuple[str, ...]:
    """Validate a logical path and return its segments (rule 1 of ``Workspace.resolve``).

    Raises:
        WorkspaceError: The path is not a plain relative workspace path.
    """
    text = os.fspath(relative) if isinstance(relative, os.PathLike) else relative
    if not isinstance(text, str):
        raise WorkspaceError(f"Workspace paths must be str; got {type(text).__name__}.",
                             path=repr(text))
    if "\x00" in text:
        raise WorkspaceError(f"Path {text!r} contains a NUL byte; {PATH_HINT}.", path=text)
    if len(text) > MAX_PATH_CHARS:
        raise WorkspaceError(
            f"Path of {len(text)} characters is longer than {MAX_PATH_CHARS}; {PATH_HINT}.",
            path=text[:80] + "...")
    if text.startswith("/"):
        raise WorkspaceError(f"Path {text!r} is absolute; {PATH_HINT}.", path=text)
    segments = tuple(part for part in text.split("/") if part not in ("", "."))
    if ".." in segments:
        raise WorkspaceError(f"Path {text!r} uses '..', which could leave the workspace; "
                             f"{PATH_HINT}.", path=text)
    for part in segments:
        if len(part.encode("utf-8", "surrogateescape")) > MAX_SEGMENT_BYTES:
            raise WorkspaceError(f"A segment of {text!r} is longer than {MAX_SEGMENT_BYTES} "
                                 "bytes.", path=text)
    return segments


def matches_lock(pattern: tuple[str, ...], segments: tuple[str, ...]) -> bool:
    """True when ``pattern`` matches ``segments`` or one of its ancestors."""
    return len(pattern) <= len(segments) and all(
        fnmatchcase(name, part) for name, part in zip(segments, pattern, strict=False)
    )

"""A workspace: the one directory an agent run may read and write.

Paths given to a :class:`Workspace` are *logical*: relative, ``/``-separated,
rooted at the workspace. :meth:`Workspace.resolve` turns one into a real path
or raises :class:`~srh_core.errors.WorkspaceError` naming the path and what
is allowed. The rules, checked in this order:

1. a path is a ``str`` of at most ``MAX_PATH_CHARS`` characters, without NUL
   bytes, not absolute, without ``..`` segments, each segment at most
   ``MAX_SEGMENT_BYTES`` bytes (``""`` and ``"."`` mean the root);
2. if the first segment names a read-only mount, the rest is resolved under
   the mount's source directory, and writing is refused;
3. every existing prefix of the path and the final path are resolved with
   symlinks followed and must stay under the root (or the mount's source):
   a symlink pointing outside is refused wherever it sits;
4. writes (and removals, see :meth:`Workspace.resolve_removable`) are refused
   for locked paths.

Read-only mounts are named entries of the root mapped to outside
directories. Each is materialised as a symlink ``root/NAME -> source`` so
sandboxed programs (whose working directory is the root) see it too; the
sandbox keeps the source read-only.

Lock rule: a lock pattern is a workspace-relative path whose segments may
use ``fnmatch`` wildcards (``*``, ``?``, ``[...]``; ``*`` never crosses
``/``; no ``**``). A path is locked when a pattern matches it or one of its
ancestors, segment by segment: ``context.data`` locks the directory and all
it contains, ``*.json`` locks JSON files at the top level only. Locked paths
can be read but not created, written, truncated, renamed, moved over or
removed; a directory that contains a locked path cannot be removed or renamed.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Iterator, Mapping
from fnmatch import fnmatchcase
from pathlib import Path
from types import MappingProxyType

from srh_core.errors import WorkspaceError
from srh_core.workspace.paths import GLOB_CHARS, matches_lock, split_relative

DEFAULT_MAX_READ_BYTES = 10 * 1024 * 1024
MAX_WRITE_BYTES = 256 * 1024 * 1024
DEFAULT_TREE_ENTRIES = 200
MAX_TREE_ENTRIES = 10_000


class Workspace:
    """A root directory for an agent run, with read-only mounts and lock rules.

    Args:
        path: Root directory; created (with parents) when missing and ``create``.
            The caller owns it and decides when it is removed.
        read_only_mounts: Mount name (one path segment) -> existing outside
            directory, readable as ``NAME/...`` but never writable.
        locked: Initial lock patterns (see the module docstring).
        create: Create ``path`` when it does not exist.

    Raises:
        WorkspaceError: The root, a mount or a lock pattern is invalid.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        read_only_mounts: Mapping[str, str | os.PathLike[str]] | None = None,
        locked: Iterable[str] = (),
        *,
        create: bool = True,
    ) -> None:
        root = Path(path)
        if create and not os.path.lexists(root):
            root.mkdir(parents=True)
        if not root.is_dir():
            raise WorkspaceError(f"Workspace root {str(root)!r} is not a directory.",
                                 path=str(root))
        self._root = root.resolve(strict=True)
        self._mounts: dict[str, Path] = {}
        self._lock_patterns: tuple[tuple[str, ...], ...] = ()
        self._mutex = threading.Lock()
        for name, source in (read_only_mounts or {}).items():
            self.mount(name, source)
        for pattern in locked:
            self.lock(pattern)

    # -- configuration -------------------------------------------------------

    @property
    def root(self) -> Path:
        """The resolved workspace root."""
        return self._root

    @property
    def path(self) -> Path:
        """Alias of :attr:`root` (the reference API's name)."""
        return self._root

    @property
    def mounts(self) -> Mapping[str, Path]:
        """Read-only mounts: name -> resolved source directory."""
        return MappingProxyType(dict(self._mounts))

    @property
    def lock_patterns(self) -> tuple[str, ...]:
        """The lock patterns, as given (normalised)."""
        return tuple("/".join(pattern) for pattern in self._lock_patterns)

    def mount(self, name: str, source: str | os.PathLike[str]) -> Path:
        """Expose the outside directory ``source`` read-only as ``name``.

        Returns:
            The mount's source directory, resolved.

        Raises:
            WorkspaceError: Bad name, missing source, overlap with the root, or
                an existing entry of that name that is not this mount.
        """
        segments = split_relative(name)
        if len(segments) != 1 or any(char in GLOB_CHARS for char in segments[0]):
            raise WorkspaceError(f"Mount name {name!r} must be one plain path segment, "
                                 "such as 'inputs'.", path=name)
        real = Path(source).resolve(strict=False)
        if not real.is_dir():
            raise WorkspaceError(f"Mount source {str(source)!r} is not an existing directory.",
                                 path=str(source))
        if real.is_relative_to(self._root) or self._root.is_relative_to(real):
            raise WorkspaceError(f"Mount source {str(real)!r} overlaps the workspace root "
                                 f"{str(self._root)!r}; mount an outside directory.",
                                 path=str(source))
        self._link_mount(segments[0], real)
        with self._mutex:
            self._mounts[segments[0]] = real
        return real

    def _link_mount(self, name: str, real: Path) -> None:
        link = self._root / name
        if link.is_symlink() and Path(os.readlink(link)) == real:
            return
        if os.path.lexists(link):
            raise WorkspaceError(f"Cannot mount {name!r}: the workspace already has an entry "
                                 "with that name.", path=name)
        link.symlink_to(real, target_is_directory=True)

    def lock(self, pattern: str) -> None:
        """Add a lock pattern (see the module docstring)."""
        segments = split_relative(pattern)
        if not segments:
            raise WorkspaceError("The workspace root itself cannot be locked; lock entries "
                                 "inside it, such as 'context.data'.", path=pattern)
        with self._mutex:
            if segments not in self._lock_patterns:
                self._lock_patterns = (*self._lock_patterns, segments)

    def unlock(self, pattern: str) -> None:
        """Remove a lock pattern added with :meth:`lock` (no-op when absent)."""
        segments = split_relative(pattern)
        with self._mutex:
            self._lock_patterns = tuple(p for p in self._lock_patterns if p != segments)

    def is_locked(self, relative: str) -> bool:
        """Whether the logical path (or one of its ancestors) matches a lock pattern."""
        segments = split_relative(relative)
        return any(matches_lock(pattern, segments) for pattern in self._lock_patterns)

    def locked_paths(self) -> list[Path]:
        """Existing paths that match a lock pattern (directories as one entry)."""
        found: list[Path] = []
        for pattern in self._lock_patterns:
            found += [path for path in self._expand(pattern) if path not in found]
        return found

    def _expand(self, pattern: tuple[str, ...]) -> Iterator[Path]:
        current = [self._root]
        for part in pattern:
            following: list[Path] = []
            for directory in current:
                if directory.is_dir() and not directory.is_symlink():
                    following += [directory / entry.name for entry in os.scandir(directory)
                                  if fnmatchcase(entry.name, part)]
            current = following
        yield from current

    # -- resolution ------------------------------------------------------------

    def resolve(self, relative: str, *, for_write: bool = False) -> Path:
        """Resolve a logical path safely (see the module docstring).

        Args:
            relative: Workspace-relative path.
            for_write: The caller will create, modify or truncate the path.

        Returns:
            The real path (symlinks resolved); it need not exist.

        Raises:
            WorkspaceError: The path breaks a rule; the message says which and
                what is allowed.
        """
        segments = split_relative(relative)
        base, rest = self._base(segments)
        if for_write and base != self._root:
            raise WorkspaceError(f"Path {relative!r} is inside the read-only mount "
                                 f"{segments[0]!r}; write into the workspace instead.",
                                 path=relative)
        resolved = self._walk(base, rest, relative)
        if for_write:
            self._check_unlocked(segments, resolved, relative)
        return resolved

    def resolve_removable(self, relative: str) -> Path:
        """Resolve a path that will be removed, renamed or moved over.

        The final segment is not followed: removing a symlink removes the link.

        Raises:
            WorkspaceError: The path is the root, a mount (or inside one), locked,
                or a directory containing a locked path.
        """
        segments = split_relative(relative)
        if not segments:
            raise WorkspaceError("The workspace root cannot be removed or moved.",
                                 path=relative)
        if segments[0] in self._mounts:
            raise WorkspaceError(f"Path {relative!r} is a read-only mount or inside one; it "
                                 "cannot be removed or moved.", path=relative)
        self._check_unlocked(segments, self._root.joinpath(*segments), relative)
        parent = self.resolve("/".join(segments[:-1]), for_write=True)
        entry = parent / segments[-1]
        self._check_unlocked(segments, entry, relative)
        for locked in self.locked_paths():
            if locked == entry or locked.is_relative_to(entry):
                raise WorkspaceError(f"Path {relative!r} contains the locked path "
                                     f"{self.display(locked)!r}; it cannot be removed or "
                                     "moved.", path=relative)
        return entry

    def _base(self, segments: tuple[str, ...]) -> tuple[Path, tuple[str, ...]]:
        if segments and segments[0] in self._mounts:
            return self._mounts[segments[0]], segments[1:]
        return self._root, segments

    def _walk(self, base: Path, rest: tuple[str, ...], relative: str) -> Path:
        current = base
        for part in rest:
            current = current / part
            if os.path.lexists(current):
                self._check_inside(current.resolve(strict=False), base, relative)
        resolved = current.resolve(strict=False)
        self._check_inside(resolved, base, relative)
        return resolved

    def _check_inside(self, resolved: Path, base: Path, relative: str) -> None:
        if not resolved.is_relative_to(base):
            where = "the workspace" if base == self._root else "its read-only mount"
            raise WorkspaceError(f"Path {relative!r} goes through a symlink that leaves "
                                 f"{where}; only links that stay inside are followed.",
                                 path=relative)

    def _check_unlocked(self, segments: tuple[str, ...], resolved: Path, relative: str) -> None:
        logical = self.display(resolved)
        if any(matches_lock(pattern, segments) for pattern in self._lock_patterns) or (
            logical != relative and self.is_locked(logical)
        ):
            raise WorkspaceError(f"Path {relative!r} is locked: it can be read but not "
                                 f"modified, moved or removed (lock rules: "
                                 f"{', '.join(self.lock_patterns)}).", path=relative)

    def display(self, path: Path) -> str:
        """Return the logical path of a real path under the root or a mount."""
        for name, source in self._mounts.items():
            if path.is_relative_to(source):
                return "/".join((name, *path.relative_to(source).parts))
        if path.is_relative_to(self._root):
            return "/".join(path.relative_to(self._root).parts) or "."
        return str(path)

    # -- file helpers ----------------------------------------------------------

    def exists(self, relative: str) -> bool:
        """Whether the path exists (a broken symlink counts as existing)."""
        return os.path.lexists(self.resolve(relative))

    def read_bytes(self, relative: str, max_bytes: int = DEFAULT_MAX_READ_BYTES) -> bytes:
        """Read a whole file of at most ``max_bytes`` bytes.

        Raises:
            WorkspaceError: Invalid path, not a file, or larger than ``max_bytes``.
        """
        path = self.resolve(relative)
        if not path.is_file():
            raise WorkspaceError(f"{relative!r} is not an existing file.", path=relative)
        size = path.stat().st_size
        if size > max_bytes:
            raise WorkspaceError(f"{relative!r} has {size} bytes, more than the {max_bytes} "
                                 "allowed here; read part of it (e.g. with head).",
                                 path=relative)
        with path.open("rb") as handle:
            return handle.read(max_bytes)

    def read_text(self, relative: str, max_bytes: int = DEFAULT_MAX_READ_BYTES) -> str:
        """Read a UTF-8 text file (undecodable bytes replaced); see :meth:`read_bytes`."""
        return self.read_bytes(relative, max_bytes).decode("utf-8", errors="replace")

    def write_bytes(self, relative: str, data: bytes, *, make_parents: bool = False) -> Path:
        """Create or replace a file.

        Raises:
            WorkspaceError: Invalid, read-only or locked path, a directory, a
                missing parent (without ``make_parents``) or more than ``MAX_WRITE_BYTES``.
        """
        if len(data) > MAX_WRITE_BYTES:
            raise WorkspaceError(f"Refusing to write {len(data)} bytes to {relative!r}; the "
                                 f"limit is {MAX_WRITE_BYTES}.", path=relative)
        path = self.resolve(relative, for_write=True)
        if path.is_dir():
            raise WorkspaceError(f"{relative!r} is a directory.", path=relative)
        if make_parents:
            self.mkdir(os.path.dirname(relative) or ".", parents=True)
        elif not path.parent.is_dir():
            raise WorkspaceError(f"The parent directory of {relative!r} does not exist.",
                                 path=relative)
        path.write_bytes(data)
        return path

    def write_text(self, relative: str, text: str, *, make_parents: bool = False) -> Path:
        """Create or replace a UTF-8 text file; see :meth:`write_bytes`."""
        return self.write_bytes(relative, text.encode("utf-8"), make_parents=make_parents)

    def mkdir(self, relative: str, *, parents: bool = False) -> Path:
        """Create a directory (and its parents when ``parents``); existing is fine."""
        segments = split_relative(relative)
        for depth in range(1 if parents else len(segments), len(segments) + 1):
            path = self.resolve("/".join(segments[:depth]), for_write=True)
            if not path.is_dir():
                path.mkdir()
        return self.resolve(relative)

    def list(self, relative: str = ".") -> list[str]:
        """Sorted entry names of a directory; directories end with ``/``."""
        path = self.resolve(relative)
        if not path.is_dir():
            raise WorkspaceError(f"{relative!r} is not an existing directory.", path=relative)
        return sorted(
            entry.name + ("/" if entry.is_dir() else "") for entry in os.scandir(path)
        )

    def tree(self, max_entries: int = DEFAULT_TREE_ENTRIES) -> str:
        """An indented listing of the workspace, at most ``max_entries`` lines."""
        if isinstance(max_entries, bool) or not isinstance(max_entries, int) or not (
            1 <= max_entries <= MAX_TREE_ENTRIES
        ):
            raise WorkspaceError(f"max_entries must be an int in [1, {MAX_TREE_ENTRIES}]; "
                                 f"got {max_entries!r}.", path=".")
        lines: list[str] = []
        omitted = self._tree_lines(self._root, 0, lines, max_entries)
        if omitted:
            lines.append(f"... [{omitted} more entries not shown]")
        return "\n".join(lines)

    def _tree_lines(self, directory: Path, depth: int, lines: list[str], limit: int) -> int:
        omitted = 0
        for entry in sorted(os.scandir(directory), key=lambda item: item.name):
            if len(lines) >= limit:
                omitted += 1
                continue
            is_mount = depth == 0 and entry.name in self._mounts
            suffix = "/ [read-only mount]" if is_mount else "/" if entry.is_dir() else ""
            lines.append("  " * depth + entry.name + suffix)
            if entry.is_dir(follow_symlinks=False) or is_mount:
                target = self._mounts[entry.name] if is_mount else Path(entry.path)
                omitted += self._tree_lines(target, depth + 1, lines, limit)
        return omitted

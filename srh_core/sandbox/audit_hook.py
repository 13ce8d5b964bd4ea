"""The audit hook (PEP 578) the bootstrap installs before user code runs.

Runs inside the sandboxed child, so it uses the standard library only. It is
the *policy* layer: it gives precise ``PermissionError`` messages, enforces
rules the kernel layer cannot express (workspace lock rules, read-only
mounts when Landlock is missing) and is the only layer on systems without
Landlock and seccomp. It is not, alone, a security boundary: PEP 578 hooks
see only what CPython reports, so C code (extension modules, ``dlopen``) and
memory-corruption bugs bypass it. See ``srh_core.sandbox`` for the whole model.

What it refuses:

- process creation: ``os.system``, ``os.exec*``, ``os.fork``/``forkpty``,
  ``os.spawn*``, ``os.posix_spawn*``, ``subprocess.Popen``; signals to other
  processes (``os.kill``/``killpg``); raising resource limits;
- every ``socket.*`` event (create, connect, bind, getaddrinfo, ...);
- every ``ctypes.*`` event (dlopen, foreign calls, raw memory access), building
  code objects (``code.__new__``, ``code.replace``), ``gc.get_objects``/
  ``get_referrers``/``get_referents`` (used to find and patch the hook's
  state), and rebinding ``__code__``/``__defaults__`` of the hook's functions;
- ``open``/``os.open`` and the ``os`` file operations (listdir, scandir,
  walk, chdir, mkdir, remove, rmdir, rename/replace, truncate, utime, chmod,
  xattr, sqlite3.connect, shutil.rmtree) on paths outside the allowed roots;
  writes outside the writable roots, into read-only roots or to locked
  workspace paths; symlinks, hard links, fifos, device nodes and chown;
  ``chmod`` to a mode with the setuid or setgid bit (a root-owned setuid file
  left in the workspace would run as root for whoever starts it);
  relative paths containing ``..`` (they could be resolved against a
  directory file descriptor the hook cannot see).

How it resists tampering: every helper receives the functions and builtins it
uses as default arguments bound when the hook is built, so rebinding
``builtins``, ``os``/``os.path`` attributes or module globals does not change
its decisions, and its policy is made of tuples and strings. Paths are
converted to exact ``str`` through unbound ``str``/``bytes`` methods so a
``str`` subclass cannot lie. What it does not stop: a program can still read
the hook's frame through an exception's traceback (``tb_frame``), use
``sys._getframe`` and other introspection, race a check against a concurrent
rename (TOCTOU), or exploit a CPython memory-safety bug; for the allowed
roots, Landlock is the backstop, for locks there is none.
"""

from __future__ import annotations

import errno
import fnmatch
import os
import re
import stat
import sys

WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
PRIVILEGE_MODE_BITS = stat.S_ISUID | stat.S_ISGID
MAX_SYMLINK_HOPS = 40
NO_DIR_FD = (None, -1, -100)

DENIED_EVENTS = frozenset({
    "os.system", "os.exec", "os.fork", "os.forkpty", "os.posix_spawn", "os.spawn",
    "os.startfile", "subprocess.Popen", "pty.spawn", "os.link", "os.symlink", "os.chown",
    "os.chflags", "os.lchflags", "os.mkfifo", "os.mknod", "resource.setrlimit",
    "resource.prlimit", "code.__new__", "gc.get_objects", "gc.get_referrers",
    "gc.get_referents", "sqlite3.enable_load_extension", "sqlite3.load_extension",
    "syslog.openlog", "os.add_dll_directory",
})
DENIED_PREFIXES = ("socket.", "ctypes.", "_winapi.", "winreg.", "msvcrt.", "webbrowser.")
# event -> (index of the path argument, index of its dir_fd argument or None)
READ_PATH_EVENTS = {
    "os.listdir": (0, None), "os.scandir": (0, None), "os.walk": (0, None),
    "os.fwalk": (0, 4), "os.chdir": (0, None), "os.getxattr": (0, None),
    "os.listxattr": (0, None),
}
WRITE_PATH_EVENTS = {
    "os.mkdir": (0, 2), "os.chmod": (0, 2), "os.utime": (0, 3), "os.truncate": (0, None),
    "os.setxattr": (0, None), "os.removexattr": (0, None), "sqlite3.connect": (0, None),
}
REMOVE_PATH_EVENTS = {"os.remove": (0, 1), "os.rmdir": (0, 1), "shutil.rmtree": (0, 1)}

# Every function below takes the builtins, os functions and constants it uses
# as default arguments: user code can rebind builtins, os attributes and this
# module's globals (reachable through a traceback's frame), but not these
# bindings (rebinding __defaults__ of these functions is refused).


def _deny(what: str, path: object = None, _error: type = PermissionError,
          _eacces: int = errno.EACCES) -> None:
    if path is None:
        raise _error(_eacces, f"[sandbox] {what} is not allowed in the sandbox")
    raise _error(_eacces, f"[sandbox] {what} is not allowed in the sandbox", path)


def _as_str(value: object, _isinstance=isinstance, _encode=str.encode, _decode=bytes.decode,
            _bytes=bytes, _binary=(bytes, bytearray, memoryview), _type=type,
            _deny=_deny) -> str | None:
    """Return an exact ``str`` copy of a path argument, ``None`` for an fd."""
    if value is None or _isinstance(value, int):
        return None
    if _isinstance(value, str):
        return _decode(_encode(value, "utf-8", "surrogateescape"), "utf-8", "surrogateescape")
    if _isinstance(value, _binary):
        return _decode(_bytes(value), "utf-8", "surrogateescape")
    _deny(f"a path of type {_type(value).__name__}")
    return None


def _realpath(path: str, _lstat=os.lstat, _readlink=os.readlink, _islink=stat.S_ISLNK,
              _max_hops=MAX_SYMLINK_HOPS, _deny=_deny) -> str:
    """Resolve symlinks like ``os.path.realpath``, with captured primitives."""
    pending = path.split("/")
    pending.reverse()
    resolved, hops = "", 0
    while pending:
        name = pending.pop()
        if name in ("", "."):
            continue
        if name == "..":
            resolved = resolved.rpartition("/")[0]
            continue
        candidate = resolved + "/" + name
        try:
            mode = _lstat(candidate).st_mode
        except OSError:
            resolved = candidate
            continue
        if not _islink(mode):
            resolved = candidate
            continue
        hops += 1
        if hops > _max_hops:
            _deny("a path with too many symlinks", path)
        target = _readlink(candidate).split("/")
        target.reverse()
        pending += target
        if target[-1] == "":
            resolved = ""
    return resolved or "/"


def _within(path: str, roots: tuple[str, ...]) -> bool:
    for root in roots:
        if path == root or path.startswith(root + "/"):
            return True
    return False


def _fd_directory(fd: int, _readlink=os.readlink, _isdir=os.path.isdir) -> str | None:
    try:
        target = _readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None
    return target if target.startswith("/") and _isdir(target) else None


def _bases(path: str, dir_fd: object, policy: tuple, _getcwd=os.getcwd, _range=range,
           _fd_directory=_fd_directory, _isinstance=isinstance, _no_dir_fd=NO_DIR_FD,
           _deny=_deny) -> list[str]:
    """Directories a relative ``path`` may be resolved against."""
    if path.startswith("/"):
        return [""]
    if ".." in path.split("/"):
        _deny("a relative path containing '..' (use an absolute or a plain relative path)", path)
    if dir_fd not in _no_dir_fd and _isinstance(dir_fd, int):
        base = _fd_directory(dir_fd)
        return [base] if base else [""]
    # The "open" event does not report dir_fd, so check every open directory.
    bases = [_getcwd()]
    for fd in _range(3, policy[6]):
        base = _fd_directory(fd)
        if base and base not in bases:
            bases.append(base)
    return bases


def _entries(path: object, dir_fd: object, policy: tuple, _as_str=_as_str, _bases=_bases,
             _realpath=_realpath) -> list[tuple[str, str]]:
    """Return (entry, realpath) per candidate base; entry keeps a final symlink."""
    text = _as_str(path)
    if text is None:
        return []
    result = []
    for base in _bases(text, dir_fd, policy):
        joined = (base + "/" + text) if base else text
        real = _realpath(joined)
        head, _, name = joined.rstrip("/").rpartition("/")
        entry = real if name in ("", ".", "..") else _realpath(head or "/").rstrip("/") + "/" + name
        result.append((entry, real))
    return result


def _locked(real: str, policy: tuple, _within=_within, _len=len, _all=all,
            _enumerate=enumerate) -> bool:
    workspace, patterns = policy[3], policy[4]
    if not workspace or real == workspace or not _within(real, (workspace,)):
        return False
    segments = real[_len(workspace) + 1:].split("/")
    for pattern in patterns:
        if _len(pattern) <= _len(segments) and _all(
            part.fullmatch(segments[index]) for index, part in _enumerate(pattern)
        ):
            return True
    return False


def _contains_locked(real: str, policy: tuple, _any=any) -> bool:
    prefix = real.rstrip("/") + "/"
    return _any(locked == real or locked.startswith(prefix) for locked in policy[5])


def _check_read(path: object, dir_fd: object, policy: tuple, _entries=_entries,
                _within=_within, _deny=_deny) -> None:
    for _entry, real in _entries(path, dir_fd, policy):
        if not (_within(real, policy[0]) or _within(real, policy[1]) or real in policy[7]):
            _deny("reading outside the workspace, the run directory and the Python installation",
                  real)


def _check_write(path: object, dir_fd: object, policy: tuple, _entries=_entries,
                 _within=_within, _locked=_locked, _contains=_contains_locked,
                 _deny=_deny) -> None:
    for entry, real in _entries(path, dir_fd, policy):
        if real in policy[7]:
            continue
        for target in (entry, real):
            if not _within(target, policy[1]) or _within(target, policy[2]):
                _deny("writing outside the workspace and the run directory "
                      "(read-only mounts and the Python installation are read-only)", target)
            if _locked(target, policy) or _contains(target, policy):
                _deny("modifying a locked workspace path", target)


def _check_remove(path: object, dir_fd: object, policy: tuple, _entries=_entries,
                  _check_write=_check_write, _deny=_deny) -> None:
    for entry, _real in _entries(path, dir_fd, policy):
        if entry in policy[1]:
            _deny("removing or renaming a sandbox root", entry)
    _check_write(path, dir_fd, policy)


def _argument(args: tuple, index: int | None, _len=len) -> object:
    return args[index] if index is not None and index < _len(args) else None


def _check_event(event: str, args: tuple, policy: tuple, _reads=READ_PATH_EVENTS,
                 _writes=WRITE_PATH_EVENTS, _removes=REMOVE_PATH_EVENTS, _arg=_argument,
                 _check_read=_check_read, _check_write=_check_write,
                 _check_remove=_check_remove, _isinstance=isinstance, _deny=_deny) -> bool:
    """Check a path event; return False when ``event`` is not a path event."""
    for table, check in ((_reads, _check_read), (_writes, _check_write),
                         (_removes, _check_remove)):
        if event in table:
            path_index, fd_index = table[event]
            path = _arg(args, path_index)
            # Metadata of a file opened read-only (a locked file, the stdlib)
            # could be changed through its descriptor; truncate needs write access.
            if table is _writes and event != "os.truncate" and _isinstance(path, int):
                _deny(f"{event} on a file descriptor")
            check("." if path is None else path, _arg(args, fd_index), policy)
            return True
    return False


def _dispatch(event: str, args: tuple, policy: tuple, _check_event=_check_event,
              _check_read=_check_read, _check_write=_check_write, _check_remove=_check_remove,
              _write_flags=WRITE_FLAGS, _denied=DENIED_EVENTS, _prefixes=DENIED_PREFIXES,
              _arg=_argument, _isinstance=isinstance, _any=any, _deny=_deny,
              _privileged=PRIVILEGE_MODE_BITS, _oct=oct) -> None:
    # Arguments are read through _arg: code may raise these events itself
    # with sys.audit() and any arguments, which must not crash the hook.
    if event == "open":
        flags = _arg(args, 2)
        writes = _isinstance(flags, int) and flags & _write_flags
        (_check_write if writes else _check_read)(_arg(args, 0), None, policy)
    elif event == "os.rename":
        _check_remove(_arg(args, 0), _arg(args, 2), policy)
        _check_write(_arg(args, 1), _arg(args, 3), policy)
    elif event == "os.chmod" and _isinstance(_arg(args, 1), int) and \
            _arg(args, 1) & _privileged:
        _deny(f"setting the setuid or setgid bit (chmod to mode {_oct(_arg(args, 1))})")
    elif event in ("os.kill", "os.killpg"):
        if _arg(args, 0) not in (0, policy[8]):
            _deny("sending a signal to another process")
    elif event == "object.__setattr__":
        if _arg(args, 1) in ("__code__", "__defaults__", "__kwdefaults__") and _any(
            _arg(args, 0) is function for function in policy[9]
        ):
            _deny("patching the sandbox audit hook")
    elif _check_event(event, args, policy):
        return
    elif event in _denied or event.startswith(_prefixes):
        _deny(repr(event))


HOOK_FUNCTIONS = (_deny, _as_str, _realpath, _within, _fd_directory, _bases, _entries, _locked,
                  _contains_locked, _check_read, _check_write, _check_remove, _argument,
                  _check_event, _dispatch)


def build_policy(config: dict) -> tuple:
    """Freeze the bootstrap configuration into the tuple the hook reads.

    Args:
        config: ``read_roots``, ``write_roots``, ``readonly_roots``, ``workspace``,
            ``lock_patterns``, ``locked_paths``, ``max_fd``, ``device_files``, ``pid``.

    Returns:
        A tuple of immutable values (indexes are used by the hook functions).
    """
    patterns = tuple(
        tuple(re.compile(fnmatch.translate(part)) for part in pattern.split("/"))
        for pattern in config.get("lock_patterns", ())
    )
    return (
        tuple(config["read_roots"]), tuple(config["write_roots"]),
        tuple(config.get("readonly_roots", ())), config.get("workspace") or "",
        patterns, tuple(config.get("locked_paths", ())), int(config.get("max_fd", 256)),
        frozenset(config.get("device_files", ())), int(config["pid"]), HOOK_FUNCTIONS,
    )


def install(config: dict) -> None:
    """Install the hook; from then on it cannot be removed by Python code."""
    policy = build_policy(config)

    def audit(event: str, args: tuple, _policy: tuple = policy, _dispatch=_dispatch) -> None:
        _dispatch(event, args, _policy)

    policy = (*policy[:9], (*HOOK_FUNCTIONS, audit))
    audit.__defaults__ = (policy, _dispatch)
    sys.addaudithook(audit)

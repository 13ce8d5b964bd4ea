"""Entry point of the sandboxed child: confine the process, then run user code.

Started by :class:`srh_core.sandbox.runner.SandboxRunner` as
``python -I -S -B bootstrap.py CONFIG_JSON``; it imports no ``srh_core``
module (``-I -S`` leave only the standard library on ``sys.path``) and loads
its siblings, ``containment.py``, ``confine.py`` and ``audit_hook.py``, by
file path.

Order matters and is the point of this file:

0. die with the parent: SIGKILL when the thread that started it ends
   (``PR_SET_PDEATHSIG``; that thread waits for this process, so it is the
   run's tool process dying), and at once if it is already gone;
1. join the run's pids cgroup, before any other task exists;
2. ``sys.path`` gets the interpreter's site-packages (no ``.pth`` processing);
3. in ``json`` mode, stdin is read and parsed into ``payload`` (and kept
   readable through ``sys.stdin``); the program is read and the result file
   opened (``emit_result`` writes through that descriptor);
4. in a private mount namespace, the size-limited tmpfs over the run directory
   (the program is written again inside it, for tracebacks);
5. resource limits, then (root without a cgroup) the dedicated uid;
6. Landlock, then seccomp (both via ``ctypes``, before ctypes is forbidden);
7. the audit hook;
8. the isolation report is written to the status pipe, which is then closed,
   so user code can neither forge nor extend it;
9. user code runs as ``__main__`` with ``emit_result`` and ``payload`` in its
   globals; an uncaught exception prints a traceback without bootstrap frames
   and exits with status 1, after a one-line outcome (exception type, whether
   it was a ``MemoryError``) on the outcome pipe. That pipe stays writable by
   user code, which can only misreport its own failure.
"""

from __future__ import annotations

import builtins
import importlib.util
import io
import json
import os
import sys
import traceback
import types

SANDBOX_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
BOOTSTRAP_FAILURE_EXIT = 121
USER_ERROR_EXIT = 1


def _load_sibling(name: str) -> types.ModuleType:
    path = os.path.join(SANDBOX_DIR, f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"_srh_sandbox_{name}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _uid_task_count(uid: int) -> int:
    """Count the threads owned by ``uid``: RLIMIT_NPROC counts them all."""
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status", encoding="ascii", errors="replace") as handle:
                fields = dict(line.split(":", 1) for line in handle if ":" in line)
            if int(fields["Uid"].split()[0]) == uid:
                total += int(fields["Threads"])
        except (OSError, KeyError, ValueError):
            continue
    return total


def _rlimits(config: dict) -> dict[str, int]:
    limits = dict(config["rlimits"])
    if os.geteuid() != 0:
        # Root ignores RLIMIT_NPROC; for others it is per uid, so leave room
        # for what the uid already runs and allow a few threads more.
        limits["RLIMIT_NPROC"] = _uid_task_count(os.geteuid()) + int(config["process_limit"])
    return limits


def _jsonable(value: object) -> object:
    if hasattr(value, "tolist"):
        return value.tolist()  # numpy arrays and scalars
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    raise TypeError(f"emit_result cannot serialise {type(value).__name__}")


def _too_deep(value: object, limit: int) -> bool:
    """Whether ``value`` nests lists, tuples, dicts and arrays deeper than ``limit``."""
    pending = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, list | tuple | dict):
            if depth > limit:
                return True
            children = item.values() if isinstance(item, dict) else item
            pending += [(child, depth + 1) for child in children  # scalars need no visit
                        if isinstance(child, list | tuple | dict) or hasattr(child, "ndim")]
        elif depth + getattr(item, "ndim", 0) - 1 > limit:
            return True
    return False


def _make_emit_result(fd: int, max_bytes: int, max_depth: int):
    # Bound now: user code may rebind builtins and os attributes.
    write, truncate, seek = os.write, os.ftruncate, os.lseek

    def emit_result(value: object) -> None:
        """Send ``value`` (JSON-serialisable, numpy allowed) to the caller."""
        if _too_deep(value, max_depth):
            raise ValueError(f"emit_result: the result is nested deeper than {max_depth} "
                             "levels of lists and dicts; return a flatter structure.")
        data = json.dumps(value, default=_jsonable).encode("utf-8", "surrogatepass")
        if len(data) > max_bytes:
            raise ValueError(f"emit_result: result of {len(data)} bytes exceeds {max_bytes}")
        seek(fd, 0, 0)
        truncate(fd, 0)
        view = memoryview(data)
        while view:
            view = view[write(fd, view):]

    return emit_result


def _open_result(config: dict) -> int:
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
    return os.open(config["result_path"], flags, 0o600)


def _read_program(config: dict) -> str:
    with open(config["program"], encoding="utf-8") as handle:
        return handle.read()


def _task_cap(config: dict, containment: types.ModuleType) -> list[str]:
    if config.get("cgroup") and containment.join_cgroup(config["cgroup"]):
        return ["pids_cgroup"]
    return []


def _dedicated_uid(config: dict, containment: types.ModuleType) -> list[str]:
    base = config.get("dedicated_uid_base")
    if base is None or not containment.use_dedicated_uid(base + os.getpid(),
                                                         int(config["process_limit"])):
        return []
    return ["dedicated_uid"]


def _scratch(config: dict, containment: types.ModuleType, source: str) -> list[str]:
    """Mount the run directory's tmpfs and rebuild its layout inside it."""
    scratch = config.get("scratch")
    if not scratch or not containment.mount_scratch(scratch["path"], int(scratch["size"]),
                                                    int(scratch["files"])):
        return []
    os.makedirs(os.path.join(scratch["path"], "tmp"), exist_ok=True)
    os.makedirs(scratch["cwd"], exist_ok=True)
    with open(config["program"], "w", encoding="utf-8") as handle:
        handle.write(source)
    os.chdir(scratch["cwd"])
    return ["tmpfs"]


def _read_payload(config: dict) -> object:
    raw = sys.stdin.read()
    sys.stdin = io.StringIO(raw)
    if config["mode"] != "json":
        return None
    return json.loads(raw)


def _confine(config: dict, confine: types.ModuleType, audit_hook: types.ModuleType,
             containment: types.ModuleType) -> list[str]:
    applied = []
    if confine.apply_rlimits(_rlimits(config)):
        applied.append("rlimits")
    applied += _dedicated_uid(config, containment)
    if config["landlock"] and confine.apply_landlock(
        config["read_roots"] + config["system_paths"], config["write_roots"],
        config["device_files"],
    ):
        applied.append("landlock")
    if config["seccomp"] and confine.apply_seccomp(os.getpid()):
        applied.append("seccomp")
    audit_hook.install({**config, "pid": os.getpid()})
    applied.append("audit_hook")
    return applied


def _report(fd: int, report: dict) -> None:
    os.write(fd, json.dumps(report).encode())
    os.close(fd)


def _report_outcome(fd: int, error: BaseException | None) -> None:
    """Write the outcome line without ever blocking (user code may have filled the pipe)."""
    outcome = {"exception": None if error is None else type(error).__qualname__,
               "memory_error": isinstance(error, MemoryError)}
    try:
        os.set_blocking(fd, False)
        os.write(fd, json.dumps(outcome).encode())
        os.close(fd)
    except OSError:
        pass


def _run_user_code(config: dict, payload: object, source: str, result_fd: int) -> int:
    path = config["program"]
    outcome_fd = int(config["outcome_fd"])
    code = compile(source, path, "exec", dont_inherit=True)
    main = types.ModuleType("__main__")
    emit = _make_emit_result(result_fd, config["max_result_bytes"], config["max_result_depth"])
    main.__dict__.update(__builtins__=builtins, __file__=path, payload=payload, emit_result=emit)
    sys.modules["__main__"] = main
    sys.argv = [path]
    try:
        exec(code, main.__dict__)
    except SystemExit:
        _report_outcome(outcome_fd, None)
        raise
    except BaseException as error:  # noqa: BLE001 - report any user failure as exit 1
        _report_outcome(outcome_fd, error)
        _print_user_traceback(error)
        return USER_ERROR_EXIT
    _report_outcome(outcome_fd, None)
    return 0


def _print_user_traceback(error: BaseException) -> None:
    """Print the traceback without frames of the sandbox's own modules."""
    report = traceback.TracebackException.from_exception(error)
    pending, seen = [report], set()
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        current.stack = traceback.StackSummary.from_list(
            [frame for frame in current.stack if not frame.filename.startswith(SANDBOX_DIR)]
        )
        pending += [link for link in (current.__cause__, current.__context__) if link]
    sys.stderr.write("".join(report.format()))


def _die_with_parent(parent_pid: int | None) -> None:
    try:
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError, ImportError):
        pass
    if parent_pid is not None and os.getppid() != parent_pid:
        os._exit(BOOTSTRAP_FAILURE_EXIT)


def main(argv: list[str]) -> int:
    """Confine this process as ``argv[1]`` (JSON) says, then run the program."""
    config = json.loads(argv[1])
    _die_with_parent(config.get("parent_pid"))
    status_fd = int(config["status_fd"])
    try:
        containment = _load_sibling("containment")
        applied = _task_cap(config, containment)
        confine = _load_sibling("confine")
        audit_hook = _load_sibling("audit_hook")
        sys.path[:] = [*sys.path, *config["site_paths"]]
        sys.dont_write_bytecode = True
        payload = _read_payload(config)
        source, result_fd = _read_program(config), _open_result(config)
        applied += config["launcher_isolation"] + _scratch(config, containment, source)
        applied += _confine(config, confine, audit_hook, containment)
    except Exception as error:  # noqa: BLE001 - any failure here means "could not start"
        _report(status_fd, {"ready": False, "error": f"{type(error).__name__}: {error}"})
        return BOOTSTRAP_FAILURE_EXIT
    _report(status_fd, {"ready": True, "isolation": applied})
    return _run_user_code(config, payload, source, result_fd)


if __name__ == "__main__":
    sys.exit(main(sys.argv))

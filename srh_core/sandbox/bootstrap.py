"""Entry point of the sandboxed child: confine the process, then run user code.

Started by :class:`srh_core.sandbox.runner.SandboxRunner` as
``python -I -S -B bootstrap.py CONFIG_JSON``; it imports no ``srh_core``
module (``-I -S`` leave only the standard library on ``sys.path``) and loads
its two siblings, ``confine.py`` and ``audit_hook.py``, by file path.

Order matters and is the point of this file:

1. resource limits;
2. ``sys.path`` gets the interpreter's site-packages (no ``.pth`` processing);
3. in ``json`` mode, stdin is read and parsed into ``payload`` (and kept
   readable through ``sys.stdin``);
4. Landlock, then seccomp (both via ``ctypes``, before ctypes is forbidden);
5. the audit hook;
6. the isolation report is written to the status pipe, which is then closed,
   so user code can neither forge nor extend it;
7. user code runs as ``__main__`` with ``emit_result`` and ``payload`` in its
   globals; an uncaught exception prints a traceback without bootstrap frames
   and exits with status 1.
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


def _make_emit_result(path: str, max_bytes: int):
    write_file = io.open  # bound now: user code may rebind builtins.open

    def emit_result(value: object) -> None:
        """Send ``value`` (JSON-serialisable, numpy allowed) to the caller."""
        text = json.dumps(value, default=_jsonable)
        if len(text) > max_bytes:
            raise ValueError(f"emit_result: result of {len(text)} bytes exceeds {max_bytes}")
        with write_file(path, "w", encoding="utf-8") as handle:
            handle.write(text)

    return emit_result


def _read_payload(config: dict) -> object:
    raw = sys.stdin.read()
    sys.stdin = io.StringIO(raw)
    if config["mode"] != "json":
        return None
    return json.loads(raw)


def _confine(config: dict, confine: types.ModuleType, audit_hook: types.ModuleType) -> list[str]:
    applied = []
    if confine.apply_rlimits(_rlimits(config)):
        applied.append("rlimits")
    applied += config["launcher_isolation"]
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


def _run_user_code(config: dict, payload: object) -> int:
    path = config["program"]
    with open(path, encoding="utf-8") as handle:
        code = compile(handle.read(), path, "exec", dont_inherit=True)
    main = types.ModuleType("__main__")
    main.__dict__.update(__builtins__=builtins, __file__=path, payload=payload,
                         emit_result=_make_emit_result(config["result_path"],
                                                       config["max_result_bytes"]))
    sys.modules["__main__"] = main
    sys.argv = [path]
    try:
        exec(code, main.__dict__)
    except SystemExit:
        raise
    except BaseException as error:  # noqa: BLE001 - report any user failure as exit 1
        _print_user_traceback(error)
        return USER_ERROR_EXIT
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


def main(argv: list[str]) -> int:
    """Confine this process as ``argv[1]`` (JSON) says, then run the program."""
    config = json.loads(argv[1])
    status_fd = int(config["status_fd"])
    try:
        confine = _load_sibling("confine")
        audit_hook = _load_sibling("audit_hook")
        sys.path[:] = [*sys.path, *config["site_paths"]]
        sys.dont_write_bytecode = True
        payload = _read_payload(config)
        applied = _confine(config, confine, audit_hook)
    except Exception as error:  # noqa: BLE001 - any failure here means "could not start"
        _report(status_fd, {"ready": False, "error": f"{type(error).__name__}: {error}"})
        return BOOTSTRAP_FAILURE_EXIT
    _report(status_fd, {"ready": True, "isolation": applied})
    return _run_user_code(config, payload)


if __name__ == "__main__":
    sys.exit(main(sys.argv))

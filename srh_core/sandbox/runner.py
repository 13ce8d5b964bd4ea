"""Run a Python program in a confined child process and report what happened.

See the package docstring (``srh_core.sandbox``) for the isolation model. This
module owns the parent side: it validates limits, prepares a private run
directory, starts ``bootstrap.py`` with a scrubbed environment in a new
session, feeds stdin, drains stdout/stderr with bounded readers, enforces
the wall-clock timeout and the interruption event by killing the whole
process group, reaps the child with ``wait4`` for its own rusage, and removes
the run directory. Runs share no mutable state, so one runner may be used
from many threads at once.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from srh_core.errors import ConfigurationError, SandboxError
from srh_core.sandbox import limits as lim
from srh_core.sandbox.launcher import detect_launcher
from srh_core.sandbox.policy import (
    DEVICE_FILES,
    SandboxPaths,
    child_environment,
    sandbox_paths,
    site_paths,
    system_library_paths,
)
from srh_core.sandbox.streams import BoundedReader, StdinWriter

if TYPE_CHECKING:
    from srh_core.workspace.workspace import Workspace

BOOTSTRAP_PATH = str(Path(__file__).with_name("bootstrap.py"))
MAX_STATUS_BYTES = 64 * 1024
STDERR_TAIL_CHARS = 2000
RunMode = Literal["plain", "json"]


@dataclass(frozen=True)
class SandboxResult:
    """Observable result of one sandboxed run.

    Attributes:
        exit_code: Exit status; negative ``-N`` when killed by signal N.
        stdout: Captured standard output (cut at the limit, with a note).
        stderr: Captured standard error (cut at the limit, with a note).
        duration_seconds: Wall-clock time from start to exit.
        cpu_seconds: User plus system CPU time of the child.
        peak_memory_bytes: Peak resident set size of the child (sampled while it runs;
            growth in its last 20 ms may be missed).
        timed_out: The wall-clock timeout killed the child.
        interrupted: The interruption event killed the child.
        killed_reason: Why the child was killed: ``"timeout"``, ``"interrupted"``,
            ``"output_limit"``, ``"cpu_limit"`` or ``"signal NAME"``; ``None`` if it exited.
        stdout_truncated: stdout exceeded ``output_limit_bytes``.
        stderr_truncated: stderr exceeded ``output_limit_bytes``.
        memory_error: The program raised ``MemoryError`` (hit the memory limit).
        result_json: Text passed to ``emit_result`` (JSON), or ``None``.
        isolation: Mechanisms in force, from ``"rlimits"``, ``"netns"``,
            ``"ipcns"``, ``"landlock"``, ``"seccomp"``, ``"audit_hook"``.
    """

    exit_code: int
    stdout: str
    stderr: str
    duration_seconds: float
    cpu_seconds: float
    peak_memory_bytes: int
    timed_out: bool = False
    interrupted: bool = False
    killed_reason: str | None = None
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    memory_error: bool = False
    result_json: str | None = None
    isolation: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """The program exited with status 0 and was not killed."""
        return self.exit_code == 0 and self.killed_reason is None


@dataclass(frozen=True)
class _Exit:
    status: int
    rusage: object
    duration: float
    reason: str | None
    peak_rss: int = 0


def _resident_peak(pid: int) -> int:
    """The child's resident high-water mark (VmHWM) in bytes; 0 once it has exited.

    Sampled while the child runs because ``wait4``'s ``ru_maxrss`` is no
    use here: Linux carries the parent's high-water mark across fork and
    exec, so a large parent (a long test session, a worker) would be
    reported as the child's peak.
    """
    try:
        with open(f"/proc/{pid}/status", "rb") as handle:
            for line in handle:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return 0
    return 0


class SandboxRunner:
    """Execute Python code in a confined child process.

    Args:
        use_landlock: Apply Landlock when the kernel supports it.
        use_seccomp: Apply the seccomp filter when the architecture is supported.
        use_namespaces: Start the child in new network/IPC namespaces when possible.
    """

    def __init__(
        self, *, use_landlock: bool = True, use_seccomp: bool = True, use_namespaces: bool = True
    ) -> None:
        self.use_landlock = use_landlock
        self.use_seccomp = use_seccomp
        self.use_namespaces = use_namespaces

    def run(
        self,
        code: str,
        stdin: str = "",
        workspace: Workspace | str | Path | None = None,
        timeout_seconds: float = lim.DEFAULT_TIMEOUT_SECONDS,
        memory_limit_mb: int = lim.DEFAULT_MEMORY_LIMIT_MB,
        output_limit_bytes: int = lim.DEFAULT_OUTPUT_LIMIT_BYTES,
        interruption_event: threading.Event | None = None,
        cpu_limit_seconds: float | None = None,
    ) -> SandboxResult:
        """Run ``code`` and return its result; failures of the code are results.

        The program runs as ``__main__`` with two extra globals: ``emit_result(value)``
        (sends a JSON value back, see :mod:`srh_core.sandbox.jsonio`) and ``payload``
        (``None`` here; the parsed stdin in JSON mode).

        Args:
            code: Python source, run as ``__main__``.
            stdin: Text the program reads from standard input.
            workspace: Working directory the program may write: a managed
                :class:`~srh_core.workspace.Workspace` (its mounts stay read-only and
                its lock rules apply), a plain directory, or ``None`` for a fresh
                temporary directory removed afterwards.
            timeout_seconds: Wall-clock limit in (0, 600].
            memory_limit_mb: Address-space limit in [128, 16384] MiB.
            output_limit_bytes: Per-stream capture limit in [256, 16 MiB].
            interruption_event: When set, the run is killed within ~20 ms.
            cpu_limit_seconds: CPU-time limit in [1, 600]; default: the timeout + 1 s.

        Returns:
            The exit status, captured output and resource usage.

        Raises:
            ConfigurationError: A limit is outside its allowed range.
            WorkspaceError: ``workspace`` is not an existing directory.
            SandboxError: The child process could not be started at all.
        """
        limits = lim.resolve_limits(timeout_seconds, memory_limit_mb, output_limit_bytes,
                                    cpu_limit_seconds)
        return self.execute(code, stdin, workspace, limits, interruption_event)

    def execute(
        self,
        code: str,
        stdin: str,
        workspace: Workspace | str | Path | None,
        limits: lim.SandboxLimits,
        interruption_event: threading.Event | None = None,
        mode: RunMode = "plain",
    ) -> SandboxResult:
        """Run with already validated limits; ``mode="json"`` parses stdin into ``payload``.

        See :meth:`run` for the arguments and errors, and
        :mod:`srh_core.sandbox.jsonio` for the JSON mode.
        """
        stdin_bytes = _checked_inputs(code, stdin)
        run_dir = Path(tempfile.mkdtemp(prefix="srh-sandbox-"))
        try:
            paths = sandbox_paths(run_dir, workspace)
            for directory in (run_dir / "tmp", paths.cwd):
                directory.mkdir(exist_ok=True)
            paths.program.write_text(code, encoding="utf-8")
            return self._supervise(paths, stdin_bytes, limits, interruption_event, mode)
        finally:
            shutil.rmtree(run_dir, ignore_errors=True)

    def _config(
        self, paths: SandboxPaths, limits: lim.SandboxLimits, status_fd: int, mode: RunMode
    ) -> dict:
        launcher = detect_launcher() if self.use_namespaces else None
        return {
            "status_fd": status_fd, "mode": mode, "program": str(paths.program),
            "result_path": str(paths.result), "max_result_bytes": lim.MAX_RESULT_BYTES,
            "site_paths": site_paths(), "process_limit": lim.PROCESS_LIMIT,
            "rlimits": {
                "RLIMIT_AS": limits.memory_limit_bytes, "RLIMIT_CPU": limits.cpu_limit_seconds,
                "RLIMIT_FSIZE": lim.FILE_SIZE_LIMIT_BYTES, "RLIMIT_NOFILE": lim.OPEN_FILES_LIMIT,
                "RLIMIT_CORE": 0,
            },
            "launcher_isolation": list(launcher.isolation if launcher else ()),
            "landlock": self.use_landlock, "seccomp": self.use_seccomp,
            "read_roots": list(paths.read_roots), "write_roots": list(paths.write_roots),
            "readonly_roots": list(paths.readonly_roots), "workspace": paths.workspace,
            "lock_patterns": list(paths.lock_patterns), "locked_paths": list(paths.locked_paths),
            "system_paths": system_library_paths(), "device_files": list(DEVICE_FILES),
            "max_fd": lim.OPEN_FILES_LIMIT,
        }

    def _start(self, paths: SandboxPaths, config: dict, status_fd: int) -> subprocess.Popen:
        prefix = detect_launcher().prefix if self.use_namespaces else ()
        command = [*prefix, sys.executable, "-I", "-S", "-B", BOOTSTRAP_PATH, json.dumps(config)]
        try:
            return subprocess.Popen(
                command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                cwd=paths.cwd, env=child_environment(paths.run_dir), start_new_session=True,
                close_fds=True, pass_fds=(status_fd,),
            )
        except (OSError, ValueError) as error:
            raise SandboxError(f"The sandbox could not start {sys.executable}: {error}") from error

    def _supervise(
        self,
        paths: SandboxPaths,
        stdin: bytes,
        limits: lim.SandboxLimits,
        interruption_event: threading.Event | None,
        mode: RunMode,
    ) -> SandboxResult:
        status_read, status_write = os.pipe()
        try:
            config = self._config(paths, limits, status_write, mode)
            process = self._start(paths, config, status_write)
        except BaseException:
            os.close(status_read)
            raise
        finally:
            os.close(status_write)
        try:
            writer = StdinWriter(process.stdin, stdin)
            readers = (BoundedReader(process.stdout, limits.output_limit_bytes),
                       BoundedReader(process.stderr, limits.output_limit_bytes))
            exit_info = _wait(process, limits, interruption_event, readers)
        except BaseException:
            # Whatever interrupted supervision (KeyboardInterrupt...), leave no child.
            _kill_group(process.pid)
            process.wait()
            os.close(status_read)
            raise
        writer.finish()
        report = _read_status(status_read)
        return _build_result(paths, limits, exit_info, readers, report)


def _checked_inputs(code: str, stdin: str) -> bytes:
    if not isinstance(code, str) or not isinstance(stdin, str):
        raise ConfigurationError(
            f"The sandbox needs code and stdin as str. Got {type(code).__name__} and "
            f"{type(stdin).__name__} instead.", setting="code")
    if len(code.encode("utf-8", "surrogatepass")) > lim.MAX_CODE_BYTES:
        raise ConfigurationError(
            f"The sandbox accepts programs up to {lim.MAX_CODE_BYTES} bytes.", setting="code")
    data = stdin.encode("utf-8", "surrogatepass")
    if len(data) > lim.MAX_STDIN_BYTES:
        raise ConfigurationError(
            f"The sandbox accepts stdin up to {lim.MAX_STDIN_BYTES} bytes. "
            f"Got {len(data)} bytes instead.", setting="stdin")
    return data


def _exit_waiter(pid: int) -> tuple[Callable[[float], object], int | None]:
    """Return a function waiting up to ``seconds`` for the child's exit, and its pidfd."""
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        return lambda seconds: time.sleep(seconds), None

    def wait(seconds: float) -> None:
        select.select([pidfd], [], [], seconds)

    return wait, pidfd


def _has_exited(pid: int) -> bool:
    # WNOWAIT leaves the child a zombie, so its pid (= process group id)
    # cannot be reused before the group is killed below.
    return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _wait(
    process: subprocess.Popen,
    limits: lim.SandboxLimits,
    event: threading.Event | None,
    readers: tuple[BoundedReader, BoundedReader],
) -> _Exit:
    start = time.monotonic()
    deadline = start + limits.timeout_seconds
    wait, pidfd = _exit_waiter(process.pid)
    reason, peak = None, 0
    try:
        while not _has_exited(process.pid):
            peak = max(peak, _resident_peak(process.pid))
            if time.monotonic() >= deadline:
                reason = "timeout"
            elif event is not None and event.is_set():
                reason = "interrupted"
            elif any(reader.flooded.is_set() for reader in readers):
                reason = "output_limit"
            if reason is not None:
                break
            wait(min(lim.POLL_INTERVAL_SECONDS, max(deadline - time.monotonic(), 0.001)))
        _kill_group(process.pid)  # also ends anything the program left behind
        _, status, rusage = os.wait4(process.pid, 0)
    finally:
        if pidfd is not None:
            os.close(pidfd)
    process.returncode = os.waitstatus_to_exitcode(status)
    return _Exit(status, rusage, time.monotonic() - start, reason, peak)


def _read_status(fd: int) -> dict:
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(MAX_STATUS_BYTES)
    try:
        report = json.loads(data.decode("utf-8")) if data else {}
    except (UnicodeDecodeError, json.JSONDecodeError):
        return {}
    return report if isinstance(report, dict) else {}


def _read_result(path: Path) -> str | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if not os.path.isfile(path) or os.fstat(fd).st_size > lim.MAX_RESULT_BYTES:
            return None
        return handle.read(lim.MAX_RESULT_BYTES).decode("utf-8", errors="replace")


def _killed_reason(reason: str | None, exit_code: int, cpu: float, cpu_limit: int) -> str | None:
    if reason is not None or exit_code >= 0:
        return reason
    number = -exit_code
    if number == signal.SIGXCPU or (number == signal.SIGKILL and cpu >= cpu_limit - 0.05):
        return "cpu_limit"
    try:
        return f"signal {signal.Signals(number).name}"
    except ValueError:
        return f"signal {number}"


def _build_result(
    paths: SandboxPaths,
    limits: lim.SandboxLimits,
    exit_info: _Exit,
    readers: tuple[BoundedReader, BoundedReader],
    report: dict,
) -> SandboxResult:
    (stdout, stdout_cut), (stderr, stderr_cut) = (reader.finish() for reader in readers)
    if not report.get("ready") and exit_info.reason not in ("timeout", "interrupted"):
        detail = report.get("error") or stderr[-STDERR_TAIL_CHARS:] or "no report from the child"
        raise SandboxError(f"The sandbox could not start the program: {detail}")
    exit_code = os.waitstatus_to_exitcode(exit_info.status)
    rusage = exit_info.rusage
    cpu = float(rusage.ru_utime + rusage.ru_stime)
    return SandboxResult(
        exit_code=exit_code, stdout=stdout, stderr=stderr,
        duration_seconds=exit_info.duration, cpu_seconds=cpu,
        peak_memory_bytes=exit_info.peak_rss or int(rusage.ru_maxrss) * 1024,
        timed_out=exit_info.reason == "timeout", interrupted=exit_info.reason == "interrupted",
        killed_reason=_killed_reason(exit_info.reason, exit_code, cpu, limits.cpu_limit_seconds),
        stdout_truncated=stdout_cut, stderr_truncated=stderr_cut,
        memory_error=any(line.startswith("MemoryError") for line in stderr.splitlines()),
        result_json=_read_result(paths.result), isolation=tuple(report.get("isolation", ())),
    )

"""Run a Python program in a confined child process and report what happened.

See the package docstring (``srh_core.sandbox``) for the isolation model. This
module owns the parent side: it validates limits, prepares a private run
directory and the run's task cap (a pids cgroup, or a dedicated uid: see
:mod:`srh_core.sandbox.tasks`), starts ``bootstrap.py`` with a scrubbed
environment in a new session, feeds stdin, drains stdout/stderr with bounded
readers, and leaves the waiting (timeout, interruption, output flood, disk
budget) to :mod:`srh_core.sandbox.supervisor`. Afterwards it kills whatever
the program left behind, reads the child's reports and removes the run
directory. Runs share no mutable state, so one runner may be used from many
threads at once.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from srh_core.errors import ConfigurationError, SandboxError
from srh_core.json_limits import depth_problem
from srh_core.sandbox import limits as lim
from srh_core.sandbox import tasks
from srh_core.sandbox.disk import DiskBudget
from srh_core.sandbox.file_modes import clear_privilege_bits
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
from srh_core.sandbox.supervisor import (
    ChildExit,
    kill_group,
    killed_reason,
    read_report,
    wait_for_child,
)

if TYPE_CHECKING:
    from srh_core.workspace.workspace import Workspace

BOOTSTRAP_PATH = str(Path(__file__).with_name("bootstrap.py"))
STDERR_TAIL_CHARS = 2000
RunMode = Literal["plain", "json"]
#: A traceback's last line for MemoryError and its subclasses (numpy's
#: ``_ArrayMemoryError``), the fallback when the child's outcome report is missing.
MEMORY_ERROR_LINE = re.compile(r"^(?:[\w.]+\.)?_?\w*MemoryError\b", re.M)


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
            ``"output_limit"``, ``"cpu_limit"``, ``"disk_limit"`` or ``"signal NAME"``;
            ``None`` if it exited.
        stdout_truncated: stdout exceeded ``output_limit_bytes``.
        stderr_truncated: stderr exceeded ``output_limit_bytes``.
        memory_error: The program failed with ``MemoryError`` or a subclass (numpy's
            allocation failure included): it hit the memory limit.
        result_json: Text passed to ``emit_result`` (JSON), or ``None``.
        result_error: Why a result file was refused (too large, nested too deep), or None.
        isolation: Mechanisms in force, from ``"pids_cgroup"``, ``"dedicated_uid"``,
            ``"rlimits"``, ``"mntns"``, ``"netns"``, ``"ipcns"``, ``"tmpfs"``,
            ``"landlock"``, ``"seccomp"``, ``"audit_hook"``, ``"disk_budget"``.
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
    result_error: str | None = None

    @property
    def ok(self) -> bool:
        """The program exited with status 0 and was not killed."""
        return self.exit_code == 0 and self.killed_reason is None


class SandboxRunner:
    """Execute Python code in a confined child process.

    Args:
        use_landlock: Apply Landlock when the kernel supports it.
        use_seccomp: Apply the seccomp filter when the architecture is supported.
        use_namespaces: Start the child in new mount/network/IPC namespaces when possible.
        use_cgroup: Cap the child's tasks with a per-run pids cgroup when one can be made.
        use_dedicated_uid: As root without that cgroup, cap them with ``RLIMIT_NPROC``
            under a uid of the run's own.
        disk_limit_bytes: New bytes a run may write (run directory and workspace), in
            [MIN_DISK_LIMIT_BYTES, MAX_DISK_LIMIT_BYTES].

    Raises:
        ConfigurationError: ``disk_limit_bytes`` is outside its range.
    """

    def __init__(
        self, *, use_landlock: bool = True, use_seccomp: bool = True, use_namespaces: bool = True,
        use_cgroup: bool = True, use_dedicated_uid: bool = True,
        disk_limit_bytes: int = lim.DEFAULT_DISK_LIMIT_BYTES,
    ) -> None:
        self.use_landlock = use_landlock
        self.use_seccomp = use_seccomp
        self.use_namespaces = use_namespaces
        self.use_cgroup = use_cgroup
        self.use_dedicated_uid = use_dedicated_uid
        self.disk_limit_bytes = lim.check_disk_limit(disk_limit_bytes)

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
        cgroup = tasks.create_cgroup(lim.PROCESS_LIMIT) if self.use_cgroup else None
        try:
            paths = sandbox_paths(run_dir, workspace)
            for directory in (run_dir / "tmp", paths.cwd):
                directory.mkdir(exist_ok=True)
            paths.program.write_text(code, encoding="utf-8")
            return self._supervise(paths, stdin_bytes, limits, interruption_event, mode, cgroup)
        finally:
            if cgroup is not None:
                tasks.release_cgroup(cgroup)
            shutil.rmtree(run_dir, ignore_errors=True)

    def _task_cap(self, cgroup: str | None) -> dict:
        if cgroup is not None:
            return {"cgroup": cgroup, "dedicated_uid_base": None}
        dedicated = self.use_dedicated_uid and os.geteuid() == 0
        return {"cgroup": None, "dedicated_uid_base": tasks.SANDBOX_UID_BASE if dedicated else None}

    def _scratch(self, paths: SandboxPaths, isolation: tuple[str, ...]) -> dict | None:
        if "mntns" not in isolation:
            return None
        return {"path": str(paths.run_dir), "size": self.disk_limit_bytes,
                "files": lim.MAX_SCRATCH_FILES, "cwd": str(paths.cwd)}

    def _config(
        self, paths: SandboxPaths, limits: lim.SandboxLimits, fds: tuple[int, int],
        mode: RunMode, cgroup: str | None,
    ) -> dict:
        launcher = detect_launcher() if self.use_namespaces else None
        isolation = launcher.isolation if launcher else ()
        return {
            "status_fd": fds[0], "outcome_fd": fds[1], "mode": mode, "parent_pid": os.getpid(),
            "program": str(paths.program), "result_path": str(paths.result),
            "max_result_bytes": lim.MAX_RESULT_BYTES, "max_result_depth": lim.MAX_RESULT_DEPTH,
            **self._task_cap(cgroup), "scratch": self._scratch(paths, isolation),
            "site_paths": site_paths(), "process_limit": lim.PROCESS_LIMIT,
            "rlimits": {
                "RLIMIT_AS": limits.memory_limit_bytes, "RLIMIT_CPU": limits.cpu_limit_seconds,
                "RLIMIT_FSIZE": lim.FILE_SIZE_LIMIT_BYTES, "RLIMIT_NOFILE": lim.OPEN_FILES_LIMIT,
                "RLIMIT_CORE": 0,
            },
            "launcher_isolation": list(isolation),
            "landlock": self.use_landlock, "seccomp": self.use_seccomp,
            "read_roots": list(paths.read_roots), "write_roots": list(paths.write_roots),
            "readonly_roots": list(paths.readonly_roots), "workspace": paths.workspace,
            "lock_patterns": list(paths.lock_patterns), "locked_paths": list(paths.locked_paths),
            "system_paths": system_library_paths(), "device_files": list(DEVICE_FILES),
            "max_fd": lim.OPEN_FILES_LIMIT,
        }

    def _start(self, paths: SandboxPaths, config: dict, fds: tuple[int, int]) -> subprocess.Popen:
        prefix = detect_launcher().prefix if self.use_namespaces else ()
        command = [*prefix, sys.executable, "-I", "-S", "-B", BOOTSTRAP_PATH, json.dumps(config)]
        try:
            return subprocess.Popen(
                command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                cwd=paths.cwd, env=child_environment(paths.run_dir), start_new_session=True,
                close_fds=True, pass_fds=fds,
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
        cgroup: str | None,
    ) -> SandboxResult:
        (status_read, status_write), (outcome_read, outcome_write) = os.pipe(), os.pipe()
        try:
            config = self._config(paths, limits, (status_write, outcome_write), mode, cgroup)
            process = self._start(paths, config, (status_write, outcome_write))
        except BaseException:
            os.close(status_read)
            os.close(outcome_read)
            raise
        finally:
            os.close(status_write)
            os.close(outcome_write)
        try:
            writer = StdinWriter(process.stdin, stdin)
            readers = (BoundedReader(process.stdout, limits.output_limit_bytes),
                       BoundedReader(process.stderr, limits.output_limit_bytes))
            disk = DiskBudget(paths.write_roots, self.disk_limit_bytes)
            exit_info = wait_for_child(process, limits, interruption_event, readers, disk)
        except BaseException:
            # Whatever interrupted supervision (KeyboardInterrupt...), leave no child.
            kill_group(process.pid)
            process.wait()
            _end_leftovers(config, process.pid, paths)
            os.close(status_read)
            os.close(outcome_read)
            raise
        _end_leftovers(config, process.pid, paths)
        writer.finish()
        report = read_report(status_read)
        outcome = read_report(outcome_read, waiting=False)
        return _build_result(paths, limits, exit_info, readers, {**report, "outcome": outcome})


def _end_leftovers(config: dict, pid: int, paths: SandboxPaths) -> None:
    """Kill what the program left (its pipes stay open while anything holds them).

    The process group is killed already; this reaches tasks that left it.
    Under a dedicated uid, files the run left in the workspace are given back;
    then no file of the workspace keeps a setuid or setgid bit.
    """
    if config.get("cgroup"):
        tasks.kill_cgroup(config["cgroup"])
    base = config.get("dedicated_uid_base")
    if base is not None:
        tasks.kill_uid(base + pid)
        if paths.workspace is not None:
            tasks.reclaim_files(paths.workspace, base + pid)
    if paths.workspace is not None:
        clear_privilege_bits(paths.workspace)


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


def _read_result(path: Path) -> tuple[str | None, str | None]:
    """The emitted JSON text (None when nothing was emitted) and why it was refused."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None, None
    with os.fdopen(fd, "rb") as handle:
        if not os.path.isfile(path):
            return None, None
        size = os.fstat(fd).st_size
        if size > lim.MAX_RESULT_BYTES:
            return None, (f"the result file holds {size} bytes; at most "
                          f"{lim.MAX_RESULT_BYTES} are accepted.")
        text = handle.read(lim.MAX_RESULT_BYTES).decode("utf-8", errors="replace")
    if not text:
        return None, None
    problem = depth_problem(text, lim.MAX_RESULT_DEPTH, "the result")
    return (None, problem) if problem else (text, None)


def _memory_error(outcome: dict, stderr: str) -> bool:
    if isinstance(outcome.get("memory_error"), bool):
        return outcome["memory_error"]
    return MEMORY_ERROR_LINE.search(stderr) is not None


def _build_result(
    paths: SandboxPaths,
    limits: lim.SandboxLimits,
    exit_info: ChildExit,
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
    result_json, result_error = _read_result(paths.result)
    return SandboxResult(
        exit_code=exit_code, stdout=stdout, stderr=stderr,
        duration_seconds=exit_info.duration, cpu_seconds=cpu,
        peak_memory_bytes=exit_info.peak_rss or int(rusage.ru_maxrss) * 1024,
        timed_out=exit_info.reason == "timeout", interrupted=exit_info.reason == "interrupted",
        killed_reason=killed_reason(exit_info.reason, exit_code, cpu, limits.cpu_limit_seconds),
        stdout_truncated=stdout_cut, stderr_truncated=stderr_cut,
        memory_error=_memory_error(report["outcome"], stderr),
        result_json=result_json, result_error=result_error,
        isolation=(*report.get("isolation", ()), "disk_budget"),
    )

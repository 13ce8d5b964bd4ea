"""Named limits of the sandbox and the validation of per-run settings.

Every per-run setting has an allowed range named here; :func:`resolve_limits`
checks a caller's values once and returns a frozen :class:`SandboxLimits`, so
the runner never sees an unchecked number.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from srh_core.errors import ConfigurationError

MAX_TIMEOUT_SECONDS = 600.0
DEFAULT_TIMEOUT_SECONDS = 30.0

MIN_MEMORY_LIMIT_MB = 128
MAX_MEMORY_LIMIT_MB = 16384
DEFAULT_MEMORY_LIMIT_MB = 1024

MIN_OUTPUT_LIMIT_BYTES = 256
MAX_OUTPUT_LIMIT_BYTES = 16 * 1024 * 1024
DEFAULT_OUTPUT_LIMIT_BYTES = 64 * 1024

MIN_CPU_LIMIT_SECONDS = 1
MAX_CPU_LIMIT_SECONDS = int(MAX_TIMEOUT_SECONDS)

#: Largest single file the child may write (RLIMIT_FSIZE).
FILE_SIZE_LIMIT_BYTES = 256 * 1024 * 1024
#: Open file descriptors in the child (RLIMIT_NOFILE).
OPEN_FILES_LIMIT = 256
#: Tasks (processes and threads, the main thread included) a child may have: the
#: pids cgroup's ``pids.max``, or RLIMIT_NPROC under a dedicated uid; a non-root
#: child without a cgroup gets this many above what its uid already runs.
PROCESS_LIMIT = 64
#: Largest stdin payload accepted by the runner.
MAX_STDIN_BYTES = 256 * 1024 * 1024
#: Largest program source accepted by the runner.
MAX_CODE_BYTES = 4 * 1024 * 1024
#: Largest JSON result accepted from ``emit_result``.
MAX_RESULT_BYTES = 64 * 1024 * 1024
#: Deepest nesting of arrays and objects in a result (numpy arrays count their ndim).
MAX_RESULT_DEPTH = 64
#: New bytes a run may write (tmpfs size of the run directory; budget of the workspace).
DEFAULT_DISK_LIMIT_BYTES = 512 * 1024 * 1024
MIN_DISK_LIMIT_BYTES = 1024 * 1024
MAX_DISK_LIMIT_BYTES = 16 * 1024 * 1024 * 1024
#: Files and directories the run-directory tmpfs may hold (its inode limit).
MAX_SCRATCH_FILES = 10_000
#: Output beyond the capture limit is drained and discarded up to this many
#: bytes per stream; past it the child is killed (``killed_reason="output_limit"``).
MAX_DISCARDED_OUTPUT_BYTES = 32 * 1024 * 1024
#: How often the supervisor checks the deadline and the interruption event.
POLL_INTERVAL_SECONDS = 0.02


@dataclass(frozen=True)
class SandboxLimits:
    """Validated limits of one sandboxed run.

    Attributes:
        timeout_seconds: Wall-clock limit; the whole process group is killed past it.
        memory_limit_mb: Address-space limit (RLIMIT_AS) in MiB.
        output_limit_bytes: Captured bytes per stream (stdout, stderr).
        cpu_limit_seconds: CPU-time limit (RLIMIT_CPU), whole seconds; SIGKILL one
            second later if the program ignores SIGXCPU.
    """

    timeout_seconds: float
    memory_limit_mb: int
    output_limit_bytes: int
    cpu_limit_seconds: int

    @property
    def memory_limit_bytes(self) -> int:
        """The address-space limit in bytes."""
        return self.memory_limit_mb * 1024 * 1024


def resolve_limits(
    timeout_seconds: float,
    memory_limit_mb: int,
    output_limit_bytes: int,
    cpu_limit_seconds: float | None = None,
) -> SandboxLimits:
    """Validate per-run settings and return them frozen.

    Args:
        timeout_seconds: Wall-clock limit in seconds, in (0, MAX_TIMEOUT_SECONDS].
        memory_limit_mb: Memory limit in MiB, in [MIN_MEMORY_LIMIT_MB, MAX_MEMORY_LIMIT_MB].
        output_limit_bytes: Per-stream capture limit, in
            [MIN_OUTPUT_LIMIT_BYTES, MAX_OUTPUT_LIMIT_BYTES].
        cpu_limit_seconds: CPU-time limit; ``None`` means the timeout rounded up, plus one.

    Returns:
        The validated limits.

    Raises:
        ConfigurationError: A value has the wrong type or lies outside its range.
    """
    timeout = _check_timeout(timeout_seconds)
    memory = _check_int(
        "memory_limit_mb", memory_limit_mb, MIN_MEMORY_LIMIT_MB, MAX_MEMORY_LIMIT_MB
    )
    output = _check_int(
        "output_limit_bytes", output_limit_bytes, MIN_OUTPUT_LIMIT_BYTES, MAX_OUTPUT_LIMIT_BYTES
    )
    cpu = _check_cpu(cpu_limit_seconds, timeout)
    return SandboxLimits(timeout, memory, output, cpu)


def _check_timeout(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigurationError(
            f"The 'timeout_seconds' setting of the sandbox must be a number in "
            f"(0, {MAX_TIMEOUT_SECONDS:g}]. Got {value!r} instead.",
            setting="timeout_seconds",
        )
    if not 0 < value <= MAX_TIMEOUT_SECONDS:
        raise ConfigurationError(
            f"The 'timeout_seconds' setting of the sandbox must be in "
            f"(0, {MAX_TIMEOUT_SECONDS:g}]. Got {value!r} instead.",
            setting="timeout_seconds",
        )
    return float(value)


def _check_int(name: str, value: object, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ConfigurationError(
            f"The {name!r} setting of the sandbox must be an int in [{low}, {high}]. "
            f"Got {value!r} instead.",
            setting=name,
        )
    return value


def _check_cpu(value: float | None, timeout: float) -> int:
    if value is None:
        # CPU time of a single-threaded program cannot exceed its wall time, so
        # the default (one second above the timeout, so that the wall clock wins
        # the race) only matters for multi-threaded code.
        return min(math.ceil(timeout) + 1, MAX_CPU_LIMIT_SECONDS + 1)
    valid_type = isinstance(value, int | float) and not isinstance(value, bool)
    if not valid_type or not math.isfinite(value):
        value_ok = False
    else:
        value_ok = MIN_CPU_LIMIT_SECONDS <= value <= MAX_CPU_LIMIT_SECONDS
    if not value_ok:
        raise ConfigurationError(
            f"The 'cpu_limit_seconds' setting of the sandbox must be a number in "
            f"[{MIN_CPU_LIMIT_SECONDS}, {MAX_CPU_LIMIT_SECONDS}] or None. Got {value!r} instead.",
            setting="cpu_limit_seconds",
        )
    return math.ceil(value)


def check_disk_limit(value: object) -> int:
    """Validate a runner's disk budget in bytes.

    Raises:
        ConfigurationError: Not an int in [MIN_DISK_LIMIT_BYTES, MAX_DISK_LIMIT_BYTES].
    """
    return _check_int("disk_limit_bytes", value, MIN_DISK_LIMIT_BYTES, MAX_DISK_LIMIT_BYTES)

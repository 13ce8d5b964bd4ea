"""Run a program that takes JSON on stdin and returns JSON: the fit/predict pattern.

Protocol (one way in, one way out, so output noise never corrupts a result):

- **in**: the parent serialises ``payload`` (numpy arrays and scalars become
  lists and numbers; NaN/inf are allowed, as Python's ``json`` writes them)
  and sends it on stdin. Before user code runs, the bootstrap parses it into
  the global ``payload``; ``sys.stdin.read()`` still returns the raw text, so
  ``data = json.loads(sys.stdin.read())`` works too.
- **out**: the program calls ``emit_result(value)`` (a global, no import
  needed) with any JSON-serialisable value; numpy values are converted. The
  value travels through a file in the run directory, not through stdout, so
  ``print`` output and truncation cannot corrupt it. The last call wins; a
  value above ``MAX_RESULT_BYTES``, or nested deeper than
  ``MAX_RESULT_DEPTH`` lists and dicts, raises ``ValueError`` in the program
  (and a result file past either bound is refused by the parent:
  ``result.result_error`` says why).
- the helper returns ``(result, value)``: ``value`` is the parsed emitted
  value, or ``None`` when ``emit_result`` was never called (or its text was
  not valid JSON). A value may come with a failed run (the program crashed
  after emitting): check ``result.ok``.

Example program::

    import numpy as np
    X = np.asarray(payload["X"]); y = np.asarray(payload["y"])
    coef, *_ = np.linalg.lstsq(X, y, rcond=None)
    emit_result({"coef": coef})
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from srh_core.errors import ConfigurationError
from srh_core.sandbox import limits as lim
from srh_core.sandbox.runner import SandboxResult, SandboxRunner

if TYPE_CHECKING:
    from srh_core.workspace.workspace import Workspace


@lru_cache(maxsize=1)
def get_sandbox_runner() -> SandboxRunner:
    """Return the process-wide sandbox runner (it holds no per-run state)."""
    return SandboxRunner()


def _jsonable(value: object) -> object:
    if hasattr(value, "tolist"):
        return value.tolist()  # numpy arrays and scalars, without importing numpy
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    raise TypeError(f"cannot serialise {type(value).__name__} as JSON")


def encode_payload(payload: Mapping[str, Any]) -> str:
    """Serialise a payload for stdin.

    Raises:
        ConfigurationError: ``payload`` is not a mapping or holds a value JSON cannot encode.
    """
    if not isinstance(payload, Mapping):
        raise ConfigurationError(
            f"The sandbox payload must be a mapping. Got {type(payload).__name__} instead.",
            setting="payload",
        )
    try:
        return json.dumps(dict(payload), default=_jsonable)
    except (TypeError, ValueError) as error:
        raise ConfigurationError(f"The sandbox payload is not JSON-serialisable: {error}",
                                 setting="payload") from error


def decode_result(result: SandboxResult) -> Any | None:
    """Parse the value a program passed to ``emit_result``, or ``None``."""
    if result.result_json is None:
        return None
    try:
        return json.loads(result.result_json)
    except (json.JSONDecodeError, RecursionError):
        return None


def run_python_with_json(
    code: str,
    payload: Mapping[str, Any],
    *,
    runner: SandboxRunner | None = None,
    workspace: Workspace | str | Path | None = None,
    timeout_seconds: float = lim.DEFAULT_TIMEOUT_SECONDS,
    memory_limit_mb: int = lim.DEFAULT_MEMORY_LIMIT_MB,
    output_limit_bytes: int = lim.DEFAULT_OUTPUT_LIMIT_BYTES,
    cpu_limit_seconds: float | None = None,
    interruption_event: threading.Event | None = None,
) -> tuple[SandboxResult, Any | None]:
    """Run ``code`` with ``payload`` as JSON on stdin; return the emitted value.

    Args:
        code: Program using the ``payload`` global and ``emit_result(value)``.
        payload: JSON-serialisable mapping (numpy values allowed).
        runner: Runner to use; the process-wide one by default.
        workspace: As for :meth:`SandboxRunner.run`.
        timeout_seconds: As for :meth:`SandboxRunner.run`.
        memory_limit_mb: As for :meth:`SandboxRunner.run`.
        output_limit_bytes: As for :meth:`SandboxRunner.run`.
        cpu_limit_seconds: As for :meth:`SandboxRunner.run`.
        interruption_event: As for :meth:`SandboxRunner.run`.

    Returns:
        The run's result and the parsed emitted value (``None`` if none).

    Raises:
        ConfigurationError: A limit is out of range or the payload cannot be encoded.
        SandboxError: The child could not be started.
    """
    stdin = encode_payload(payload)
    limits = lim.resolve_limits(timeout_seconds, memory_limit_mb, output_limit_bytes,
                                cpu_limit_seconds)
    active = runner if runner is not None else get_sandbox_runner()
    result = active.execute(code, stdin, workspace, limits, interruption_event, "json")
    return result, decode_result(result)

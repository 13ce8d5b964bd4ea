"""The exception tree of srh_core.

One base class, :class:`SRHarnessError`; every error the package raises on
purpose derives from it, so callers can catch the family in one place.
Errors carry the offending values as fields, and messages say what was
expected and what came instead.

Three families are kept apart, as the agent loop needs them apart:

- the model's fault (a malformed call, an unknown tool, bad arguments) never
  raises out of a tool: it becomes an ``ok=False`` result the model can read;
- the programmer's or user's fault (bad settings, bad data, a broken
  manifest) raises one of the errors below;
- budget and control flow (``ToolRunAbort``, time limits) end a run.
"""

from __future__ import annotations

from collections.abc import Iterable
from difflib import get_close_matches


class SRHarnessError(Exception):
    """Base class of every error srh_core raises on purpose."""


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """Return a " Did you mean 'x'?" suffix, or "" when nothing is close."""
    matches = get_close_matches(name, list(choices), n=1, cutoff=0.6)
    return f" Did you mean {matches[0]!r}?" if matches else ""


class ConfigurationError(SRHarnessError, ValueError):
    """A setting has the wrong type or lies outside its allowed range."""

    def __init__(self, message: str, *, setting: str | None = None) -> None:
        super().__init__(message)
        self.setting = setting


class DataError(SRHarnessError, ValueError):
    """Data arrays are missing, misaligned, non-numeric or non-finite."""

    def __init__(self, message: str, *, variable: str | None = None) -> None:
        super().__init__(message)
        self.variable = variable


class ContextManifestError(DataError):
    """A ``context.data`` manifest directory cannot be validated or loaded."""

    def __init__(self, message: str, *, errors: list[str] | None = None) -> None:
        super().__init__(message)
        self.errors = list(errors or [message])


class InputTooLargeError(SRHarnessError, ValueError):
    """A file the user gave (data, settings, a suite) is past the limit it is read with.

    Attributes:
        path: The file.
        limit: The limit, in bytes (of the file, of one line, or of free memory).
        size: The file's size when it was known before reading (a regular file);
            None for a stream (a pipe, FIFO or device) refused once it passed the limit.
        override: The environment variable that raises the limit, or None when it is fixed.
    """

    def __init__(self, message: str, *, path: str, limit: int, size: int | None = None,
                 override: str | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.limit = limit
        self.size = size
        self.override = override


class ToolError(SRHarnessError):
    """A tool was declared or registered incorrectly (a programmer error)."""


class ToolArgumentError(SRHarnessError, ValueError):
    """A tool received arguments outside its contract (reported to the model)."""

    def __init__(self, message: str, *, parameter: str | None = None) -> None:
        super().__init__(message)
        self.parameter = parameter


class ToolRunAbort(SRHarnessError):
    """Control flow: stop the running tool batch and propagate to the loop.

    Unlike ordinary exceptions this is never turned into an ``ok=False``
    result by the tool boundary.
    """


class BackendUnavailableError(SRHarnessError):
    """An optional search backend (nd2, sr4mdl) is not installed here; the message says how
    to install it.

    Attributes:
        backend: The backend's tool name.
        repository: Where it comes from.
    """

    def __init__(self, message: str, *, backend: str, repository: str) -> None:
        super().__init__(message)
        self.backend = backend
        self.repository = repository


class WorkspaceError(SRHarnessError, ValueError):
    """A workspace path escapes its root, or breaks a mount or lock rule."""

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


class SandboxError(SRHarnessError):
    """The sandbox could not start the child process at all."""


class ModelAPIError(SRHarnessError):
    """A model endpoint failed after all retries, or was misconfigured."""

    def __init__(
        self,
        message: str,
        *,
        provider: str | None = None,
        model: str | None = None,
        status: int | None = None,
    ) -> None:
        super().__init__(message)
        self.provider = provider
        self.model = model
        self.status = status


class ModelResponseTruncatedError(ModelAPIError):
    """A response was cut by the length limit; keeps what arrived."""

    def __init__(
        self,
        message: str,
        *,
        partial_message: str = "",
        tool_calls: list | None = None,
        usage: dict | None = None,
        sample: int | None = None,
        provider: str | None = None,
        model: str | None = None,
    ) -> None:
        super().__init__(message, provider=provider, model=model)
        self.partial_message = partial_message
        self.tool_calls = list(tool_calls or [])
        self.usage = dict(usage or {})
        self.sample = sample


class SearchStateError(SRHarnessError):
    """A run snapshot or run directory is inconsistent or unreadable."""


class EvaluatorLoadError(ConfigurationError):
    """A custom evaluator file cannot be imported, or does not define exactly one evaluator.

    Attributes:
        path: The evaluator file.
        found: Names of the evaluator classes the file defines (when it imported).
    """

    def __init__(self, message: str, *, path: str | None = None,
                 found: list[str] | None = None) -> None:
        super().__init__(message, setting="evaluator")
        self.path = path
        self.found = list(found or [])


class ModelRequestError(ModelAPIError):
    """A model request failed for good: a non-retryable answer, or every retry failed.

    ``attempts`` counts the requests sent (1 + retries); ``retryable`` says
    whether the last failure was of a transient kind (timeout, connection,
    408/409/429/5xx) that simply ran out of retries; ``last_error`` is the
    client's exception of the last attempt (not chained, see ``srh_core.api.retry``).
    """

    def __init__(
        self,
        message: str,
        *,
        provider: str | None = None,
        model: str | None = None,
        status: int | None = None,
        attempts: int = 1,
        retryable: bool = False,
    ) -> None:
        super().__init__(message, provider=provider, model=model, status=status)
        self.attempts = attempts
        self.retryable = retryable
        self.last_error: BaseException | None = None


class ModelRequestCancelledError(ModelAPIError):
    """A model request was stopped by ``cancel()`` before it finished."""


class PhaseStateWarning(RuntimeWarning):
    """An agent hook bound an attribute of ``self`` during a step phase.

    The phases of a step (open, each sample, close) may run in different
    processes: on a cluster the agent is rebuilt for each task, so what a hook
    keeps on ``self`` is not there in the next phase. Pass it in the branch,
    the plan or the results instead. Attributes set, rebound or deleted are
    caught; a container mutated in place is not (and is as unsupported).

    Attributes:
        agent_class: The agent's class name.
        phase: "open_step", "run_sample" or "close_step".
        attributes: The attributes that changed.
    """

    def __init__(self, agent_class: str, phase: str, attributes: Iterable[str]) -> None:
        self.agent_class, self.phase = agent_class, phase
        self.attributes = tuple(attributes)
        super().__init__(
            f"{agent_class} changed {', '.join(self.attributes)} on self in {phase}; on a "
            "cluster the agent is rebuilt for each task, so a later phase of the step does not "
            "see it. Pass it in the branch, the plan or the results instead.")

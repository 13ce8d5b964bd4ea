"""Retrying transient endpoint failures: bounded exponential backoff with full jitter.

Retried: timeouts, connection errors, HTTP 408, 409, 429 and 5xx. Not
retried: every other 4xx (the request itself is wrong), errors inside a
stream that already produced output (the deltas were handed out), and
anything that is not an endpoint failure. A ``Retry-After`` (or
``retry-after-ms``) header replaces the computed delay, capped at
``max_retry_after``. The official client runs with ``max_retries=0``; this
module owns retrying so the policy, the sleeps and the final message are ours.

The final :class:`~srh_core.errors.ModelRequestError` says everything in its
one-line message (endpoint, attempts, the last failure and its cause) and is
raised without the client's exception chain (httpcore -> httpx -> openai),
which only repeated it in three more tracebacks; the client's exception stays
available as ``last_error``.
"""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from srh_core.api.cancel import CancelToken
from srh_core.errors import ConfigurationError, ModelRequestError

RETRYABLE_STATUSES = frozenset({408, 409, 429})
_T = TypeVar("_T")
Sleep = Callable[[float], None]


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how long to wait before retrying a failed request.

    Attributes:
        max_retries: Retries after the first attempt (``max_retries + 1`` requests at most).
        base_delay: Backoff scale in seconds: retry i waits ``U(0, base * 2**i)``.
        max_delay: Upper bound of a computed backoff.
        max_retry_after: Upper bound of a server-requested ``Retry-After`` wait.
    """

    max_retries: int = 4
    base_delay: float = 1.0
    max_delay: float = 30.0
    max_retry_after: float = 60.0

    def __post_init__(self) -> None:
        if isinstance(self.max_retries, bool) or not isinstance(self.max_retries, int) or (
                self.max_retries < 0):
            raise ConfigurationError(
                f"max_retries must be an int >= 0. Got {self.max_retries!r} instead.",
                setting="max_retries")
        for name in ("base_delay", "max_delay", "max_retry_after"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise ConfigurationError(
                    f"{name} must be a number >= 0 (seconds). Got {value!r} instead.",
                    setting=name)

    def delay(self, failure: Failure, retry_number: int, rng: random.Random) -> float:
        """Seconds to wait before retry ``retry_number`` (0-based)."""
        if failure.retry_after is not None:
            return min(max(failure.retry_after, 0.0), self.max_retry_after)
        ceiling = min(self.max_delay, self.base_delay * 2.0 ** retry_number)
        return rng.uniform(0.0, ceiling)


@dataclass(frozen=True, slots=True)
class Failure:
    """An endpoint failure, classified.

    Attributes:
        description: What went wrong, for the final error message.
        retryable: Whether the failure is of a transient kind.
        status: HTTP status, when there was a response.
        retry_after: Seconds the server asked to wait, when it said.
    """

    description: str
    retryable: bool
    status: int | None = None
    retry_after: float | None = None


def classify_failure(error: BaseException) -> Failure | None:
    """Classify an ``openai`` client error; None for anything else."""
    import openai  # the SDK is imported when a model is asked, not by offline runs
    if isinstance(error, openai.APITimeoutError):
        return Failure("the request timed out", retryable=True)
    if isinstance(error, openai.APIConnectionError):
        cause = error.__cause__ or error.__context__
        detail = f" ({type(cause).__name__}: {cause})" if cause else ""
        return Failure(f"connection error{detail}", retryable=True)
    if isinstance(error, openai.APIStatusError):
        status = error.status_code
        retryable = status in RETRYABLE_STATUSES or status >= 500
        return Failure(f"HTTP {status} ({error.message})", retryable, status,
                       retry_after_seconds(error.response.headers))
    if isinstance(error, openai.APIError):
        return Failure(f"API error ({error.message})", retryable=False)
    return None


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """Read ``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date)."""
    milliseconds = _to_float(headers.get("retry-after-ms"))
    if milliseconds is not None:
        return milliseconds / 1000.0
    value = headers.get("retry-after")
    seconds = _to_float(value)
    if seconds is not None or not value:
        return seconds
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(moment.timestamp() - time.time(), 0.0)


def _to_float(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


@dataclass(frozen=True, slots=True)
class RetryContext:
    """Who is retrying (for messages) and how to wait.

    Attributes:
        provider: Provider name.
        model: Model name.
        endpoint: Base URL, named in the final message.
        sleep: Injected sleep; None sleeps on the cancel token (interruptible).
        rng: Source of jitter.
    """

    provider: str
    model: str
    endpoint: str
    sleep: Sleep | None
    rng: random.Random


def run_with_retries(
    send: Callable[[], _T],
    policy: RetryPolicy,
    context: RetryContext,
    token: CancelToken,
    may_retry: Callable[[], bool] = lambda: True,
) -> _T:
    """Call ``send`` until it succeeds, retrying transient failures per ``policy``.

    Args:
        send: One attempt; raises ``openai`` errors on failure.
        policy: Retry limits and delays.
        context: Names for messages, sleep and jitter.
        token: Checked before every attempt and while waiting.
        may_retry: False once a retry would be unsafe (a stream already produced output).

    Returns:
        What ``send`` returned.

    Raises:
        ModelRequestError: Non-retryable failure, or the last retry failed.
        ModelRequestCancelledError: The token was cancelled.
    """
    import openai

    attempt = 0
    while True:
        attempt += 1
        token.raise_if_cancelled(context.provider, context.model)
        try:
            return send()
        except openai.OpenAIError as error:
            failure = classify_failure(error)
            if failure is None:
                raise
            streamed = not may_retry()
            if attempt > policy.max_retries or not failure.retryable or streamed:
                final = _final_error(failure, attempt, context, streamed=streamed)
                final.last_error = error
                raise final from None
        _wait(policy.delay(failure, attempt - 1, context.rng), context, token)


def _wait(seconds: float, context: RetryContext, token: CancelToken) -> None:
    if context.sleep is None:
        token.wait(seconds)
    else:
        context.sleep(seconds)
    token.raise_if_cancelled(context.provider, context.model)


def _final_error(
    failure: Failure, attempts: int, context: RetryContext, *, streamed: bool
) -> ModelRequestError:
    tries = f"{attempts} attempt{'s' if attempts != 1 else ''}"
    if not failure.retryable:
        reason = " (not retried: the endpoint rejected the request)"
    elif streamed:
        reason = " (not retried: the stream had already produced output)"
    else:
        reason = ""
    return ModelRequestError(
        f"{context.provider} request for model {context.model!r} at {context.endpoint} failed "
        f"after {tries}: {failure.description}{reason}.",
        provider=context.provider, model=context.model, status=failure.status,
        attempts=attempts, retryable=failure.retryable,
    )

"""The seam through which a model adapter asks before each HTTP request, and reports after it.

An adapter built with a ``gate`` (:class:`RequestGate`) calls :func:`gated`
around every attempt it sends: :meth:`RequestGate.admit` may wait (for a
shared quota, a cooldown) and returns an :class:`Admission`, whose
:meth:`Admission.close` receives the attempt's :class:`RequestOutcome` in a
``finally`` (status, seconds, usage, the server's Retry-After). The
embedded runtime passes no gate; the cluster's is
:class:`srh_workers.quota.EndpointGate` (one quota for every worker, and the
operators' metrics). The wait happens inside the adapter's call, so it is
part of the step's request time and therefore of the run's model seconds.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from srh_core.api.cancel import CancelToken
from srh_core.api.response import ModelPrice, Usage
from srh_core.api.retry import retry_after_seconds

#: Output tokens reserved for a request that names no length limit.
DEFAULT_RESERVED_OUTPUT_TOKENS = 4096
#: Characters per token when estimating a prompt's size before it is sent.
CHARS_PER_TOKEN = 4
_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class RequestOutcome:
    """How one HTTP attempt ended.

    Attributes:
        status: HTTP status as text (``"200"``, ``"429"``), or ``"error"`` when no
            response came (connection error, timeout, cancellation).
        seconds: Time from sending to the end of the reply.
        usage: The reply's usage, priced when the tariff is known (None without a reply).
        retry_after: Seconds the server asked to wait (``Retry-After``), if it said.
    """

    status: str
    seconds: float
    usage: Usage | None = None
    retry_after: float | None = None


class Admission(Protocol):
    """Permission for one attempt; closed exactly once with the attempt's outcome."""

    def close(self, outcome: RequestOutcome) -> None: ...


class RequestGate(Protocol):
    """Admits model requests (may wait) and is told how each ended.

    Attributes:
        patience: Seconds :func:`gated` keeps re-sending an attempt answered with
            HTTP 429 (each time after the gate's shared cooldown) before it lets the
            adapter's own retries see the 429; 0: never.
    """

    patience: float

    def admit(self, reserved_tokens: int, lease_seconds: float | None,
              token: CancelToken) -> Admission:
        """Wait until one request of ``reserved_tokens`` may be sent.

        ``lease_seconds`` is how long the request may take (the adapter's timeout).

        Raises:
            ModelRequestError: No admission within the gate's bound.
            ModelRequestCancelledError: ``token`` was cancelled while waiting.
        """
        ...


def reserved_tokens(request: Mapping[str, Any]) -> int:
    """Tokens to reserve for ``request`` before sending it: its prompt's estimate plus n x max.

    The prompt is estimated from its JSON size (:data:`CHARS_PER_TOKEN`); the
    output from the request's length limit (any of the wire names), else
    :data:`DEFAULT_RESERVED_OUTPUT_TOKENS`. The reservation is reconciled
    with the reply's usage afterwards.
    """
    prompt = request.get("messages", request.get("input", ""))
    prompt_tokens = len(json.dumps(prompt, default=str)) // CHARS_PER_TOKEN
    limit = next((request[name] for name in ("max_completion_tokens", "max_tokens",
                                             "max_output_tokens") if request.get(name)),
                 DEFAULT_RESERVED_OUTPUT_TOKENS)
    return int(prompt_tokens + int(request.get("n") or 1) * int(limit))


def gated(gate: RequestGate | None, send: Callable[[], _T], *, reserved: int,
          timeout: float | None, token: CancelToken, price: ModelPrice | None,
          usage_of: Callable[[_T], Usage]) -> _T:
    """Send one attempt through ``gate`` (directly when there is none).

    A 429 answer is sent again after the gate's cooldown for up to the gate's
    ``patience`` (the quota is shared, so the wait is the cluster's, not a
    retry of this adapter); after that it is raised like any other failure.

    Args:
        gate: The gate, or None.
        send: The attempt.
        reserved: Tokens to reserve (:func:`reserved_tokens`).
        timeout: The adapter's request timeout (how long the admission's lease lasts).
        token: The call's cancel token (waiting stops when it is cancelled).
        price: Tariff for the outcome's usage.
        usage_of: The usage of ``send``'s reply.
    """
    if gate is None:
        return send()
    import openai  # the SDK is imported when a model is asked, not by offline runs

    first = time.monotonic()
    while True:
        admission = gate.admit(reserved, timeout, token)
        started = time.monotonic()
        status, usage, retry_after = "error", None, None
        try:
            reply = send()
            status, usage = "200", usage_of(reply).priced(price)
            return reply
        except openai.APIStatusError as error:
            status = str(error.status_code)
            retry_after = retry_after_seconds(error.response.headers)
            if error.status_code != 429 or time.monotonic() - first >= gate.patience:
                raise
        finally:
            admission.close(RequestOutcome(status, time.monotonic() - started, usage,
                                           retry_after))


__all__ = ["DEFAULT_RESERVED_OUTPUT_TOKENS", "Admission", "RequestGate", "RequestOutcome",
           "gated", "reserved_tokens"]

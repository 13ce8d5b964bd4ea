"""Collecting K samples from an endpoint: one ``n`` request, parallel singles for the rest.

A producer thread sends the requests and pushes events (text deltas,
finished samples, usage) onto a queue; the generator handed to
:class:`APICallResult` yields them in arrival order. When the first request
returns fewer choices than asked (many providers ignore ``n``), or when
``n`` is emulated from the start, the missing samples are requested as
single requests in a thread pool. A failure stops the siblings at their next
chunk and is raised from the generator. Samples cut by the length limit are
kept until all samples are in, then reported as one
:class:`ModelResponseTruncatedError` that carries the complete siblings.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Generator
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass

from srh_core.api.call_result import SampleDelta
from srh_core.api.cancel import CancelToken
from srh_core.api.response import CallSummary, ModelPrice, ModelResponse, Usage
from srh_core.api.wire import RawReply, RawSample
from srh_core.errors import ModelRequestError, ModelResponseTruncatedError

Emit = Callable[[int, str], None]
"""Receives ``(choice_index, text_delta)`` from a streaming request."""
SendRequest = Callable[[int, Emit, CancelToken], RawReply]
"""Sends one request asking for ``n`` samples; retries inside; raises ``ModelAPIError``."""
BuildResponse = Callable[[int, RawSample, "Usage | None"], ModelResponse]
"""Parses one raw sample into the response of sample ``k``."""


@dataclass(frozen=True, slots=True)
class SamplingPlan:
    """How to collect the samples of one call.

    Attributes:
        n: Samples wanted (K).
        ask_n_first: Send one request with ``n`` before falling back to singles.
        max_parallel: Most single requests in flight at once.
        provider: Provider name, for summaries and messages.
        model: Model name, for summaries and messages.
        price: Tariff used to price the summed usage, when known.
    """

    n: int
    ask_n_first: bool
    max_parallel: int
    provider: str
    model: str
    price: ModelPrice | None


@dataclass(frozen=True, slots=True)
class _Event:
    sample: int
    text: str = ""
    response: ModelResponse | None = None
    usage: Usage | None = None


#: How often a waiting caller checks its cancel token (seconds).
CANCEL_POLL_SECONDS = 0.05
_FINISHED = object()


def collect_samples(
    plan: SamplingPlan, send: SendRequest, build: BuildResponse, token: CancelToken
) -> Generator[SampleDelta, None, CallSummary]:
    """Yield the deltas of all K samples; return their summary.

    Raises:
        ModelAPIError: A request failed for good (retries are inside ``send``).
        ModelResponseTruncatedError: A sample hit the length limit.
    """
    events: queue.Queue[object] = queue.Queue()
    local = token.child()
    producer = threading.Thread(target=_produce, args=(plan, send, build, local, events),
                                name=f"srh-{plan.provider}-samples", daemon=True)
    producer.start()
    try:
        responses, usages = yield from _consume(events, plan, local)
    finally:
        local.cancel()
    return _summarise(plan, responses, usages)


def _next_event(events: queue.Queue[object], plan: SamplingPlan, token: CancelToken) -> object:
    # A cancel must free the caller even while a request blocks in the client (a
    # non-streamed request reads nothing until the endpoint answers): the producer
    # thread is left to its HTTP timeout.
    while True:
        try:
            return events.get(timeout=CANCEL_POLL_SECONDS)
        except queue.Empty:
            token.raise_if_cancelled(plan.provider, plan.model)


def _consume(events: queue.Queue[object], plan: SamplingPlan, token: CancelToken) -> Generator[
        SampleDelta, None, tuple[dict[int, ModelResponse], list[Usage]]]:
    responses: dict[int, ModelResponse] = {}
    usages: list[Usage] = []
    streamed: dict[int, int] = {}
    while (event := _next_event(events, plan, token)) is not _FINISHED:
        if isinstance(event, BaseException):
            raise event
        if not isinstance(event, _Event):
            continue
        if event.usage is not None:
            usages.append(event.usage)
        elif event.response is None:
            streamed[event.sample] = streamed.get(event.sample, 0) + len(event.text)
            yield SampleDelta(event.sample, event.text, None)
        else:
            responses[event.sample] = event.response
            rest = event.response.content[streamed.get(event.sample, 0):]
            yield SampleDelta(event.sample, rest, list(event.response.tool_calls))
    return responses, usages


def _produce(plan: SamplingPlan, send: SendRequest, build: BuildResponse, token: CancelToken,
             events: queue.Queue[object]) -> None:
    try:
        delivered = 0
        if plan.ask_n_first and plan.n > 1:
            delivered = _request(plan.n, 1, send, build, token, events)
        _request_singles(plan, range(delivered + 1, plan.n + 1), send, build, token, events)
        events.put(_FINISHED)
    except BaseException as error:  # the producer boundary: hand every failure to the consumer
        token.cancel()
        events.put(error)


def _request(asked: int, first: int, send: SendRequest, build: BuildResponse,
             token: CancelToken, events: queue.Queue[object]) -> int:
    """Send one request for ``asked`` samples numbered from ``first``; return how many came."""

    def emit(index: int, text: str) -> None:
        if 0 <= index < asked:
            events.put(_Event(first + index, text=text))

    reply = send(asked, emit, token)
    events.put(_Event(first, usage=reply.usage))
    samples = reply.samples[:asked]
    own_usage = reply.usage if len(samples) == 1 else None
    for offset, raw in enumerate(samples):
        events.put(_Event(first + offset, response=build(first + offset, raw, own_usage)))
    return len(samples)


def _request_singles(plan: SamplingPlan, samples: range, send: SendRequest,
                     build: BuildResponse, token: CancelToken,
                     events: queue.Queue[object]) -> None:
    if len(samples) <= 1:
        for sample in samples:
            _request_single(plan, sample, send, build, token, events)
        return
    pool = ThreadPoolExecutor(max_workers=min(plan.max_parallel, len(samples)),
                              thread_name_prefix=f"srh-{plan.provider}-sample")
    try:
        futures = [pool.submit(_request_single, plan, sample, send, build, token, events)
                   for sample in samples]
        for future in as_completed(futures):
            future.result()
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def _request_single(plan: SamplingPlan, sample: int, send: SendRequest, build: BuildResponse,
                    token: CancelToken, events: queue.Queue[object]) -> None:
    if _request(1, sample, send, build, token, events) == 0:
        raise ModelRequestError(
            f"{plan.provider} model {plan.model!r} returned no choices for sample {sample}.",
            provider=plan.provider, model=plan.model)


def _summarise(plan: SamplingPlan, responses: dict[int, ModelResponse],
               usages: list[Usage]) -> CallSummary:
    ordered = tuple(responses[sample] for sample in sorted(responses))
    summary = CallSummary(ordered, Usage.total(usages, plan.price), plan.provider, plan.model)
    truncated = [response for response in ordered if response.truncated]
    if truncated:
        raise truncation_error(plan, summary, truncated)
    return summary


def truncation_error(plan: SamplingPlan, summary: CallSummary,
                     truncated: list[ModelResponse]) -> ModelResponseTruncatedError:
    """The error for the first cut sample; the complete siblings ride along.

    Besides the documented fields, the error carries ``responses`` (the
    complete samples, to keep), ``truncated_responses`` (every cut sample)
    and ``summary`` (the whole call).
    """
    first = truncated[0]
    error = ModelResponseTruncatedError(
        f"{plan.provider} model {plan.model!r} hit the length limit in sample {first.sample} of "
        f"{plan.n}; kept {len(first.content)} characters and {len(first.tool_calls)} complete "
        "tool call(s). Raise max_tokens or ask for a shorter reply.",
        partial_message=first.content, tool_calls=list(first.tool_calls),
        usage=summary.usage.to_dict(), sample=first.sample,
        provider=plan.provider, model=plan.model,
    )
    error.responses = [r for r in summary.responses if not r.truncated]  # type: ignore[attr-defined]
    error.truncated_responses = truncated  # type: ignore[attr-defined]
    error.summary = summary  # type: ignore[attr-defined]
    return error

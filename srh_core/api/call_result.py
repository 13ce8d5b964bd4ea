"""``APICallResult``: the lazy, streaming handle returned by ``api(messages, n=K)``.

Iterating yields ``(content_delta, tool_calls_or_None)`` pairs as they
arrive: ``None`` marks a partial text delta; a list (possibly empty) marks
the end of one sample and carries its calls. With several samples in flight
the pairs interleave; :meth:`APICallResult.iter_deltas` gives the same
stream with the sample index. Iterating is optional: reading any property
drains the stream first. Any error raised while producing the responses
(``ModelAPIError`` and subclasses) is raised from iteration and again from
every property read.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from typing import Any, NamedTuple

from srh_core.api.response import CallSummary, ModelResponse
from srh_core.parsers import BaseParser
from srh_core.types import ToolCall


class SampleDelta(NamedTuple):
    """One streamed event: a text delta of sample ``sample``, or its end (with its calls)."""

    sample: int
    content: str
    tool_calls: list[ToolCall] | None


class APICallResult:
    """Wraps the response generator of one call and keeps its return value.

    Args:
        events: Generator yielding :class:`SampleDelta` and returning a :class:`CallSummary`.
        parser: The parser the responses were read with (for callers that format results).
    """

    def __init__(
        self,
        events: Generator[SampleDelta, None, CallSummary],
        parser: BaseParser | None = None,
    ) -> None:
        self._events = events
        self.parser = parser
        self._summary: CallSummary | None = None
        self._error: BaseException | None = None
        self._exhausted = False

    def __iter__(self) -> Iterator[tuple[str, list[ToolCall] | None]]:
        for delta in self.iter_deltas():
            yield delta.content, delta.tool_calls

    def iter_deltas(self) -> Iterator[SampleDelta]:
        """Yield the stream with sample indices; single pass (later calls yield nothing)."""
        while not self._exhausted:
            try:
                delta = next(self._events)
            except StopIteration as stop:
                self._finish(stop.value, None)
                return
            except BaseException as error:
                self._finish(None, error)
                raise
            yield delta

    def _finish(self, summary: CallSummary | None, error: BaseException | None) -> None:
        self._exhausted = True
        self._summary, self._error = summary, error

    def result(self) -> CallSummary:
        """Drain the stream and return the call summary (raises the call's error)."""
        for _ in self.iter_deltas():
            pass
        if self._error is not None:
            raise self._error
        if self._summary is None:
            raise RuntimeError("the response generator returned no call summary")
        return self._summary

    @property
    def return_value(self) -> CallSummary:
        """The generator's return value: the :class:`CallSummary`."""
        return self.result()

    @property
    def responses(self) -> list[ModelResponse]:
        """The K responses, ordered by sample."""
        return list(self.result().responses)

    @property
    def usage(self) -> dict[str, Any]:
        """Token and price usage summed over the whole call (``Usage.to_dict()``)."""
        return self.result().usage.to_dict()

    @property
    def contents(self) -> list[str]:
        """The K final contents, ordered by sample."""
        return [response.content for response in self.result().responses]

    @property
    def tool_calls(self) -> list[list[ToolCall]]:
        """The K lists of readable tool calls, ordered by sample."""
        return [list(response.tool_calls) for response in self.result().responses]

    def close(self) -> None:
        """Stop producing responses (in-flight requests are cancelled at the next chunk)."""
        if not self._exhausted:
            self._events.close()
            self._finish(None, RuntimeError("the call was closed before it finished"))

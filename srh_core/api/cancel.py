"""Cancellation tokens: ``BaseAPI.cancel()`` reaches every request in flight.

One token per ``api(...)`` call; the sample threads of that call get child
tokens, so one failing sample can stop its siblings without cancelling
unrelated calls. Tokens are checked before each request, at every streamed
chunk and while waiting to retry.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from srh_core.errors import ModelRequestCancelledError

logger = logging.getLogger("srh.api")


class CancelToken:
    """A thread-safe, one-way cancel flag, optionally tied to a parent token."""

    def __init__(self, parent: CancelToken | None = None) -> None:
        self._event = threading.Event()
        self._parent = parent

    def cancel(self) -> None:
        """Set the flag (idempotent)."""
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set() or (self._parent is not None and self._parent.cancelled)

    def child(self) -> CancelToken:
        """A token cancelled with this one, or on its own."""
        return CancelToken(self)

    def wait(self, seconds: float) -> bool:
        """Sleep up to ``seconds``; return True as soon as the token is cancelled."""
        if self._parent is None:
            return self._event.wait(max(seconds, 0.0))
        step = 0.05
        remaining = max(seconds, 0.0)
        while remaining > 0 and not self.cancelled:
            self._event.wait(min(step, remaining))
            remaining -= step
        return self.cancelled

    def raise_if_cancelled(self, provider: str, model: str) -> None:
        """Raise :class:`ModelRequestCancelledError` when the flag is set."""
        if self.cancelled:
            raise ModelRequestCancelledError(
                f"The {provider} request for model {model!r} was cancelled.",
                provider=provider, model=model,
            )


@contextmanager
def cancel_when(condition: Callable[[], bool], cancel: Callable[[], None], *,
                poll_seconds: float, name: str) -> Iterator[None]:
    """Call ``cancel`` once, as soon as ``condition()`` holds, while the block runs.

    A daemon thread asks ``condition`` every ``poll_seconds`` (first at once); it ends
    with the block (joined for at most a second). A ``cancel`` that raises is logged: a
    watcher must not die silently.
    """
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            if condition():
                try:
                    cancel()
                except Exception:
                    logger.exception("A cancellation callback failed")
                return
            done.wait(poll_seconds)

    watcher = threading.Thread(target=watch, name=name, daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        watcher.join(timeout=max(1.0, 2 * poll_seconds))

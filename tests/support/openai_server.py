"""A scripted OpenAI-compatible HTTP server for tests (stdlib only, 127.0.0.1, free port).

The server answers ``POST /v1/chat/completions`` and ``POST /v1/responses``
(any path, in fact) from a SCRIPT: a queue of canned :class:`Reply` objects
(JSON bodies or SSE streams, status codes, headers, delays), served in
order, one per request. Every request is recorded. A request that arrives
when the script is empty is answered with HTTP 418 (never retried) and
recorded as unexpected; :meth:`FakeOpenAIServer.assert_script_consumed`
fails on it, on a reply served to the wrong path, and on unused replies.

Use the ``openai_server`` fixture (import it into a conftest) or the class
as a context manager; :mod:`tests.support.openai_payloads` builds realistic
bodies, chunks and Responses events::

    from tests.support.openai_payloads import chat_completion

    def test_something(openai_server):
        openai_server.script(Reply.json(chat_completion(content="hi")))
        api = OpenAIAPI(base_url=openai_server.base_url, api_key="test")
        assert api("hello").contents == ["hi"]
        assert openai_server.requests[0].body["messages"][0]["content"] == "hello"
        # teardown asserts the script was consumed and nothing unexpected came
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

SSEEvent = Mapping[str, Any] | tuple[str, Mapping[str, Any]] | str
"""An SSE event: a JSON data dict, ``(event_name, data)``, or a raw ``data:`` string."""


@dataclass(frozen=True)
class Reply:
    """One scripted answer.

    Attributes:
        status: HTTP status code.
        body: JSON-serialisable body (or a ``str`` sent verbatim); ignored when ``events``.
        events: SSE events to stream instead of a body.
        headers: Extra response headers (e.g. ``{"Retry-After": "2"}``).
        delay: Seconds to wait before answering (to provoke client timeouts).
        event_delay: Seconds between SSE events.
        path: Expected request path (e.g. ``/v1/responses``); None accepts any.
        done_marker: End an SSE stream with ``data: [DONE]`` (Chat Completions does).
        disconnect: Close the connection without answering.
        hold: An event the test sets to let the answer go (after ``delay``): a reply
            held until the test has done something (sent a command, started a
            process) whatever the machine's load; waits at most ``HOLD_SECONDS``.
    """

    status: int = 200
    body: Any = None
    events: tuple[SSEEvent, ...] | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0
    event_delay: float = 0.0
    path: str | None = None
    done_marker: bool = True
    disconnect: bool = False
    hold: threading.Event | None = field(default=None, compare=False)

    @classmethod
    def json(cls, body: Any, *, status: int = 200, headers: Mapping[str, str] | None = None,
             delay: float = 0.0, path: str | None = None,
             hold: threading.Event | None = None) -> Reply:
        """A JSON reply."""
        return cls(status=status, body=body, headers=dict(headers or {}), delay=delay, path=path,
                   hold=hold)

    @classmethod
    def sse(cls, events: Sequence[SSEEvent], *, headers: Mapping[str, str] | None = None,
            delay: float = 0.0, event_delay: float = 0.0, path: str | None = None,
            done_marker: bool = True) -> Reply:
        """A ``text/event-stream`` reply."""
        return cls(events=tuple(events), headers=dict(headers or {}), delay=delay,
                   event_delay=event_delay, path=path, done_marker=done_marker)

    @classmethod
    def error(cls, status: int, message: str = "scripted failure", *,
              headers: Mapping[str, str] | None = None, path: str | None = None) -> Reply:
        """An OpenAI-style error body with ``status``."""
        body = {"error": {"message": message, "type": "scripted", "code": str(status)}}
        return cls(status=status, body=body, headers=dict(headers or {}), path=path)

    @classmethod
    def dropped(cls, *, path: str | None = None) -> Reply:
        """Close the connection without a response (a connection error for the client)."""
        return cls(disconnect=True, path=path)


@dataclass(frozen=True)
class RecordedRequest:
    """A request the server received.

    Attributes:
        method: HTTP method.
        path: Request path, query string removed.
        headers: Header names lower-cased.
        body: Decoded JSON body (or the raw text when it is not JSON).
        received_at: ``time.monotonic()`` at arrival.
    """

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    received_at: float


class FakeOpenAIServer:
    """Serves a script of replies on 127.0.0.1; records every request."""

    def __init__(self) -> None:
        self._responder: Callable[[RecordedRequest], Reply] | None = None
        self._script: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self.unexpected: list[RecordedRequest] = []
        self.errors: list[str] = []
        self.stopping = threading.Event()
        self._in_flight = 0
        self.peak_in_flight = 0
        """Most requests the server was answering at once (arrival to the reply's last byte)."""
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> FakeOpenAIServer:
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        httpd.daemon_threads = True
        httpd.block_on_close = False
        httpd.owner = self  # type: ignore[attr-defined]
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="fake-openai-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("the fake server is not started")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """OpenAI-compatible base URL, ``http://127.0.0.1:<port>/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    # -- script -----------------------------------------------------------------------------

    def script(self, *replies: Reply) -> FakeOpenAIServer:
        """Append replies to the script (served first in, first out)."""
        with self._lock:
            self._script.extend(replies)
        return self

    def respond_with(self, responder: Callable[[RecordedRequest], Reply]) -> FakeOpenAIServer:
        """Answer every request with ``responder(request)`` instead of a script.

        For runs whose number of requests is not fixed in advance (resumed,
        interrupted or timed runs): the responder decides from the request.
        """
        self._responder = responder
        return self

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._script)

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, in arrival order (expected or not)."""
        with self._lock:
            return list(self._requests)

    def bodies(self) -> list[Any]:
        """The JSON bodies of every request, in arrival order."""
        return [request.body for request in self.requests]

    def wait_for_requests(self, count: int, timeout: float = 5.0) -> list[RecordedRequest]:
        """Wait (with a deadline) until ``count`` requests arrived; return them."""
        deadline = time.monotonic() + timeout
        while len(self.requests) < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"expected {count} requests within {timeout}s, "
                                     f"got {len(self.requests)}")
            time.sleep(0.01)
        return self.requests

    def assert_script_consumed(self) -> None:
        """Fail on unused replies, unexpected requests or replies served to the wrong path."""
        problems = list(self.errors)
        if self.unexpected:
            problems.append(f"{len(self.unexpected)} unexpected request(s): "
                            f"{[r.path for r in self.unexpected]}")
        if self.remaining:
            problems.append(f"{self.remaining} scripted reply(ies) never requested")
        if problems:
            raise AssertionError("fake OpenAI server: " + "; ".join(problems))

    def _next_reply(self, request: RecordedRequest) -> Reply | None:
        with self._lock:
            self._requests.append(request)
            if self._responder is not None:
                return self._responder(request)
            if not self._script:
                self.unexpected.append(request)
                return None
            reply = self._script.popleft()
        if reply.path is not None and reply.path != request.path:
            self.errors.append(f"reply scripted for {reply.path} served to {request.path}")
        return reply


class _Handler(BaseHTTPRequestHandler):
    server_version = "FakeOpenAI/1.0"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass

    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        self._answer()

    def do_POST(self) -> None:  # noqa: N802 - stdlib naming
        self._answer()

    @property
    def owner(self) -> FakeOpenAIServer:
        return self.server.owner  # type: ignore[attr-defined]

    def _answer(self) -> None:
        owner = self.owner
        with owner._lock:
            owner._in_flight += 1
            owner.peak_in_flight = max(owner.peak_in_flight, owner._in_flight)
        try:
            self._answer_one()
        finally:
            with owner._lock:
                owner._in_flight -= 1

    def _answer_one(self) -> None:
        reply = self.owner._next_reply(self._record())
        if reply is None:
            self._send_json(418, {"error": {"message": "fake server: unexpected request "
                                                       "(script exhausted)"}}, {})
            return
        if reply.delay and self.owner.stopping.wait(reply.delay):
            return
        if reply.hold is not None and not _released(reply.hold, self.owner.stopping):
            return
        try:
            self._serve(reply)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout test) or cancelled

    def _record(self) -> RecordedRequest:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length).decode("utf-8", "replace") if length else ""
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw
        headers = {name.lower(): value for name, value in self.headers.items()}
        return RecordedRequest(self.command, self.path.split("?", 1)[0], headers, body,
                               time.monotonic())

    def _serve(self, reply: Reply) -> None:
        if reply.disconnect:
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if reply.events is not None:
            self._send_events(reply)
        else:
            self._send_json(reply.status, reply.body, reply.headers)

    def _send_json(self, status: int, body: Any, headers: Mapping[str, str]) -> None:
        is_text = isinstance(body, str)
        payload = (body if is_text else json.dumps(body)).encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain" if is_text else "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)

    def _send_events(self, reply: Reply) -> None:
        self.send_response(reply.status)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()
        for event in reply.events or ():
            self.wfile.write(_sse_bytes(event))
            self.wfile.flush()
            if reply.event_delay and self.owner.stopping.wait(reply.event_delay):
                return
        if reply.done_marker:
            self.wfile.write(b"data: [DONE]\n\n")
        self.close_connection = True


HOLD_SECONDS = 120.0
"""The longest a held reply waits for its test (a test that forgets to release it fails)."""


def _released(hold: threading.Event, stopping: threading.Event) -> bool:
    """Wait until ``hold`` is set; False when the server stops or the wait runs out first."""
    deadline = time.monotonic() + HOLD_SECONDS
    while not hold.wait(0.05):
        if stopping.is_set() or time.monotonic() > deadline:
            return False
    return True


def _sse_bytes(event: SSEEvent) -> bytes:
    if isinstance(event, str):
        return f"data: {event}\n\n".encode()
    if isinstance(event, tuple):
        name, data = event
        return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
    return f"data: {json.dumps(event)}\n\n".encode()


def unused_port() -> int:
    """A local port with nothing listening (for connection-refused tests)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def openai_server() -> Iterator[FakeOpenAIServer]:
    """A started fake server; teardown asserts its script was fully and exactly consumed."""
    with FakeOpenAIServer() as server:
        yield server
    server.assert_script_consumed()

"""A live workbench for tests: uvicorn on a free loopback port, and a cookie-keeping client."""

from __future__ import annotations

import http.client
import http.cookiejar
import json
import socket
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import uvicorn

from srh_web.app import create_app
from srh_web.catalog import Catalog
from tests.support.waits import START_SECONDS


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LiveServer:
    """``create_app(Catalog(roots))`` served by uvicorn on a thread (``panels`` closed at exit:
    the app's lifespan, which would close them, is off here)."""

    def __init__(self, roots: list[Path], *, token: str | None = None,
                 allowed_hosts: tuple[str, ...] = ("127.0.0.1", "localhost"),
                 cluster: Any = None, panels: Any = None) -> None:
        self.port = free_port()
        self.panels = panels
        app = create_app(Catalog(roots, cluster), token=token, allowed_hosts=allowed_hosts,
                         panels=panels)
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning",
                                lifespan="off", timeout_graceful_shutdown=1)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> LiveServer:
        self.thread.start()
        deadline = time.monotonic() + START_SECONDS
        while not self.server.started:
            assert time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        if self.panels is not None:
            assert self.panels.close(), "a panel's turn did not end"


class Client:
    """urllib with a cookie jar; answers are (status, headers, body)."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar),
                                                  _NoRedirect())

    def request(self, method: str, path: str, *, body: Any = None,
                headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
        data = None if body is None else (body if isinstance(body, bytes)
                                          else json.dumps(body).encode())
        request = urllib.request.Request(self.base + path, data=data, method=method,
                                         headers=dict(headers or {}))
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            # only against a hang: an answer that starts something (a panel's first turn
            # imports the agent) took over 10 s in a loaded srh web process
            with self.opener.open(request, timeout=START_SECONDS) as response:
                return response.status, dict(response.headers), response.read()
        except urllib.error.HTTPError as error:
            return error.code, dict(error.headers), error.read()

    def get(self, path: str, **kwargs: Any) -> tuple[int, dict[str, str], bytes]:
        return self.request("GET", path, **kwargs)

    def json(self, path: str, **kwargs: Any) -> Any:
        status, _, body = self.get(path, **kwargs)
        assert status == 200, (status, body[:300])
        return json.loads(body)

    def cookie(self, name: str) -> str | None:
        return next((c.value for c in self.jar if c.name == name), None)

    def post(self, path: str, body: Any, *, csrf: bool = True,
             headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
        if csrf and self.cookie("srh_csrf") is None:
            self.get("/api/runs")
        extra = {"X-SRH-CSRF": self.cookie("srh_csrf") or ""} if csrf else {}
        return self.request("POST", path, body=body, headers={**extra, **(headers or {})})


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def read_sse(base: str, path: str, until: Any, *, timeout: float = 10.0,
             headers: dict[str, str] | None = None) -> list[tuple[str, Any]]:
    """Read server-sent events until ``until(events)`` holds; return ``(event, data)`` pairs."""
    host, port = base.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=timeout)
    connection.request("GET", path, headers={"Accept": "text/event-stream", **(headers or {})})
    response = connection.getresponse()
    assert response.status == 200, response.read()[:300]
    events: list[tuple[str, Any]] = []
    name, deadline = "message", time.monotonic() + timeout
    try:
        while not until(events):
            assert time.monotonic() < deadline, f"SSE condition not met; got {events}"
            line = response.fp.readline().decode().rstrip("\n")
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                events.append((name, json.loads(line[6:])))
    finally:
        connection.close()
    return events

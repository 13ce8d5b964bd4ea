"""web_fetch and web_search against local HTTP servers, under the network policy."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from srh_core.tools.base import BaseTool
from srh_core.tools.web import ALLOW_HOSTS_ENV, SEARCH_URL_ENV, WebPolicy, WebRefused

PAGE = ("<html><head><title>Kepler's third law</title><style>p{color:red}</style>"
        "<script>var secret = 1;</script></head><body><h1>Orbits</h1>"
        "<p>T<sup>2</sup> is proportional to a<sup>3</sup>.</p><noscript>x</noscript>"
        "<p>Second paragraph.</p></body></html>")


class Site:
    """A local site: path -> (status, headers, body); every request recorded."""

    def __init__(self, routes: dict[str, tuple[int, dict[str, str], bytes]]) -> None:
        self.routes, self.seen = routes, []
        site = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802 - stdlib naming
                site.seen.append(self.path)
                status, headers, body = site.routes.get(self.path.split("?")[0],
                                                        (404, {}, b"missing"))
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value.replace("{port}", str(site.port)))
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def url(self, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.port}{path}"


@pytest.fixture
def site() -> Iterator[Callable[..., Site]]:
    made: list[Site] = []

    def start(routes: dict[str, tuple[int, dict[str, str], bytes]]) -> Site:
        server = Site(routes)
        server.thread.start()
        made.append(server)
        return server

    yield start
    for server in made:
        server.server.shutdown()
        server.server.server_close()


def fetch(**params):
    return BaseTool.create("web_fetch", None)(**params)


def test_loopback_is_refused_unless_the_operator_allows_it(site, monkeypatch) -> None:
    page = site({"/": (200, {"Content-Type": "text/html; charset=utf-8"}, PAGE.encode())})
    refused = fetch(url=page.url())
    assert not refused.ok and "non-public address" in refused.result_str
    assert ALLOW_HOSTS_ENV in refused.result_str and page.seen == []
    monkeypatch.setenv(ALLOW_HOSTS_ENV, f"127.0.0.1:{page.port}")
    done = fetch(url=page.url())
    assert done.ok, done.result_str
    assert done.result["title"] == "Kepler's third law"
    assert done.result["content"] == "Orbits\nT2 is proportional to a3.\nSecond paragraph."
    assert "secret" not in done.result_str and "color" not in done.result_str


def test_a_redirect_to_a_private_address_is_refused(site, monkeypatch) -> None:
    inner = site({"/admin": (200, {"Content-Type": "text/plain"}, b"internal")})
    outer = site({"/go": (302, {"Location": inner.url("/admin")}, b""),
                  "/here": (301, {"Location": "/final"}, b""),
                  "/final": (200, {"Content-Type": "text/plain"}, b"arrived " * 200)})
    monkeypatch.setenv(ALLOW_HOSTS_ENV, f"127.0.0.1:{outer.port}")
    refused = fetch(url=outer.url("/go"))
    assert not refused.ok and "non-public address" in refused.result_str
    assert inner.seen == []  # never asked
    followed = fetch(url=outer.url("/here"), max_characters=1000)
    assert followed.ok and followed.result["final_url"] == outer.url("/final")
    assert followed.result["truncated"] and followed.result["characters"] == 1000


def test_bad_arguments_and_pages_that_are_not_text(site, monkeypatch) -> None:
    binary = site({"/x.bin": (200, {"Content-Type": "application/octet-stream"}, b"\0\1"),
                   "/gone": (404, {}, b"")})
    monkeypatch.setenv(ALLOW_HOSTS_ENV, f"127.0.0.1:{binary.port}")
    for params, message in (({"url": "file:///etc/passwd"}, "Only absolute http(s) URLs"),
                            ({"url": binary.url(), "max_characters": 10}, "between 1000"),
                            ({"url": binary.url("/x.bin")}, "not a text page"),
                            ({"url": binary.url("/gone")}, "HTTP 404")):
        result = fetch(**params)
        assert not result.ok and message in result.result_str, result.result_str


@pytest.mark.parametrize(("address", "allowed"), [
    ("93.184.216.34", True), ("2606:4700::1111", True), ("127.0.0.1", False),
    ("10.1.2.3", False), ("192.168.0.1", False), ("169.254.169.254", False),
    ("100.64.0.1", False), ("::1", False), ("fe80::1", False), ("224.0.0.1", False)])
def test_only_public_addresses_pass(monkeypatch, address: str, allowed: bool) -> None:
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: [
        (family, socket.SOCK_STREAM, 6, "", (address, 80))])
    policy = WebPolicy()
    if allowed:
        assert policy.address("http://example.org/")[2] == address
    else:
        with pytest.raises(WebRefused, match="non-public address"):
            policy.address("http://example.org/")


def test_web_search_asks_the_operators_backend(site, monkeypatch) -> None:
    rows = [{"title": f"Paper {n}", "url": f"https://example.org/{n}",
             "content": "  Kepler   orbits "} for n in range(8)]
    backend = site({"/search": (200, {"Content-Type": "application/json"},
                                json.dumps({"results": rows}).encode())})
    search = BaseTool.create("web_search", None)
    unset = search(query="kepler")
    assert not unset.ok and SEARCH_URL_ENV in unset.result_str
    monkeypatch.setenv(SEARCH_URL_ENV, backend.url("/search?format=json&q={query}"))
    found = search(query="kepler third law", max_results=3)
    assert found.ok, found.result_str  # the operator's backend on loopback: exempt
    assert [r["title"] for r in found.result["results"]] == ["Paper 0", "Paper 1", "Paper 2"]
    assert found.result["results"][0]["snippet"] == "Kepler orbits"
    assert backend.seen == ["/search?format=json&q=kepler+third+law"]
    assert not search(query="x", max_results=11).ok

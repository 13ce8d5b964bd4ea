"""``web_fetch`` and ``web_search``: public web pages as text, under a network policy.

The policy (:class:`WebPolicy`), for every request and every redirect:

- http and https only, with a host name or address;
- the host is resolved once and every address it resolves to must be a
  public (globally routable) one: loopback, private, link-local, shared,
  multicast and reserved addresses are refused, so a page cannot make a run
  read the worker's cloud metadata service or an internal dashboard;
- the connection goes to the address that was checked (no second lookup a
  DNS rebinding could change), with TLS verified against the host name;
- the operator may allow hosts anyway: ``SRH_WEB_ALLOW_HOSTS`` (comma
  separated ``host`` or ``host:port``, e.g. an intranet wiki);
- at most :data:`MAX_REDIRECTS` redirects, :data:`MAX_BYTES` of body and
  :data:`TIMEOUT_SECONDS` per request.

``web_search`` asks the operator's search backend: ``SRH_WEB_SEARCH_URL`` is
a URL with ``{query}`` in it that answers JSON in SearXNG's shape
(``{"results": [{"title", "url", "content"}]}``), e.g.
``http://searx.internal:8080/search?format=json&q={query}``. That host is the
operator's choice and is exempt from the address rule; the pages it lists
are fetched under the policy like any other. Without the setting the tool
says how to configure one. Neither tool is among the agent's default tools:
enable them with ``tools``.
"""

from __future__ import annotations

import http.client
import ipaddress
import json
import os
import socket
import ssl
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any
from urllib.parse import quote_plus, urljoin, urlsplit

from srh_core.errors import ToolArgumentError
from srh_core.tools.base import BaseTool

ALLOW_HOSTS_ENV = "SRH_WEB_ALLOW_HOSTS"
SEARCH_URL_ENV = "SRH_WEB_SEARCH_URL"
MAX_REDIRECTS = 5
MAX_BYTES = 2 * 1024**2
TIMEOUT_SECONDS = 15.0
MIN_CHARACTERS, MAX_CHARACTERS = 1_000, 50_000
MAX_RESULTS = 10
USER_AGENT = "srh-web/1 (symbolic regression research tool)"
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_DROPPED = frozenset({"script", "style", "noscript", "template", "svg", "head"})
_BLOCKS = frozenset({"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6",
                     "section", "article", "pre", "blockquote", "table", "ul", "ol", "hr"})


class WebRefused(ToolArgumentError):
    """A URL the network policy does not allow."""


@dataclass(frozen=True)
class WebPolicy:
    """Which hosts the web tools may reach (see the module docstring)."""

    allowed: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def from_env(cls, environ: Any = None) -> WebPolicy:
        raw = (os.environ if environ is None else environ).get(ALLOW_HOSTS_ENV, "")
        return cls(frozenset(part.strip().lower() for part in raw.split(",") if part.strip()))

    def address(self, url: str, *, exempt: bool = False) -> tuple[str, int, str]:
        """``(host, port, address)`` to connect to for ``url``; raises :class:`WebRefused`."""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise WebRefused(f"Only absolute http(s) URLs can be fetched; got {url!r}.",
                             parameter="url")
        host = parts.hostname.lower()
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            raise WebRefused(f"{url!r} has an invalid port.", parameter="url") from None
        try:
            found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except socket.gaierror as error:
            raise WebRefused(f"Cannot resolve {host!r}: {error}.", parameter="url") from None
        addresses = [info[4][0] for info in found]
        if not (exempt or host in self.allowed or f"{host}:{port}" in self.allowed):
            for text in addresses:
                address = ipaddress.ip_address(text.split("%")[0])
                if not address.is_global or address.is_multicast:
                    raise WebRefused(
                        f"{host} resolves to {address}, a non-public address: the web tools "
                        f"reach public hosts only (an operator may allow hosts in "
                        f"{ALLOW_HOSTS_ENV}).", parameter="url")
        return host, port, addresses[0]


class _PinnedHTTP(http.client.HTTPConnection):
    def __init__(self, host: str, port: int, address: str, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout)
        self._address = address

    def connect(self) -> None:
        self.sock = socket.create_connection((self._address, self.port), self.timeout)


class _PinnedHTTPS(http.client.HTTPSConnection):
    def __init__(self, host: str, port: int, address: str, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout, context=ssl.create_default_context())
        self._address = address

    def connect(self) -> None:
        sock = socket.create_connection((self._address, self.port), self.timeout)
        self.sock = self._context.wrap_socket(sock, server_hostname=self.host)  # type: ignore[attr-defined]


@dataclass(frozen=True)
class Page:
    url: str
    status: int
    content_type: str
    body: bytes
    truncated: bool

    def text(self) -> str:
        charset = "utf-8"
        for part in self.content_type.split(";")[1:]:
            key, _, value = part.strip().partition("=")
            if key.lower() == "charset" and value:
                charset = value.strip('"')
        try:
            return self.body.decode(charset, errors="replace")
        except LookupError:
            return self.body.decode("utf-8", errors="replace")


def fetch(url: str, policy: WebPolicy, *, exempt: bool = False,
          timeout: float = TIMEOUT_SECONDS) -> Page:
    """GET ``url`` under ``policy``, following redirects (each one checked)."""
    for _ in range(MAX_REDIRECTS + 1):
        host, port, address = policy.address(url, exempt=exempt)
        parts = urlsplit(url)
        kind = _PinnedHTTPS if parts.scheme == "https" else _PinnedHTTP
        connection = kind(host, port, address, timeout)
        try:
            target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
            connection.request("GET", target, headers={
                "User-Agent": USER_AGENT, "Accept": "text/html, text/plain;q=0.9, */*;q=0.5"})
            response = connection.getresponse()
            if response.status in _REDIRECTS and response.getheader("Location"):
                url = urljoin(url, response.getheader("Location") or "")
                exempt = False  # wherever the operator's backend sends us, the policy holds
                continue
            body = response.read(MAX_BYTES + 1)
            return Page(url, response.status, response.getheader("Content-Type") or "",
                        body[:MAX_BYTES], len(body) > MAX_BYTES)
        except (OSError, http.client.HTTPException) as error:
            raise ConnectionError(f"Fetching {url} failed: {type(error).__name__}: "
                                  f"{error}") from None
        finally:
            connection.close()
    raise WebRefused(f"{url} redirected more than {MAX_REDIRECTS} times.", parameter="url")


class _Readable(HTMLParser):
    """The visible text of an HTML page and its title (scripts and styles dropped)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title = ""
        self._skip = 0
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag in _DROPPED:
            self._skip += 1
        elif tag == "title":
            self._in_title = True
        elif tag in _BLOCKS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in _DROPPED:
            self._skip = max(0, self._skip - 1)
        elif tag == "title":
            self._in_title = False
        elif tag in _BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        elif not self._skip:
            self.parts.append(data)

    def text(self) -> str:
        lines = (" ".join(line.split()) for line in "".join(self.parts).splitlines())
        return "\n".join(line for line in lines if line)


def readable_text(page: Page) -> tuple[str, str]:
    """``(title, text)`` of a page: HTML made readable, plain text and JSON as they are."""
    kind = page.content_type.split(";")[0].strip().lower()
    text = page.text()
    if kind in ("text/html", "application/xhtml+xml") or (not kind and "<html" in text[:500]):
        parser = _Readable()
        parser.feed(text)
        parser.close()
        return " ".join(parser.title.split()), parser.text()
    if kind.startswith("text/") or kind in ("application/json", "application/xml"):
        return "", text
    raise ValueError(f"{page.url} is not a text page (Content-Type {kind or 'unknown'}).")


@BaseTool.register("web_fetch")
class WebFetchTool(BaseTool):
    """Fetch readable text from a public web page."""

    result_str_limit = MAX_CHARACTERS + 1_000

    def execute(self, url: str, max_characters: int = 30_000) -> dict[str, Any]:
        """Fetch readable text from a public HTTP or HTTPS page.

        Args:
            url: Absolute public webpage URL, e.g. one returned by web_search.
            max_characters: Maximum number of extracted text characters, between 1000
                and 50000.
        """
        if not isinstance(url, str) or not url.strip():
            raise ToolArgumentError("url must be an absolute http(s) URL.", parameter="url")
        if isinstance(max_characters, bool) or not isinstance(max_characters, int) or not (
                MIN_CHARACTERS <= max_characters <= MAX_CHARACTERS):
            raise ToolArgumentError(f"max_characters must be an integer between "
                                    f"{MIN_CHARACTERS} and {MAX_CHARACTERS}; got "
                                    f"{max_characters!r}.", parameter="max_characters")
        page = fetch(url.strip(), WebPolicy.from_env())
        if page.status >= 400:
            raise ConnectionError(f"{page.url} answered HTTP {page.status}.")
        title, text = readable_text(page)
        return {"url": url, "final_url": page.url, "status": page.status, "title": title,
                "content": text[:max_characters],
                "truncated": page.truncated or len(text) > max_characters,
                "characters": min(len(text), max_characters)}

    @classmethod
    def format_result_dict(cls, result: dict[str, Any]) -> str:
        head = f"[{result['title'] or result['final_url']}] {result['final_url']}"
        tail = "\n[... truncated]" if result["truncated"] else ""
        return f"{head}\n{result['content']}{tail}"


@BaseTool.register("web_search")
class WebSearchTool(BaseTool):
    """Search the web through the operator's search backend."""

    def execute(self, query: str, max_results: int = 5) -> dict[str, Any]:
        """Search the public web for papers, documentation, and scientific context.

        Args:
            query: Specific search query.
            max_results: Maximum number of results, between 1 and 10.
        """
        if not isinstance(query, str) or not query.strip() or len(query) > 500:
            raise ToolArgumentError("query must be a non-empty text of at most 500 characters.",
                                    parameter="query")
        if isinstance(max_results, bool) or not isinstance(max_results, int) or not (
                1 <= max_results <= MAX_RESULTS):
            raise ToolArgumentError(f"max_results must be an integer between 1 and "
                                    f"{MAX_RESULTS}; got {max_results!r}.",
                                    parameter="max_results")
        template = os.environ.get(SEARCH_URL_ENV, "")
        if "{query}" not in template:
            raise ToolArgumentError(
                f"No search backend is configured: the operator sets {SEARCH_URL_ENV} to a "
                "URL with {query} that answers JSON like SearXNG's "
                "(e.g. http://searx.internal:8080/search?format=json&q={query}).",
                parameter="query")
        page = fetch(template.replace("{query}", quote_plus(query.strip())),
                     WebPolicy.from_env(), exempt=True)
        if page.status >= 400:
            raise ConnectionError(f"The search backend answered HTTP {page.status}.")
        try:
            results = json.loads(page.text()).get("results") or []
        except (ValueError, AttributeError):
            raise ConnectionError("The search backend did not answer JSON with a "
                                  "'results' list.") from None
        rows = [{"title": str(item.get("title") or ""), "url": str(item.get("url") or ""),
                 "snippet": " ".join(str(item.get("content") or "").split())[:500]}
                for item in results if isinstance(item, dict) and item.get("url")]
        return {"query": query, "results": rows[:max_results]}

    @classmethod
    def format_result_dict(cls, result: dict[str, Any]) -> str:
        if not result["results"]:
            return f"No results for {result['query']!r}."
        rows = [f"{n}. {row['title']}\n   {row['url']}\n   {row['snippet']}"
                for n, row in enumerate(result["results"], 1)]
        return f"Results for {result['query']!r}:\n" + "\n".join(rows)


__all__ = ["ALLOW_HOSTS_ENV", "SEARCH_URL_ENV", "WebFetchTool", "WebPolicy", "WebRefused",
           "WebSearchTool", "fetch", "readable_text"]

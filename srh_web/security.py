"""Who may use the workbench, and what a page may do: one ASGI middleware.

- **Host check**: on loopback the ``Host`` header must name the loopback
  (DNS rebinding cannot make a remote page talk to us).
- **Token**: when a token is set (required off loopback), every request,
  the event stream included, must carry it: ``Authorization: Bearer``, the
  ``srh_token`` cookie, or ``?token=`` once (a page opened that way gets the
  cookie, HttpOnly and SameSite=Strict, and is redirected to drop the token
  from the address bar).
- **CSRF**: every request that is not GET/HEAD must send the
  ``X-SRH-CSRF`` header equal to the ``srh_csrf`` cookie and to this
  server's secret, and a foreign ``Origin`` is refused. Another site can
  neither read the cookie nor send the header without a CORS preflight,
  which we never grant.
- **Headers**: a strict Content-Security-Policy (scripts, styles, fonts
  and connections only from this origin; KaTeX's inline styles allowed),
  ``nosniff``, no framing, no referrer.
"""

from __future__ import annotations

import hmac
import json
import secrets
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

TOKEN_COOKIE = "srh_token"
CSRF_COOKIE = "srh_csrf"
CSRF_HEADER = "x-srh-csrf"
SAFE_METHODS = frozenset({"GET", "HEAD"})
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")
CONTENT_SECURITY_POLICY = ("default-src 'none'; script-src 'self'; style-src 'self' "
                           "'unsafe-inline'; font-src 'self'; img-src 'self' data:; "
                           "connect-src 'self'; base-uri 'none'; form-action 'self'; "
                           "frame-ancestors 'none'")
SECURITY_HEADERS = ((b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
                    (b"x-content-type-options", b"nosniff"), (b"x-frame-options", b"DENY"),
                    (b"referrer-policy", b"no-referrer"),
                    (b"cross-origin-opener-policy", b"same-origin"))


class SecurityMiddleware:
    """Host check, token, CSRF and security headers around ``app``.

    Args:
        app: The ASGI application.
        token: Required on every request when set.
        allowed_hosts: Host names the ``Host`` header may carry; empty allows any.
        csrf_secret: This server's CSRF secret (random when None).
    """

    def __init__(self, app: ASGIApp, *, token: str | None, allowed_hosts: Sequence[str] = (),
                 csrf_secret: str | None = None) -> None:
        self.app = app
        self.token = token
        self.allowed_hosts = {host.lower() for host in allowed_hosts}
        self.csrf_secret = csrf_secret or secrets.token_urlsafe(32)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        cookies = _cookies(headers.get("cookie", ""))
        refusal = self._refusal(scope, headers, cookies)
        if refusal is not None:
            await _reply(send, *refusal)
            return
        query_token = dict(parse_qsl(scope.get("query_string", b"").decode())).get("token")
        if self.token and query_token and scope["method"] == "GET" \
                and "text/html" in headers.get("accept", ""):
            await self._redirect_without_token(scope, send)
            return
        set_csrf = cookies.get(CSRF_COOKIE) != self.csrf_secret

        async def send_secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                extra = list(SECURITY_HEADERS)
                if set_csrf:
                    extra.append((b"set-cookie", self._cookie(CSRF_COOKIE, self.csrf_secret,
                                                              http_only=False)))
                message["headers"] = list(message.get("headers") or []) + extra
            await send(message)

        await self.app(scope, receive, send_secured)

    def _refusal(self, scope: Scope, headers: dict[str, str], cookies: dict[str, str]
                 ) -> tuple[int, str] | None:
        host = _host_name(headers.get("host", ""))
        if self.allowed_hosts and host not in self.allowed_hosts:
            return 421, f"Host {host!r} is not served here; use 127.0.0.1 or localhost."
        if self.token and not self._token_ok(scope, headers, cookies):
            return 401, "A valid token is required (Authorization: Bearer, or ?token=)."
        if scope["method"] not in SAFE_METHODS:
            supplied = headers.get(CSRF_HEADER, "")
            if not (_same(supplied, self.csrf_secret)
                    and _same(cookies.get(CSRF_COOKIE, ""), self.csrf_secret)):
                return 403, "Missing or wrong CSRF token (X-SRH-CSRF header and srh_csrf cookie)."
            origin = headers.get("origin")
            if origin and _host_name(urlsplit(origin).netloc) != host:
                return 403, f"Cross-origin request from {origin!r} refused."
        return None

    def _token_ok(self, scope: Scope, headers: dict[str, str], cookies: dict[str, str]) -> bool:
        authorization = headers.get("authorization", "")
        bearer = authorization[7:] if authorization.lower().startswith("bearer ") else ""
        query = dict(parse_qsl(scope.get("query_string", b"").decode())).get("token", "")
        return any(_same(value, str(self.token))
                   for value in (bearer, cookies.get(TOKEN_COOKIE, ""), query) if value)

    async def _redirect_without_token(self, scope: Scope, send: Send) -> None:
        query = [(k, v) for k, v in parse_qsl(scope.get("query_string", b"").decode())
                 if k != "token"]
        location = scope.get("path", "/") + (f"?{urlencode(query)}" if query else "")
        headers = [(b"location", location.encode()), (b"content-length", b"0"),
                   (b"set-cookie", self._cookie(TOKEN_COOKIE, str(self.token), http_only=True)),
                   *SECURITY_HEADERS]
        await send({"type": "http.response.start", "status": 303, "headers": headers})
        await send({"type": "http.response.body", "body": b""})

    @staticmethod
    def _cookie(name: str, value: str, *, http_only: bool) -> bytes:
        flags = "; HttpOnly" if http_only else ""
        return f"{name}={value}; Path=/; SameSite=Strict{flags}".encode()


def _headers(scope: Scope) -> dict[str, str]:
    return {key.decode("latin-1").lower(): value.decode("latin-1")
            for key, value in scope.get("headers") or []}


def _cookies(text: str) -> dict[str, str]:
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(text)
    except Exception:  # a malformed cookie header is the same as none
        return {}
    return {name: morsel.value for name, morsel in jar.items()}


def _host_name(netloc: str) -> str:
    netloc = netloc.strip().lower()
    if netloc.startswith("["):
        return netloc[:netloc.find("]") + 1]
    return netloc.rsplit(":", 1)[0] if netloc.count(":") == 1 else netloc


def _same(supplied: str, expected: str) -> bool:
    return bool(supplied) and hmac.compare_digest(supplied.encode(), expected.encode())


async def _reply(send: Send, status: int, message: str) -> None:
    body = json.dumps({"error": message}).encode()
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
        *SECURITY_HEADERS]})
    await send({"type": "http.response.body", "body": body})

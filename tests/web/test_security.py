"""srh web's security: loopback by default, tokens, CSRF on POST, headers, no HTML injection."""

from __future__ import annotations

import argparse
import json

import pytest

from srh_web.cli import WebSettings, settings_from_args
from srh_web.errors import WebConfigurationError
from tests.web.support import Client, LiveServer, read_sse

TOKEN = "t0ken-for-tests-0123456789"


def args(**values) -> argparse.Namespace:
    defaults = {"host": "127.0.0.1", "port": 8765, "runs": None, "redis": None, "token": None,
                "workspaces": "workspaces", "llm": "offline", "base_url": None}
    return argparse.Namespace(**{**defaults, **values})


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1", "127.0.0.5"])
def test_loopback_needs_no_token(host):
    assert settings_from_args(args(host=host)).token is None


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.10", "example.org", "::"])
def test_any_other_host_requires_a_token(host, monkeypatch):
    monkeypatch.delenv("SRH_WEB_TOKEN", raising=False)
    with pytest.raises(WebConfigurationError, match="give a token with --token or SRH_WEB_TOKEN"):
        settings_from_args(args(host=host))
    assert settings_from_args(args(host=host, token=TOKEN)).token == TOKEN
    monkeypatch.setenv("SRH_WEB_TOKEN", TOKEN)
    assert settings_from_args(args(host=host)).token == TOKEN


def test_short_tokens_and_bad_ports_are_refused():
    with pytest.raises(WebConfigurationError, match="at least 16"):
        WebSettings(token="short")
    with pytest.raises(WebConfigurationError, match="--port"):
        WebSettings(port=70000)


def test_the_cli_reports_an_unsafe_host_as_a_usage_error(capsys, monkeypatch):
    from srh_core.cli import main

    monkeypatch.delenv("SRH_WEB_TOKEN", raising=False)
    assert main(["web", "--host", "0.0.0.0"]) == 2
    assert "reachable from other machines" in capsys.readouterr().err


@pytest.fixture(scope="module")
def guarded(runs_root):
    with LiveServer([runs_root], token=TOKEN, allowed_hosts=()) as server:
        yield server


def test_every_request_needs_the_token(guarded):
    client = Client(guarded.url)
    for path in ("/", "/api/runs", "/api/runs/offline-run", "/static/run.js",
                 "/api/runs/offline-run/events"):
        status, _, body = client.get(path)
        assert status == 401, path
        assert b"token" in body
    status, _, _ = client.get("/api/runs", headers={"Authorization": "Bearer wrong-token-xxxx"})
    assert status == 401
    assert client.get("/api/runs", headers={"Authorization": f"Bearer {TOKEN}"})[0] == 200


def test_a_page_opened_with_the_token_gets_a_cookie_and_a_clean_address(guarded):
    client = Client(guarded.url)
    status, headers, _ = client.get(f"/runs/offline-run?token={TOKEN}",
                                    headers={"Accept": "text/html"})
    assert status == 303 and headers["location"] == "/runs/offline-run"
    assert "HttpOnly" in headers["set-cookie"] and "SameSite=Strict" in headers["set-cookie"]
    assert client.get("/runs/offline-run")[0] == 200
    assert client.get("/api/runs")[0] == 200


def test_the_event_stream_checks_the_token_too(guarded):
    events = read_sse(guarded.url, "/api/runs/offline-run/events",
                      lambda got: any(name == "progress" for name, _ in got),
                      headers={"Authorization": f"Bearer {TOKEN}"})
    assert events[0][0] == "progress"


@pytest.fixture(scope="module")
def local(runs_root):
    with LiveServer([runs_root]) as server:
        yield server


def test_a_foreign_host_header_is_refused_on_loopback(local):
    status, _, body = Client(local.url).get("/api/runs", headers={"Host": "attacker.example"})
    assert status == 421 and b"not served here" in body


@pytest.mark.parametrize(("csrf", "headers", "expected"), [
    (False, {}, 403),
    (False, {"X-SRH-CSRF": "guess"}, 403),
    (True, {"Origin": "http://attacker.example"}, 403),
    (True, {}, 409),                          # accepted by security; the run is not interactive
], ids=["no-token", "wrong-token", "foreign-origin", "valid"])
def test_controls_need_the_csrf_token_and_a_same_origin(local, csrf, headers, expected):
    client = Client(local.url)
    client.get("/api/runs")
    status, _, body = client.post("/api/runs/offline-run/control", {"action": "pause"},
                                  csrf=csrf, headers=headers)
    assert status == expected, body


def test_controls_are_post_only(local):
    client = Client(local.url)
    assert client.get("/api/runs/offline-run/control")[0] == 405
    client.get("/api/runs")
    status, _, _ = client.request("PUT", "/api/runs/offline-run/control",
                                  headers={"X-SRH-CSRF": client.cookie("srh_csrf")})
    assert status == 405


def test_security_headers_on_pages_and_api(local):
    client = Client(local.url)
    for path in ("/", "/runs/offline-run", "/api/runs"):
        _, headers, _ = client.get(path)
        assert "script-src 'self'" in headers["content-security-policy"]
        assert headers["x-content-type-options"] == "nosniff"
        assert headers["x-frame-options"] == "DENY"


def test_pages_and_scripts_never_write_html():
    from srh_web.app import STATIC

    for script in STATIC.glob("*.js"):
        text = script.read_text()
        for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
            assert sink not in text, f"{script.name} uses {sink}"


def test_json_answers_escape_markup():
    from srh_web.app import dumps

    text = dumps({"result_str": "<script>alert(1)</script> & more"})
    assert "<" not in text and ">" not in text and "&" not in text
    assert json.loads(text)["result_str"] == "<script>alert(1)</script> & more"

"""``srh web``: the workbench command, added to ``srh`` through the ``srh.commands`` group.

Safe by default: it binds to 127.0.0.1; any other host needs a token
(``--token`` or ``SRH_WEB_TOKEN``), which every request must then carry.
Importing this module imports neither the web framework nor redis, so
``srh`` works without the ``web`` extra and says how to get it when asked.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import secrets
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from srh_web.errors import WebConfigurationError

TOKEN_ENV = "SRH_WEB_TOKEN"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765


@dataclass(frozen=True, slots=True)
class WebSettings:
    """A checked ``srh web`` setup.

    Attributes:
        host: Interface to bind.
        port: TCP port.
        runs: Directories searched for run and sweep directories.
        redis_url: The cluster's Redis, or None.
        token: Required on every request when set.
        workspaces: Folder of the authoring panels' workspaces (one per panel id).
        llm: ``PROVIDER:MODEL`` the panels use by default.
        base_url: OpenAI-compatible endpoint of the panels' model.
    """

    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    runs: tuple[str, ...] = ("runs",)
    redis_url: str | None = None
    token: str | None = None
    workspaces: str = "workspaces"
    llm: str = "offline"
    base_url: str | None = None

    def __post_init__(self) -> None:
        if not 0 <= self.port <= 65535:
            raise WebConfigurationError(f"--port must be in [0, 65535]. Got {self.port}.")
        if not is_loopback(self.host) and not self.token:
            raise WebConfigurationError(
                f"srh web on {self.host!r} would be reachable from other machines: give a "
                f"token with --token or {TOKEN_ENV} (e.g. {secrets.token_urlsafe(24)}), or "
                "bind to 127.0.0.1.")
        if self.token is not None and len(self.token) < 16:
            raise WebConfigurationError("The token must have at least 16 characters.")

    @property
    def allowed_hosts(self) -> tuple[str, ...]:
        """Host names accepted in the Host header: only the loopback's without a token."""
        if self.token:
            return ()
        return ("127.0.0.1", "localhost", "[::1]", "::1")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def register(subparsers: Any, backends: dict[str, Any]) -> None:
    """Add ``srh web`` (the ``srh.commands`` entry point of srh_web)."""
    web = subparsers.add_parser("web", help="the web workbench: watch and steer runs",
                                description=(
        "Serve the workbench: runs (from run directories and Redis) with their search tree, "
        "messages, tool results, Pareto front and controls; sweeps; the cluster; and the "
        "Prepare data / Build evaluator panels, conversations with the authoring agents."))
    web.add_argument("--host", default=DEFAULT_HOST, help="interface (default 127.0.0.1)")
    web.add_argument("--port", type=int, default=DEFAULT_PORT, help="port (default 8765)")
    web.add_argument("--runs", action="append", metavar="DIR",
                     help="directory of run and sweep directories (default: runs; repeatable)")
    web.add_argument("--redis", metavar="URL", help="also list the cluster's runs from Redis")
    web.add_argument("--token", help=f"access token (or {TOKEN_ENV}); required off loopback")
    web.add_argument("--workspaces", default="workspaces", metavar="DIR",
                     help="folder of the Prepare data / Build evaluator panels' workspaces, one "
                          "per panel id (default: workspaces)")
    web.add_argument("--llm", default="offline", metavar="PROVIDER:MODEL",
                     help="the panels' model (offline, the default, cannot author files)")
    web.add_argument("--base-url", help="OpenAI-compatible endpoint of the panels' model")
    web.set_defaults(handler=handle_web)


def settings_from_args(args: argparse.Namespace) -> WebSettings:
    token = args.token or os.environ.get(TOKEN_ENV) or None
    return WebSettings(host=args.host, port=args.port, runs=tuple(args.runs or ["runs"]),
                       redis_url=args.redis, token=token, workspaces=args.workspaces,
                       llm=args.llm, base_url=args.base_url)


def build(settings: WebSettings) -> Any:
    """The ASGI application of ``settings``.

    Raises:
        WebConfigurationError: The web extra is not installed.
    """
    try:
        from srh_web.app import create_app
    except ImportError as error:
        raise WebConfigurationError(f"srh web needs the web extra ({error.name} is missing): "
                                    "pip install 'srh[web]'.") from None
    from srh_web.catalog import Catalog
    from srh_web.panels import Panels, PanelSettings

    cluster = None
    if settings.redis_url:
        from srh_web.cluster import ClusterSource

        cluster = ClusterSource(settings.redis_url)
    catalog = Catalog([Path(root) for root in settings.runs], cluster)
    panels = Panels(PanelSettings(Path(settings.workspaces), settings.llm, settings.base_url))
    return create_app(catalog, token=settings.token, allowed_hosts=settings.allowed_hosts,
                      panels=panels)


def handle_web(args: argparse.Namespace) -> int:
    settings = settings_from_args(args)
    app = build(settings)
    import uvicorn

    shown = f"[{settings.host}]" if ":" in settings.host else settings.host
    print(f"srh web: serving http://{shown}:{settings.port}/ "
          f"(runs from {', '.join(settings.runs)}"
          f"{'; and Redis' if settings.redis_url else ''})", file=sys.stderr)
    uvicorn.run(app, host=settings.host, port=settings.port, log_level="warning",
                timeout_graceful_shutdown=2)
    return 0

"""The workbench as a Starlette application: pages, a JSON API, a live event stream, controls.

Pages are static HTML from the package; their scripts fetch the JSON API
and build the DOM with ``textContent`` only, so model and tool text is never
interpreted as HTML. JSON bodies escape ``<``, ``>`` and ``&`` as well.

API (all GET unless said):

    /api/runs                          every run (directories, then Redis)
    /api/runs/{key}                    progress, budget, usage, best, front, branches
    /api/runs/{key}/nodes?after=N      node summaries from index N on
    /api/runs/{key}/nodes/{node_id}    one node: messages, reply, tool calls and results
    /api/runs/{key}/events?after=SEQ   server-sent events: timeline events, progress
    POST /api/runs/{key}/control       {"action": ..., "message": ...} -> 202 (a cluster
                                       run applies it at once: a refusal is a 400)
    /api/sweeps, /api/sweeps/{key}?status=&solved=&q=, /api/sweeps/{key}/results.csv
    /api/sweeps/{key}/report           solve rates with CIs per variant, comparisons
    POST /api/sweeps/{key}/control     {"action": "pause"|"resume"|"stop"|"cancel"} -> 202
                                       (cluster sweeps; 409 when it does not apply)
    /api/cluster                       workers, queues and depths, runs in flight
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from srh_core.interactive import ControlCommand, InteractionError
from srh_core.types import json_value
from srh_web.catalog import Catalog
from srh_web.errors import RunNotFoundError, WebError
from srh_web.security import SecurityMiddleware

logger = logging.getLogger("srh.web")

STATIC = Path(__file__).parent / "static"
PAGES = {"runs": "runs.html", "run": "run.html", "sweeps": "sweeps.html",
         "sweep": "sweep.html", "cluster": "cluster.html"}
STREAM_POLL_SECONDS = 0.5
STREAM_MAX_SECONDS = 300.0  # the browser's EventSource reconnects with Last-Event-ID
KEEPALIVE_SECONDS = 15.0
MAX_BODY_BYTES = 64_000


class SafeJSON(JSONResponse):
    """Strict JSON with ``<``, ``>`` and ``&`` escaped (no text can ever read as markup)."""

    def render(self, content: Any) -> bytes:
        return dumps(content).encode("utf-8")


def dumps(content: Any) -> str:
    text = json.dumps(json_value(content), ensure_ascii=False, allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def create_app(catalog: Catalog, *, token: str | None = None,
               allowed_hosts: tuple[str, ...] = ()) -> SecurityMiddleware:
    """The ASGI application over ``catalog``, behind :class:`SecurityMiddleware`."""
    app = Starlette(routes=_routes(catalog), exception_handlers={
        RunNotFoundError: _not_found, InteractionError: _bad_request, WebError: _unavailable})
    return SecurityMiddleware(app, token=token, allowed_hosts=allowed_hosts)


def _routes(catalog: Catalog) -> list[Any]:
    def page(name: str) -> Callable[[Request], Response]:
        def endpoint(request: Request) -> Response:
            return FileResponse(STATIC / PAGES[name], media_type="text/html")
        return endpoint

    api = _Api(catalog)
    return [
        Route("/", page("runs")), Route("/runs/{key}", page("run")),
        Route("/sweeps", page("sweeps")), Route("/sweeps/{key}", page("sweep")),
        Route("/cluster", page("cluster")),
        Route("/favicon.ico", lambda request: Response(status_code=204)),
        Route("/api/runs", api.runs), Route("/api/runs/{key}", api.run),
        Route("/api/runs/{key}/nodes", api.nodes),
        Route("/api/runs/{key}/nodes/{node_id:path}", api.node),
        Route("/api/runs/{key}/events", api.events),
        Route("/api/runs/{key}/control", api.control, methods=["POST"]),
        Route("/api/sweeps", api.sweeps), Route("/api/sweeps/{key}", api.sweep),
        Route("/api/sweeps/{key}/results.csv", api.sweep_csv),
        Route("/api/sweeps/{key}/report", api.sweep_report),
        Route("/api/sweeps/{key}/control", api.sweep_control, methods=["POST"]),
        Route("/api/cluster", api.cluster),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]


class _Api:
    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog

    def runs(self, request: Request) -> Response:
        return SafeJSON({"runs": self.catalog.runs(),
                         "cluster": self.catalog.cluster is not None})

    def run(self, request: Request) -> Response:
        return SafeJSON(self.catalog.run(request.path_params["key"]).summary())

    def nodes(self, request: Request) -> Response:
        after = _int(request.query_params.get("after"), 0)
        return SafeJSON(self.catalog.run(request.path_params["key"]).nodes(after))

    def node(self, request: Request) -> Response:
        run = self.catalog.run(request.path_params["key"])
        node = run.node(request.path_params["node_id"])
        if node is None:
            return SafeJSON({"error": "No such node in this run."}, status_code=404)
        return SafeJSON(node)

    async def events(self, request: Request) -> Response:
        run = await run_in_threadpool(self.catalog.run, request.path_params["key"])
        after = _int(request.headers.get("last-event-id") or request.query_params.get("after"),
                     0)
        return StreamingResponse(_stream(request, run, after), media_type="text/event-stream",
                                 headers={"cache-control": "no-store",
                                          "x-accel-buffering": "no"})

    async def control(self, request: Request) -> Response:
        run = await run_in_threadpool(self.catalog.run, request.path_params["key"])
        body = await request.body()
        if len(body) > MAX_BODY_BYTES:
            return SafeJSON({"error": "The command is too large."}, status_code=413)
        try:
            data = json.loads(body or b"{}")
        except ValueError:
            return SafeJSON({"error": "The body must be JSON."}, status_code=400)
        command = ControlCommand.from_dict(data if isinstance(data, dict) else {})
        channel = await run_in_threadpool(run.channel)
        if channel is None:
            return SafeJSON({"error": "This run does not take commands: start it with "
                             "`srh run --interactive` (on the cluster: "
                             "`srh run --backend celery --interactive`)."}, status_code=409)
        control = await run_in_threadpool(run.control) or {}
        if not control.get("alive"):
            hint = ("it has finished" if run.source == "redis" else
                    "resume it with `srh resume --interactive` first")
            return SafeJSON({"error": f"The run is not running; {hint}."}, status_code=409)
        await run_in_threadpool(channel.send, command)  # a cluster run applies it at once
        return SafeJSON({"id": command.id, "action": command.action, "queued": True},
                        status_code=202)

    def sweeps(self, request: Request) -> Response:
        return SafeJSON({"sweeps": self.catalog.sweeps()})

    def sweep(self, request: Request) -> Response:
        sweep = self.catalog.sweep(request.path_params["key"])
        return SafeJSON(sweep.table(dict(request.query_params)))

    def sweep_csv(self, request: Request) -> Response:
        sweep = self.catalog.sweep(request.path_params["key"])
        filename = f"{sweep.name}-results.csv".replace('"', "")
        return Response(sweep.csv_text(dict(request.query_params)), media_type="text/csv",
                        headers={"content-disposition": f'attachment; filename="{filename}"'})

    def sweep_report(self, request: Request) -> Response:
        from srh_core.sweep.report import build_report

        sweep = self.catalog.sweep(request.path_params["key"])
        status, rows = sweep.report_rows()
        return SafeJSON(build_report(sweep.name, status, rows))

    async def sweep_control(self, request: Request) -> Response:
        from srh_core.errors import ConfigurationError

        sweep = await run_in_threadpool(self.catalog.sweep, request.path_params["key"])
        if not hasattr(sweep, "control"):
            return SafeJSON({"error": "This sweep runs in a shell (a sweep directory): stop it "
                             "there with Ctrl-C; only cluster sweeps take controls."},
                            status_code=409)
        body = await request.body()
        if len(body) > MAX_BODY_BYTES:
            return SafeJSON({"error": "The command is too large."}, status_code=413)
        try:
            data = json.loads(body or b"{}")
        except ValueError:
            return SafeJSON({"error": "The body must be JSON."}, status_code=400)
        action = data.get("action") if isinstance(data, dict) else None
        try:
            view = await run_in_threadpool(sweep.control, str(action))
        except ConfigurationError as error:  # (a ValueError too: first)
            return SafeJSON({"error": str(error)}, status_code=409)
        except ValueError as error:
            return SafeJSON({"error": str(error)}, status_code=400)
        return SafeJSON(view, status_code=202)

    def cluster(self, request: Request) -> Response:
        if self.catalog.cluster is None:
            return SafeJSON({"enabled": False})
        return SafeJSON({"enabled": True, **self.catalog.cluster.overview()})


async def _stream(request: Request, run: Any, after: int) -> AsyncIterator[str]:
    """Timeline events of an interactive run, and a ``progress`` event whenever the run changes.

    The events come from the run's channel: ``events.jsonl`` of a run
    directory, or the run's event stream in Redis for a cluster run.
    """
    cursor, signature = after, None
    started = last_sent = time.monotonic()
    channel = None
    yield "retry: 1000\n\n"
    while time.monotonic() - started < STREAM_MAX_SECONDS:
        if await request.is_disconnected():
            return
        if channel is None:  # a run directory's or a Redis run's, once the run has one
            channel = await run_in_threadpool(run.channel)
        if channel is not None:
            batch = await run_in_threadpool(channel.read_events, cursor)
            if batch["truncated"] or batch["cursor_reset"]:
                yield _sse("reset", {"discarded_through": batch["discarded_through"]})
            for event in batch["events"]:
                cursor = int(event["seq"])
                yield _sse("timeline", event, event_id=cursor)
                last_sent = time.monotonic()
        current = await run_in_threadpool(run.signature)
        if current != signature:
            signature = current
            yield _sse("progress", {"signature": list(current),
                                    "control": await run_in_threadpool(run.control)})
            last_sent = time.monotonic()
        if time.monotonic() - last_sent > KEEPALIVE_SECONDS:
            yield ": keepalive\n\n"
            last_sent = time.monotonic()
        await asyncio.sleep(STREAM_POLL_SECONDS)


def _sse(event: str, data: Any, event_id: int | None = None) -> str:
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: {event}\ndata: {dumps(data)}\n\n"


def _int(text: str | None, default: int) -> int:
    try:
        return max(0, int(text)) if text is not None else default
    except ValueError:
        return default


async def _not_found(request: Request, error: Exception) -> Response:
    return SafeJSON({"error": str(error)}, status_code=404)


async def _bad_request(request: Request, error: Exception) -> Response:
    return SafeJSON({"error": str(error)}, status_code=400)


async def _unavailable(request: Request, error: Exception) -> Response:
    return SafeJSON({"error": str(error)}, status_code=503)

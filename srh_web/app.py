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
    /api/panels                        the authoring panels' sessions
    /api/panels/{kind}/{id}            one panel (kind prepare|evaluator): status, last result,
                                       what was committed
    /api/panels/{kind}/{id}/events     server-sent events: the agent's events, progress
    POST /api/panels/{kind}/{id}/messages  {"message": ..., "llm"?, "data"?, "target"?} -> 202
                                       (409 while a turn is in flight; 400 typed refusals)
    POST /api/panels/{kind}/{id}/commit    validated data / a proved evaluator -> 200 (else 409)

Errors are ``{"error": one line, "type": the error's class}`` (a refused commit adds the
validation report).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from srh_core.cli import one_line
from srh_core.errors import ConfigurationError
from srh_core.interactive import ControlCommand, InteractionError
from srh_core.types import json_value
from srh_web.catalog import Catalog
from srh_web.errors import PanelNotFoundError, PanelStateError, RunNotFoundError, WebError
from srh_web.panels import Panels
from srh_web.security import SecurityMiddleware

logger = logging.getLogger("srh.web")

STATIC = Path(__file__).parent / "static"
PAGES = {"runs": "runs.html", "run": "run.html", "sweeps": "sweeps.html",
         "sweep": "sweep.html", "cluster": "cluster.html", "panel": "panel.html"}
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
               allowed_hosts: tuple[str, ...] = (),
               panels: Panels | None = None) -> SecurityMiddleware:
    """The ASGI application over ``catalog``, behind :class:`SecurityMiddleware`.

    Args:
        panels: The authoring panels (None: their API answers 404); the app's lifespan
            closes them at shutdown, and so must an owner that serves without lifespan.
    """
    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            if panels is not None:
                await run_in_threadpool(panels.close)

    app = Starlette(routes=_routes(catalog, panels), lifespan=lifespan, exception_handlers={
        RunNotFoundError: _not_found, InteractionError: _bad_request,
        PanelNotFoundError: _typed_not_found, PanelStateError: _conflict, WebError: _unavailable})
    return SecurityMiddleware(app, token=token, allowed_hosts=allowed_hosts)


def _routes(catalog: Catalog, panels: Panels | None = None) -> list[Any]:
    def page(name: str) -> Callable[[Request], Response]:
        def endpoint(request: Request) -> Response:
            return FileResponse(STATIC / PAGES[name], media_type="text/html")
        return endpoint

    api = _Api(catalog)
    panel_api = _PanelApi(panels)
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
        Route("/panels/{kind}/{panel}", page("panel")),
        Route("/api/panels", panel_api.list),
        Route("/api/panels/{kind}/{panel}", panel_api.view),
        Route("/api/panels/{kind}/{panel}/events", panel_api.events),
        Route("/api/panels/{kind}/{panel}/messages", panel_api.message, methods=["POST"]),
        Route("/api/panels/{kind}/{panel}/commit", panel_api.commit, methods=["POST"]),
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
        data = await _json_body(request, "command")
        if isinstance(data, Response):
            return data
        command = ControlCommand.from_dict(data)
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
        sweep = await run_in_threadpool(self.catalog.sweep, request.path_params["key"])
        if not hasattr(sweep, "control"):
            return SafeJSON({"error": "This sweep runs in a shell (a sweep directory): stop it "
                             "there with Ctrl-C; only cluster sweeps take controls."},
                            status_code=409)
        data = await _json_body(request, "command")
        if isinstance(data, Response):
            return data
        action = data.get("action")
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


class _PanelApi:
    """The authoring panels' endpoints (srh_web.panels)."""

    def __init__(self, panels: Panels | None) -> None:
        self.panels = panels

    def _panels(self) -> Panels:
        if self.panels is None:
            raise PanelNotFoundError("This workbench has no authoring panels (srh web serves "
                                     "them; an embedding application passes panels=).")
        return self.panels

    def _session(self, request: Request, *, create: bool) -> Any:
        return self._panels().session(request.path_params["kind"],
                                      request.path_params["panel"], create=create)

    def list(self, request: Request) -> Response:
        return SafeJSON({"panels": self._panels().list()})

    def view(self, request: Request) -> Response:
        return SafeJSON(self._panels().view(request.path_params["kind"],
                                            request.path_params["panel"]))

    async def events(self, request: Request) -> Response:
        session = await run_in_threadpool(self._session, request, create=True)
        after = _int(request.headers.get("last-event-id") or request.query_params.get("after"),
                     0)
        return StreamingResponse(_stream(request, session, after),
                                 media_type="text/event-stream",
                                 headers={"cache-control": "no-store", "x-accel-buffering": "no"})

    async def message(self, request: Request) -> Response:
        data = await _json_body(request, "message")
        if isinstance(data, Response):
            return data
        fields = {name: data.get(name) for name in ("llm", "data", "target")}
        if not all(value is None or isinstance(value, str) for value in fields.values()):
            return _error(ConfigurationError("llm, data and target must be text."), 400)
        session = await run_in_threadpool(self._session, request, create=True)
        try:
            view = await run_in_threadpool(lambda: session.send(data.get("message"), **fields))
        except ConfigurationError as error:  # the agents' refusals, the CLI's one line
            return _error(error, 400)
        return SafeJSON(view, status_code=202)

    async def commit(self, request: Request) -> Response:
        session = await run_in_threadpool(self._session, request, create=False)
        return SafeJSON(await run_in_threadpool(session.commit))


async def _json_body(request: Request, what: str) -> dict[str, Any] | Response:
    """The request's JSON object, or the error response (413, 400) to send instead."""
    body = await request.body()
    if len(body) > MAX_BODY_BYTES:
        return SafeJSON({"error": f"The {what} is too large."}, status_code=413)
    try:
        data = json.loads(body or b"{}")
    except ValueError:
        return SafeJSON({"error": "The body must be JSON."}, status_code=400)
    if not isinstance(data, dict):
        return SafeJSON({"error": "The body must be a JSON object."}, status_code=400)
    return data


def _error(error: Exception, status: int) -> Response:
    """A typed error: its one-line message (as ``srh`` prints it) and its class."""
    details = getattr(error, "details", None) or {}
    return SafeJSON({"error": one_line(error), "type": type(error).__name__, **details},
                    status_code=status)


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


async def _typed_not_found(request: Request, error: Exception) -> Response:
    return _error(error, 404)


async def _conflict(request: Request, error: Exception) -> Response:
    return _error(error, 409)


async def _unavailable(request: Request, error: Exception) -> Response:
    return SafeJSON({"error": str(error)}, status_code=503)

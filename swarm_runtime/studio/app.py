"""The studio's ASGI app: the page, its static files, and the JSON API under ``/api``.

Built with Starlette (the ``studio`` extra). An API handler's docstring is its entry in
``/api/openapi.json`` (:mod:`swarm_runtime.studio.openapi`). Every handler reads runs through
:class:`~swarm_runtime.studio.files.RunFiles` or the index, so an id that is not an id, a
path that leaves the runs dir, or a file that is not there is a 404 with a JSON message.
State-changing requests must come from the studio's own page (the ``Origin`` check of
:mod:`swarm_runtime.studio.guard`). ``GET /api/runs/{id}/stream`` sends the run's events
as server-sent events, each with ``id`` = its ``seq``, from ``Last-Event-ID`` on.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Awaitable, Callable
from functools import partial, wraps
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse as _StarletteJSON
from starlette.responses import Response
from starlette.routing import Route

from swarm_runtime.errors import RunControlError, SwarmError, SwarmUsageError
from swarm_runtime.record import Record
from swarm_runtime.studio.actions import MODES, RunActions
from swarm_runtime.studio.files import LIVE_STATUSES, NotFound, run_row
from swarm_runtime.studio.flows import FlowCatalog
from swarm_runtime.studio.guard import LOOPBACK_HOSTS, GuardMiddleware
from swarm_runtime.studio.index import RunIndex
from swarm_runtime.studio.openapi import openapi_document
from swarm_runtime.studio.request_input import BodyTooLarge, json_body, whole_number
from swarm_runtime.studio.sse import StreamLimits, StreamSlots, event_stream
from swarm_runtime.studio.tail import EventTail

Handler = Callable[[Request], Awaitable[Response]]


class _JSONResponse(_StarletteJSON):
    """JSON with non-ASCII escaped: a lone surrogate from a foreign run file still encodes."""

    def render(self, content: Any) -> bytes:
        return json.dumps(content, separators=(",", ":")).encode("ascii")


class StudioConfig(Record):
    """What one studio serves, and how."""

    runs_dir: Path
    flows_dir: Path | None = None
    golden_dir: Path | None = None
    allowed_hosts: tuple[str, ...] = LOOPBACK_HOSTS
    """The names and addresses the studio answers to, as a ``Host`` header gives them
    (an IPv6 address in brackets): see the guard."""
    streams: StreamLimits = StreamLimits()
    """How often event streams look for events, and what they may hold (see :mod:`.sse`)."""
    on_stream_dropped: Callable[[str], None] | None = None
    """Told the run id of each event stream dropped because its client took nothing."""


class _Studio:
    def __init__(self, config: StudioConfig) -> None:
        self.config = config
        self.index = RunIndex(config.runs_dir)
        self.files = self.index.files
        self.files.golden_dir = config.golden_dir  # golden:<name> opens as a run page
        self.flows = FlowCatalog(config.flows_dir, config.golden_dir)
        self.actions = RunActions(
            self.files.runs_dir, config.flows_dir, listeners=(self.index.heard,)
        )
        self.closing = threading.Event()
        """Set when the server shuts down: open streams end at once."""
        self.streams = StreamSlots(config.streams, config.on_stream_dropped)

    # -- runs --------------------------------------------------------------------------------

    async def runs(self, request: Request) -> Response:
        """Runs, newest first, paged, with the total.

        Each run: run_id, status, flows, steps, loops, tokens, cost_usd, created_at,
        completed_at, error.
        ---
        query:
          page: [integer, 1-based page]
          per_page: [integer, "rows per page (at most 500, default 50)"]
          status: [string, only runs with this status]
          flow: [string, only runs of this flow]
        """
        query = request.query_params
        result = await run_in_threadpool(
            partial(
                self.index.page,
                page=whole_number(query.get("page"), 1),
                per_page=whole_number(query.get("per_page"), 50),
                status=query.get("status") or None,
                flow=query.get("flow") or None,
            )
        )
        return _JSONResponse(result)

    async def facets(self, request: Request) -> Response:
        """The statuses and flows of the runs, for the list's filters."""
        return _JSONResponse(await run_in_threadpool(self.index.facets))

    async def start(self, request: Request) -> Response:
        """Start a run in this process: {flows: [...], backend, mode: stub|sdk|cli}.

        Needs an Origin header naming the studio (403 otherwise) and a JSON body.
        ---
        responses: {201: "{run_id}", 400: bad body}
        """
        body = await json_body(request)
        run_id = await run_in_threadpool(self.actions.start, body)
        return _JSONResponse({"run_id": run_id}, status_code=201)

    async def run(self, request: Request) -> Response:
        """A run's summary, flow totals and spec."""
        run_id = request.path_params["run_id"]
        return _JSONResponse(await run_in_threadpool(self._summary, run_id))

    def _summary(self, run_id: str) -> dict[str, Any]:
        run_dir = self.files.run_dir(run_id)
        read = self.files.meta_and_problem(run_dir)
        meta, row = read[0], run_row(self.files, run_id, read)
        spec = _optional(self.files.read_json, run_dir / "spec.json")
        return {
            **row,
            "flow_totals": meta.get("flow_totals"),
            "spec": spec,
            "live": row["status"] in LIVE_STATUSES,
        }

    async def events(self, request: Request) -> Response:
        """A run's events after since_seq.

        ---
        query: {since_seq: [integer, only events with a greater seq]}
        """
        run_id = request.path_params["run_id"]
        since = whole_number(request.query_params.get("since_seq"), 0)
        path = self.files.run_dir(run_id) / "events.jsonl"
        events = await run_in_threadpool(EventTail(path, since).read_all)
        return _JSONResponse({"run_id": run_id, "events": events})

    async def event_kinds(self, request: Request) -> Response:
        """Every event kind: what it is, where it may stand in the log, its payload fields.

        Its payload fields in order, the required ones, whether others may come: the
        timeline shows each event's fields in this order.
        """
        from swarm_runtime.documents.events import kind_table

        return _JSONResponse(await run_in_threadpool(kind_table))

    async def graph(self, request: Request) -> Response:
        """The graph of each flow of the run, each node with its last status and count."""
        run_id = request.path_params["run_id"]
        return _JSONResponse(await run_in_threadpool(self._graph, run_id))

    def _graph(self, run_id: str) -> dict[str, Any]:
        from swarm_runtime.studio.graph import run_graphs

        run_dir = self.files.run_dir(run_id)
        events = EventTail(run_dir / "events.jsonl").read_all()
        flows = run_row(self.files, run_id)["flows"] or _flows_of(events)
        return {"run_id": run_id, "flows": run_graphs(flows, events, self.flows.definition)}

    async def step(self, request: Request) -> Response:
        """A step's receipt, transcript, handoff and tool calls (latest execution, ?iteration=).

        Each tool call: tool, input, success (null while it runs), output, ms, started_at.
        ---
        query: {iteration: [integer, 0-based execution of the step]}
        """
        params = request.path_params
        iteration = request.query_params.get("iteration")
        result = await run_in_threadpool(
            self.files.step,
            params["run_id"],
            params["flow_key"],
            params["step_id"],
            None if iteration in (None, "") else whole_number(iteration, -1),
        )
        return _JSONResponse(result)

    async def control(self, request: Request) -> Response:
        """Pause, stop or resume a run (docs/run-control.md#pause-stop-and-resume).

        Needs an Origin header naming the studio (403 otherwise).
        ---
        responses: {200: "{message}", 409: the run is not in a state that allows it}
        """
        run_id, action = request.path_params["run_id"], request.path_params["action"]
        if action not in ("pause", "stop", "resume"):
            raise NotFound(f"no action {action!r} (pause, stop, resume)")
        await json_body(request, optional=True)
        if run_id.startswith("golden:"):
            raise RunControlError(
                f"{run_id} is a golden run: a record to compare runs against, never run, "
                "paused or resumed"
            )
        if action == "resume":
            message = await run_in_threadpool(self.actions.resume, run_id)
        else:
            message = await run_in_threadpool(self.actions.request, run_id, action)
        return _JSONResponse({"run_id": run_id, "action": action, "message": message})

    async def stream(self, request: Request) -> Response:
        """Server-sent events tailing events.jsonl; each event's id is its seq.

        Reconnect with Last-Event-ID (or ?since_seq=) to go on after that seq. An 'end'
        event closes the stream once the run is over.
        ---
        responses: {200: text/event-stream}
        """
        run_id = request.path_params["run_id"]
        run_dir = self.files.run_dir(run_id)
        if self.streams.full():
            return _JSONResponse(
                {
                    "error": f"{self.streams.limits.max_streams} event streams are open, the "
                    "most this studio serves; close a page or try again shortly"
                },
                status_code=503,
                headers={"Retry-After": "5"},
            )
        since = whole_number(
            request.headers.get("last-event-id") or request.query_params.get("since_seq"), 0
        )
        return event_stream(
            self.streams,
            run_id,
            EventTail(run_dir / "events.jsonl", since),
            live=partial(self._live, run_id),
            closing=self.closing.is_set,
            disconnected=request.is_disconnected,
        )

    def _live(self, run_id: str) -> bool:
        # A worker here may be resuming the run before it has written a line: its files
        # still say stopped, and a stream that ended on them would miss the whole rest.
        if self.actions.working_on(run_id):
            return True
        try:
            return run_row(self.files, run_id)["status"] in ("pending", "running")
        except NotFound:
            return False

    # -- flows, backends, compare ------------------------------------------------------------

    async def flows_list(self, request: Request) -> Response:
        """The flows of the flows dir in run order."""
        return _JSONResponse(await run_in_threadpool(self.flows.listing))

    async def flow_graph(self, request: Request) -> Response:
        """A flow's steps and edges."""
        key = request.path_params["flow_key"]
        return _JSONResponse(await run_in_threadpool(self.flows.graph, key))

    async def backends(self, request: Request) -> Response:
        """The backends and modes a run can be started with."""
        from swarm_runtime.service import known_backends

        return _JSONResponse(
            {"backends": known_backends(), "default": "claude-step-orchestrator", "modes": MODES}
        )

    async def compare(self, request: Request) -> Response:
        """Two runs compared as 'swarm golden diff' does: changed steps, a diff per file.

        ---
        query: {a: [string, "a run id or golden:<name>"], b: [string, "a run id or golden:<name>"]}
        """
        query = request.query_params
        result = await run_in_threadpool(
            self.flows.compare, self.files, query.get("a") or "", query.get("b") or ""
        )
        return _JSONResponse(result)

    async def goldens(self, request: Request) -> Response:
        """The golden runs of the golden dir."""
        return _JSONResponse({"goldens": await run_in_threadpool(self.flows.golden_names)})

    async def openapi(self, request: Request) -> Response:
        """The OpenAPI document of this API."""
        return _JSONResponse(openapi_document(request.app.routes))

    # -- the page ----------------------------------------------------------------------------

    async def page(self, request: Request) -> Response:
        return _static("index.html")

    async def asset(self, request: Request) -> Response:
        return _static(request.path_params["name"])


def _static(name: str) -> Response:
    from swarm_runtime.studio.assets import asset

    found = asset(name)
    if found is None:
        raise NotFound(f"no file {name!r}")
    body, media_type = found
    return Response(body, media_type=media_type, headers={"Cache-Control": "no-cache"})


def _guarded(handler: Handler) -> Handler:
    @wraps(handler)  # its docstring describes it in the OpenAPI document
    async def call(request: Request) -> Response:
        try:
            return await handler(request)
        except NotFound as exc:
            return _JSONResponse({"error": str(exc)}, status_code=404)
        except RunControlError as exc:
            return _JSONResponse({"error": str(exc)}, status_code=409)
        except BodyTooLarge as exc:
            return _JSONResponse({"error": str(exc)}, status_code=413)
        except SwarmUsageError as exc:
            return _JSONResponse({"error": str(exc)}, status_code=400)
        except SwarmError as exc:
            return _JSONResponse({"error": str(exc)}, status_code=500)

    return call


def create_app(config: StudioConfig) -> Starlette:
    """The studio for ``config``: call ``app.state.studio.actions.shutdown()`` when done."""
    studio = _Studio(config)
    table: list[tuple[str, Handler, list[str]]] = [
        ("/", studio.page, ["GET"]),
        ("/static/{name}", studio.asset, ["GET"]),
        ("/api/openapi.json", studio.openapi, ["GET"]),
        ("/api/runs", studio.runs, ["GET"]),
        ("/api/runs", studio.start, ["POST"]),
        ("/api/facets", studio.facets, ["GET"]),
        ("/api/runs/{run_id}", studio.run, ["GET"]),
        ("/api/runs/{run_id}/events", studio.events, ["GET"]),
        ("/api/event-kinds", studio.event_kinds, ["GET"]),
        ("/api/runs/{run_id}/stream", studio.stream, ["GET"]),
        ("/api/runs/{run_id}/graph", studio.graph, ["GET"]),
        ("/api/runs/{run_id}/flows/{flow_key}/steps/{step_id}", studio.step, ["GET"]),
        ("/api/runs/{run_id}/{action}", studio.control, ["POST"]),
        ("/api/flows", studio.flows_list, ["GET"]),
        ("/api/flows/{flow_key}/graph", studio.flow_graph, ["GET"]),
        ("/api/backends", studio.backends, ["GET"]),
        ("/api/goldens", studio.goldens, ["GET"]),
        ("/api/compare", studio.compare, ["GET"]),
    ]
    routes = [
        Route(path, _guarded(h), methods=methods, include_in_schema=path.startswith("/api/"))
        for path, h, methods in table
    ]
    app = Starlette(
        routes=routes,
        exception_handlers={404: _not_found, 405: _not_allowed},
        middleware=[  # the first wraps the rest
            Middleware(GuardMiddleware),
            Middleware(
                TrustedHostMiddleware, allowed_hosts=config.allowed_hosts, www_redirect=False
            ),
        ],
    )
    app.state.studio = studio
    return app


async def _not_found(request: Request, exc: Exception) -> Response:
    return _JSONResponse({"error": f"no such page or API: {request.url.path}"}, status_code=404)


async def _not_allowed(request: Request, exc: Exception) -> Response:
    return _JSONResponse(
        {"error": f"{request.method} is not allowed on {request.url.path}"}, status_code=405
    )


def _optional(read: Callable[[Path], Any], path: Path) -> Any:
    try:
        return read(path)
    except NotFound:
        return None


def _flows_of(events: list[dict[str, Any]]) -> list[str]:
    flows: list[str] = []
    for event in events:
        key = event.get("flow_key")
        if isinstance(key, str) and key not in flows:
            flows.append(key)
    return flows

"""The OpenAPI description of the studio's JSON API (``GET /api/openapi.json``).

Written out here rather than generated, so it says what each answer holds; a test keeps
its paths and methods equal to the app's routes.
"""

from __future__ import annotations

from typing import Any

_RUN_ID = {
    "name": "run_id",
    "in": "path",
    "required": True,
    "schema": {"type": "string", "pattern": "^run-[0-9]{8}-[0-9]{6}-[a-z0-9]{6}$"},
}
_ERROR = {"description": "not found: a bad id, a path outside the runs dir, no such file"}


def _get(summary: str, *params: dict[str, Any]) -> dict[str, Any]:
    return {
        "get": {
            "summary": summary,
            "parameters": list(params),
            "responses": {"200": {"description": "JSON"}, "404": _ERROR},
        }
    }


def _query(name: str, kind: str, text: str) -> dict[str, Any]:
    return {
        "name": name,
        "in": "query",
        "required": False,
        "schema": {"type": kind},
        "description": text,
    }


def _path(name: str, pattern: str) -> dict[str, Any]:
    return {
        "name": name,
        "in": "path",
        "required": True,
        "schema": {"type": "string", "pattern": pattern},
    }


_STATE_CHANGE = (
    "Needs an Origin header naming the studio (403 otherwise) and a JSON body "
    "(Content-Type: application/json)."
)

API_PATHS: dict[str, dict[str, Any]] = {
    "/api/runs": {
        **_get(
            "Runs, newest first, paged: run_id, status, flows, steps, loops, tokens, cost_usd, "
            "created_at, completed_at, error; with the total",
            _query("page", "integer", "1-based page"),
            _query("per_page", "integer", "rows per page (at most 500, default 50)"),
            _query("status", "string", "only runs with this status"),
            _query("flow", "string", "only runs of this flow"),
        ),
        "post": {
            "summary": "Start a run in this process: {flows: [...], backend, mode: stub|sdk|cli}",
            "description": _STATE_CHANGE,
            "responses": {"201": {"description": "{run_id}"}, "400": {"description": "bad body"}},
        },
    },
    "/api/facets": _get("The statuses and flows of the runs, for the list's filters"),
    "/api/runs/{run_id}": _get("A run's summary, flow totals and spec", _RUN_ID),
    "/api/runs/{run_id}/events": _get(
        "A run's events after since_seq",
        _RUN_ID,
        _query("since_seq", "integer", "only events with a greater seq"),
    ),
    "/api/runs/{run_id}/stream": {
        "get": {
            "summary": "Server-sent events tailing events.jsonl; each event's id is its seq",
            "description": "Reconnect with Last-Event-ID (or ?since_seq=) to go on after that "
            "seq. An 'end' event closes the stream once the run is over.",
            "parameters": [_RUN_ID],
            "responses": {"200": {"description": "text/event-stream"}, "404": _ERROR},
        }
    },
    "/api/runs/{run_id}/graph": _get(
        "The graph of each flow of the run, each node with its last status and count", _RUN_ID
    ),
    "/api/runs/{run_id}/flows/{flow_key}/steps/{step_id}": _get(
        "A step's receipt, transcript and handoff (the latest execution, or ?iteration=)",
        _RUN_ID,
        _path("flow_key", "^[a-z][a-z0-9_-]*$"),
        _path("step_id", "^[a-z][a-z0-9_]*$"),
        _query("iteration", "integer", "0-based execution of the step"),
    ),
    "/api/runs/{run_id}/{action}": {
        "post": {
            "summary": "Pause, stop or resume a run (SPEC §8)",
            "description": _STATE_CHANGE,
            "parameters": [_RUN_ID, _path("action", "^(pause|stop|resume)$")],
            "responses": {
                "200": {"description": "{message}"},
                "404": _ERROR,
                "409": {"description": "the run is not in a state that allows it"},
            },
        }
    },
    "/api/event-kinds": _get(
        "Every event kind: what it is, where it may stand in the log, its payload fields in"
        " order, the required ones, whether others may come (the timeline shows each event's"
        " fields in this order)"
    ),
    "/api/flows": _get("The flows of the flows dir in run order"),
    "/api/flows/{flow_key}/graph": _get(
        "A flow's steps and edges", _path("flow_key", "^[a-z][a-z0-9_-]*$")
    ),
    "/api/backends": _get("The backends and modes a run can be started with"),
    "/api/goldens": _get("The golden runs of the golden dir"),
    "/api/compare": _get(
        "Two runs compared as 'swarm golden diff' does: changed steps and a diff per file",
        _query("a", "string", "a run id or golden:<name>"),
        _query("b", "string", "a run id or golden:<name>"),
    ),
    "/api/openapi.json": _get("This document"),
}


def openapi_document() -> dict[str, Any]:
    """The OpenAPI 3.1 document of the API."""
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "swarm studio",
            "version": "1",
            "description": "Runs, their events, steps and graphs, read from one runs dir.",
        },
        "paths": API_PATHS,
    }

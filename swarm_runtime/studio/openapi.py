"""The OpenAPI description of the studio's JSON API (``GET /api/openapi.json``), from its routes.

Starlette's ``SchemaGenerator`` walks the app's routes, so every API route is in the
document and nothing else is. Each handler's docstring describes its operation: the first
line is the summary, the paragraph after it the description, and YAML after a ``---``
line the rest (query parameters, responses). A path's parameters and the usual answers
(200 JSON, 404) are added here from the path itself.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from typing import Any

import yaml
from starlette.routing import BaseRoute
from starlette.schemas import SchemaGenerator

_PATH_PARAMETERS = {
    "run_id": "^run-[0-9]{8}-[0-9]{6}-[a-z0-9]{6}$",
    "flow_key": "^[a-z][a-z0-9_-]*$",
    "step_id": "^[a-z][a-z0-9_]*$",
    "action": "^(pause|stop|resume)$",
}
_BASE: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {
        "title": "swarm studio",
        "version": "1",
        "description": "Runs, their events, steps and graphs, read from one runs dir.",
    },
    "components": {
        "parameters": {
            name: {
                "name": name,
                "in": "path",
                "required": True,
                "schema": {"type": "string", "pattern": pattern},
            }
            for name, pattern in _PATH_PARAMETERS.items()
        },
        "responses": {
            "NotFound": {
                "description": "not found: a bad id, a path outside the runs dir, no such file"
            }
        },
    },
}
_NOT_FOUND = {"$ref": "#/components/responses/NotFound"}


class _Generator(SchemaGenerator):
    def parse_docstring(self, func_or_method: Callable[..., Any]) -> dict[str, Any]:
        """A handler's operation from its docstring: summary, description, then ``---``.

        After ``---``, YAML: ``query`` maps each query parameter to ``[type, meaning]``,
        ``responses`` each status to its meaning (the default: 200, JSON).
        """
        text, _, spec = (inspect.getdoc(func_or_method) or "").partition("\n---\n")
        summary, _, description = text.partition("\n\n")
        extra = yaml.safe_load(spec) if spec else {}
        operation: dict[str, Any] = {"summary": " ".join(summary.split()).rstrip(".")}
        if description.strip():
            operation["description"] = " ".join(description.split())
        operation["parameters"] = [
            {
                "name": name,
                "in": "query",
                "required": False,
                "schema": {"type": kind},
                "description": meaning,
            }
            for name, (kind, meaning) in (extra.get("query") or {}).items()
        ]
        responses = extra.get("responses") or {200: "JSON"}
        operation["responses"] = {
            str(code): {"description": meaning} for code, meaning in responses.items()
        }
        return operation


_GENERATOR = _Generator(_BASE)


def openapi_document(routes: list[BaseRoute]) -> dict[str, Any]:
    """The OpenAPI 3.1 document of the API served by ``routes``.

    Each path parameter is a component (its pattern); an operation on a path with one, and
    every GET, may answer 404.
    """
    document = _GENERATOR.get_schema(routes)
    for path, item in document["paths"].items():
        names = re.findall(r"\{(\w+)\}", path)
        own = [{"$ref": f"#/components/parameters/{name}"} for name in names]
        for method, operation in item.items():
            operation["parameters"] = own + operation["parameters"]
            if names or method == "get":
                operation["responses"].setdefault("404", _NOT_FOUND)
    return document

"""The request parameters of a run: checked where they enter, whatever the way in.

``swarm run --param``, ``POST /api/runs``, ``flow_runner(**params)`` and the run service
all plan a run through :func:`~swarm_runtime.orchestrator.plan.plan_run`, which checks the
params here: a mapping of names to JSON values, strict JSON (no NaN or infinity), nested
at most :data:`~swarm_runtime.inputs.MAX_DEPTH` deep, and at most :data:`MAX_PARAMS_BYTES`
in all, since they are written to ``spec.json`` and sent with every step's prompt. A
credential's value in one is refused too, naming the param. Each refusal is a usage
error, before anything is written.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from swarm_runtime.credentials import Credentials
from swarm_runtime.errors import SwarmUsageError
from swarm_runtime.inputs.json_input import check_json_depth
from swarm_runtime.inputs.limits import MAX_DEPTH, InputRefused

MAX_PARAMS_BYTES = 256 * 1024
"""The most a run's params may hold, as JSON: they go into every prompt of the run."""


def check_params(params: Any, credentials: Credentials | None = None) -> None:
    """Raise SwarmUsageError naming the param when ``params`` cannot be given to a run."""
    if not isinstance(params, Mapping):
        raise SwarmUsageError(f"params must map names to values, got {type(params).__name__}")
    size = 0
    for key, value in params.items():
        if not isinstance(key, str) or not key.strip() or len(key) > 200:
            raise SwarmUsageError(
                f"param name {key!r} must be non-empty text of 200 characters or fewer"
            )
        try:
            text = json.dumps(value, allow_nan=False, ensure_ascii=False)
            check_json_depth(text, MAX_DEPTH)
        except (TypeError, ValueError, RecursionError) as exc:
            why = exc if isinstance(exc, InputRefused) else "it is not a JSON value"
            raise SwarmUsageError(
                f"param {key!r}: {why} (give text, numbers, true/false, lists or mappings; "
                "no NaN or infinity)"
            ) from None
        size += len(key.encode("utf-8")) + len(text.encode("utf-8"))
        found = credentials.found_in(text) if credentials else None
        if found is not None:
            raise SwarmUsageError(
                f"param {key!r} holds the value of {found[0]} ({found[1]}); it would be "
                "written into spec.json and every prompt - keep secrets out of params"
            )
    if size > MAX_PARAMS_BYTES:
        raise SwarmUsageError(
            f"the params are {size} bytes; at most {MAX_PARAMS_BYTES} are given to a run (they "
            "go into every prompt): pass a path to a file the flow reads instead"
        )

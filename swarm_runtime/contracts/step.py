"""JSON Schema of the engine-facing types StepContext and StepResult.

They are :class:`~swarm_runtime.record.Record` classes (msgspec structs) in
:mod:`swarm_runtime.engines.base`; msgspec gives their schema as it gives every run
document's, paths as strings.

See docs/engines.md#the-engine-contract.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from swarm_runtime.documents.base import json_schema
from swarm_runtime.engines.base import StepContext, StepResult


def _paths(kind: type) -> dict[str, Any]:
    """A path is written as a string; msgspec has no schema of its own for one."""
    if issubclass(kind, Path):
        return {"type": "string", "format": "path"}
    raise NotImplementedError(kind)


def _closed(schema: dict[str, Any]) -> dict[str, Any]:
    """Each object closed: a record is built from its fields and no others."""
    for part in (schema, *schema.get("$defs", {}).values()):
        if "properties" in part:
            part["additionalProperties"] = False
    return schema


def step_result_schema() -> dict[str, Any]:
    """JSON Schema of StepResult."""
    return _closed(json_schema(StepResult))


def step_context_schema() -> dict[str, Any]:
    """JSON Schema of StepContext (paths as strings)."""
    return _closed(json_schema(StepContext, schema_hook=_paths))

"""JSON Schema of the engine-facing types StepContext and StepResult (SPEC §3.4).

They are frozen dataclasses in :mod:`swarm_runtime.engines.base` so the run path does not
pay for pydantic; pydantic reads them as they are to export their schema and validate.
"""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter

from swarm_runtime.engines.base import StepContext, StepResult

__all__ = ["step_context_schema", "step_result_adapter", "step_result_schema"]


def step_result_adapter() -> TypeAdapter[StepResult]:
    """A validator for StepResult (unknown fields are errors)."""
    return TypeAdapter(StepResult)


def step_result_schema() -> dict[str, Any]:
    """JSON Schema of StepResult."""
    return step_result_adapter().json_schema()


def step_context_schema() -> dict[str, Any]:
    """JSON Schema of StepContext (the prompt and paths as strings)."""
    return TypeAdapter(StepContext).json_schema()

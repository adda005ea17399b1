"""The contracts of SPEC §3 as pydantic v2 models.

Importing this package imports pydantic; the run path never does. The files a run writes
are checked against these models by ``swarm runs validate`` and by the test suite.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from swarm_runtime.contracts.envelope import StepInput, StepOutput
from swarm_runtime.contracts.events import Event
from swarm_runtime.contracts.plan import ExecutionPlan
from swarm_runtime.contracts.receipt import Receipt
from swarm_runtime.contracts.run import RunSpecDocument, RunSummary
from swarm_runtime.contracts.transcript import TranscriptLine

SCHEMAS = (
    "receipt",
    "transcript",
    "event",
    "step_context",
    "step_result",
    "run_spec",
    "run_summary",
    "step_input",
    "step_output",
    "execution_plan",
)


def json_schema(name: str) -> dict[str, Any]:
    """The JSON Schema of a contract by name (see ``SCHEMAS``); KeyError if unknown."""
    from pydantic import TypeAdapter

    from swarm_runtime.contracts.step import step_context_schema, step_result_schema

    builders: dict[str, Callable[[], dict[str, Any]]] = {
        "receipt": lambda: Receipt.model_json_schema(),
        "transcript": lambda: TypeAdapter(TranscriptLine).json_schema(),
        "event": lambda: TypeAdapter(Event).json_schema(),
        "step_context": step_context_schema,
        "step_result": step_result_schema,
        "run_spec": lambda: RunSpecDocument.model_json_schema(),
        "run_summary": lambda: RunSummary.model_json_schema(),
        "step_input": lambda: StepInput.model_json_schema(by_alias=True),
        "step_output": lambda: StepOutput.model_json_schema(by_alias=True),
        "execution_plan": lambda: ExecutionPlan.model_json_schema(),
    }
    if name not in builders:
        raise KeyError(name)
    return builders[name]()

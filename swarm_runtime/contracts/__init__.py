"""The contracts (docs/contract/index.md), checked: ``swarm runs validate`` and the schemas.

The run documents (events, receipts, ``spec.json``, ``meta.json``) are declared once in
:mod:`swarm_runtime.documents`; the envelopes, transcript lines and execution plans are
pydantic v2 models here. Importing this package imports pydantic; the run path never does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from swarm_runtime.contracts.envelope import StepInput, StepOutput
from swarm_runtime.contracts.plan import ExecutionPlan
from swarm_runtime.contracts.transcript import TranscriptLine
from swarm_runtime.documents.base import json_schema as document_schema
from swarm_runtime.documents.events import events_schema
from swarm_runtime.documents.receipt import Receipt
from swarm_runtime.documents.run import RunSpecDocument, RunSummary

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
        "receipt": lambda: document_schema(Receipt),
        "transcript": lambda: TypeAdapter(TranscriptLine).json_schema(),
        "event": events_schema,
        "step_context": step_context_schema,
        "step_result": step_result_schema,
        "run_spec": lambda: document_schema(RunSpecDocument),
        "run_summary": lambda: document_schema(RunSummary),
        "step_input": lambda: StepInput.model_json_schema(by_alias=True),
        "step_output": lambda: StepOutput.model_json_schema(by_alias=True),
        "execution_plan": lambda: ExecutionPlan.model_json_schema(),
    }
    if name not in builders:
        raise KeyError(name)
    return builders[name]()

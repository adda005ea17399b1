"""A step execution's receipt (SPEC §3.1): built here, from the engine's answer, only here."""

from __future__ import annotations

from datetime import datetime

from swarm_runtime.documents import SCHEMA_VERSION, CostDoc, ReceiptDoc
from swarm_runtime.engines.base import StepEngine, StepOutcome
from swarm_runtime.flow.spec import FlowSpec, StepSpec
from swarm_runtime.orchestrator.history import RenderedHistory
from swarm_runtime.record import Record
from swarm_runtime.timeutil import format_ts, ms_between

__all__ = ["Call", "build_receipt"]


class Call(Record):
    """The engine's answer for one step execution, after its retries."""

    outcome: StepOutcome
    error: str | None
    """Why the call failed outside the step contract (an engine that raised)."""
    attempt: int
    max_attempts: int


def build_receipt(
    run_id: str,
    flow: FlowSpec,
    step: StepSpec,
    engine: StepEngine,
    call: Call,
    iteration: int,
    rendered: RenderedHistory,
    span: tuple[datetime, datetime],
) -> ReceiptDoc:
    """The receipt of the execution (SPEC §3.1), before its routing and verdict."""
    outcome = call.outcome
    started, completed = span
    receipt: ReceiptDoc = {
        "schema_version": SCHEMA_VERSION,
        "engine": engine.engine_id,
        "mode": outcome.mode,
        "provider": outcome.provider,
        "model": outcome.model,
        "step_id": step.id,
        "flow_key": flow.key,
        "run_id": run_id,
        "agent_key": step.primary_agent,
        "started_at": format_ts(started),
        "completed_at": format_ts(completed),
        "duration_ms": ms_between(started, completed),
        "status": "succeeded",
        "tokens": outcome.tokens.as_dict(),  # type: ignore[typeddict-item]
        "transcript_path": f"llm/{step.id}-{step.primary_agent}-{engine.engine_short}.jsonl",
        "iteration": iteration,
        "result_code": outcome.result_code,
        "attempt": call.attempt,
        "max_attempts": call.max_attempts,
    }
    if outcome.handoff is not None:
        receipt["handoff"] = outcome.handoff
    if rendered.truncation:
        receipt["context_truncation"] = rendered.truncation
    if outcome.provider != "none":  # a provider was called: say what it cost, if known
        receipt["cost"] = _cost(outcome)
    if outcome.cassette is not None:
        receipt["cassette"] = outcome.cassette
    return receipt


def _cost(outcome: StepOutcome) -> CostDoc:
    tokens = outcome.tokens
    return {
        "model": outcome.model,
        "provider": outcome.provider,
        "tokens": {"input": tokens.prompt, "output": tokens.completion, "total": tokens.total},
        "estimatedCostUsd": outcome.cost_usd,
    }

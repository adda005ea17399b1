"""A step execution's receipt (SPEC §3.1): built here, and only here.

The engine's answer is first put as an A3 StepOutput (SPEC §7.1); the receipt takes its
result code, timing, cost and artifacts from that envelope.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from swarm_runtime.engines.base import StepEngine, StepOutcome
from swarm_runtime.flow.spec import FlowSpec, StepSpec
from swarm_runtime.orchestrator.history import RenderedHistory
from swarm_runtime.record import Record
from swarm_runtime.timeutil import format_ts, ms_between
from swarm_runtime.versions import SCHEMA_VERSION

if TYPE_CHECKING:
    from swarm_runtime.documents import ReceiptDoc

__all__ = ["Call", "build_receipt", "step_timing"]


class Call(Record):
    """The engine's answer for one step execution, after its retries."""

    outcome: StepOutcome
    error: str | None
    """Why the call failed outside the step contract (an engine that raised)."""
    attempt: int
    max_attempts: int
    llm_ms: int = 0
    """Time spent inside the engine's calls, all attempts together."""
    waited_ms: int = 0
    """Time spent waiting between attempts."""


def step_timing(span: tuple[datetime, datetime], call: Call) -> dict[str, Any]:
    """The ``timing`` of an execution (SPEC §7.2).

    ``ioMs`` is the rest of its time (files, events, prompt), retry waits left out.
    """
    started, completed = span
    duration = ms_between(started, completed)
    tools = min(call.outcome.tool_call_ms, call.llm_ms)
    return {
        "startedAt": format_ts(started),
        "completedAt": format_ts(completed),
        "durationMs": duration,
        "llmWaitMs": call.llm_ms - tools,
        "toolCallMs": tools,
        "ioMs": max(0, duration - call.llm_ms - call.waited_ms),
    }


def build_receipt(
    run_id: str,
    flow: FlowSpec,
    step: StepSpec,
    engine: StepEngine,
    call: Call,
    iteration: int,
    rendered: RenderedHistory,
    envelope: dict[str, Any],
) -> ReceiptDoc:
    """The receipt of the execution (SPEC §3.1) from its StepOutput, before its verdict."""
    outcome = call.outcome
    timing = envelope["timing"]
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
        "started_at": timing["startedAt"],
        "completed_at": timing["completedAt"],
        "duration_ms": timing["durationMs"],
        "status": "succeeded",
        "tokens": outcome.tokens.as_dict(),  # type: ignore[typeddict-item]
        "transcript_path": f"llm/{step.id}-{step.primary_agent}-{engine.engine_short}.jsonl",
        "iteration": iteration,
        "result_code": envelope["resultCode"],
        "attempt": call.attempt,
        "max_attempts": call.max_attempts,
        "timing": timing,
    }
    if outcome.handoff is not None:
        receipt["handoff"] = outcome.handoff
    if rendered.truncation:
        receipt["context_truncation"] = rendered.truncation
    if envelope["cost"] is not None:  # a provider was called: what it cost, if known
        receipt["cost"] = envelope["cost"]
    if envelope["artifacts"]:
        receipt["artifacts"] = envelope["artifacts"]
    if outcome.cassette is not None:
        receipt["cassette"] = outcome.cassette
    if step.tools is not None:
        receipt["tools_allowed"] = list(step.tools)
    return receipt

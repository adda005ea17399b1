"""A step execution's receipt (SPEC §3.1): built here, and only here.

Every receipt, of a flow step or of a plan cycle's step, starts as :func:`base_receipt`
from a :class:`ReceiptHead` and takes its verdict through :func:`settle`. A flow step's
engine answer is first put as an A3 StepOutput (SPEC §7.1); its receipt takes the result
code, timing, cost and artifacts from that envelope (:func:`build_receipt`).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from swarm_runtime.engines.base import StepEngine, StepOutcome, TokenUsage
from swarm_runtime.flow.spec import FlowSpec, StepSpec
from swarm_runtime.orchestrator.history import RenderedHistory
from swarm_runtime.record import Record
from swarm_runtime.timeutil import format_ts, ms_between
from swarm_runtime.versions import SCHEMA_VERSION

if TYPE_CHECKING:
    from swarm_runtime.documents import ReceiptDoc


class Call(Record):
    """The engine's answer for one step execution, after its retries."""

    outcome: StepOutcome
    error: str | None
    """Why the call failed outside the step contract (an engine that raised, a
    ``retry-after`` too long to wait for)."""
    attempt: int
    max_attempts: int
    llm_ms: int = 0
    """Time spent inside the engine's calls, all attempts together."""
    waited_ms: int = 0
    """Time spent waiting between attempts."""
    earlier_tokens: TokenUsage = TokenUsage()
    """Tokens of the attempts before the last (a ``retryable`` answer may report some)."""
    earlier_cost_usd: float = 0.0
    """The known cost of the attempts before the last."""

    @property
    def tokens(self) -> TokenUsage:
        """Tokens of every attempt of the execution (its budgets and totals count them all)."""
        last, earlier = self.outcome.tokens, self.earlier_tokens
        if not earlier.total:
            return last
        return TokenUsage(last.prompt + earlier.prompt, last.completion + earlier.completion)

    @property
    def cost_usd(self) -> float | None:
        """Cost of every attempt; None when the last one's is unknown."""
        cost = self.outcome.cost_usd
        return cost if cost is None or not self.earlier_cost_usd else cost + self.earlier_cost_usd


class ReceiptHead(Record):
    """What every receipt says of its execution, whatever kind of step ran."""

    run_id: str
    flow_key: str
    step_id: str
    agent_key: str
    engine: str
    engine_short: str
    mode: str
    provider: str
    model: str
    tokens: TokenUsage
    started_at: str
    completed_at: str
    duration_ms: int
    iteration: int
    result_code: str
    attempt: int
    max_attempts: int


def base_receipt(head: ReceiptHead) -> ReceiptDoc:
    """The fields every receipt has, status ``succeeded`` until :func:`settle` says otherwise."""
    return {
        "schema_version": SCHEMA_VERSION,
        "engine": head.engine,
        "mode": head.mode,
        "provider": head.provider,
        "model": head.model,
        "step_id": head.step_id,
        "flow_key": head.flow_key,
        "run_id": head.run_id,
        "agent_key": head.agent_key,
        "started_at": head.started_at,
        "completed_at": head.completed_at,
        "duration_ms": head.duration_ms,
        "status": "succeeded",
        "tokens": head.tokens.as_dict(),  # type: ignore[typeddict-item]
        "transcript_path": f"llm/{head.step_id}-{head.agent_key}-{head.engine_short}.jsonl",
        "iteration": head.iteration,
        "result_code": head.result_code,
        "attempt": head.attempt,
        "max_attempts": head.max_attempts,
    }


def settle(receipt: ReceiptDoc, *, error: str | None, routing: Any = None) -> None:
    """The verdict on an execution, into its receipt: the route it took, or why it failed."""
    if routing is not None:
        receipt["routing"] = routing
    if error is not None:
        receipt["status"] = "failed"
        receipt["error"] = error


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
    receipt = base_receipt(
        ReceiptHead(
            run_id=run_id,
            flow_key=flow.key,
            step_id=step.id,
            agent_key=step.primary_agent,
            engine=engine.engine_id,
            engine_short=engine.engine_short,
            mode=outcome.mode,
            provider=outcome.provider,
            model=outcome.model,
            tokens=outcome.tokens,
            started_at=timing["startedAt"],
            completed_at=timing["completedAt"],
            duration_ms=timing["durationMs"],
            iteration=iteration,
            result_code=envelope["resultCode"],
            attempt=call.attempt,
            max_attempts=call.max_attempts,
        )
    )
    receipt["timing"] = timing
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
    if outcome.request_sha256 is not None:
        receipt["request_sha256"] = outcome.request_sha256
    if step.tools is not None:
        receipt["tools_allowed"] = list(step.tools)
    return receipt

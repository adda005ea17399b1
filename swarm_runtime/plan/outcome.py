"""What a finished plan step leaves for its receipt and transcript (:class:`StepRecord`).

A step whose handler called a model is recorded as that call: the engine, mode, model,
tokens, cost and the call's transcript lines. Any other step is recorded as ``local``:
its payload as the user line and its result as the assistant line, so a reader sees what
went in and what came out of every step.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING, Any

from swarm_runtime.documents.receipt import ReceiptRouting
from swarm_runtime.engines.base import TokenUsage
from swarm_runtime.orchestrator.receipt import cost_of
from swarm_runtime.plan.cycle import StepRecord

if TYPE_CHECKING:
    from swarm_runtime.contracts.plan import StepDefinition
    from swarm_runtime.plan.calls import ModelCalls
    from swarm_runtime.plan.kinds import StepKind


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True, default=str)


def step_record(
    step: StepDefinition,
    kind: StepKind,
    started: datetime,
    completed: datetime,
    error: str | None,
    result: Any,
    calls: ModelCalls,
    *,
    next_id: str | None,
) -> StepRecord:
    """The record of one step execution, from how its handler ended."""
    routing = _routing(error, next_id)
    if calls.outcomes:
        return _model_record(step, kind, started, completed, error, calls, routing)
    answer = [{"role": "assistant", "content": _json(dict(result))}] if error is None else []
    return StepRecord(
        step_id=step.id,
        agent=kind.agent,
        started=started,
        completed=completed,
        error=error,
        system=f"{step.type} step '{step.id}': {kind.role} (execution plan, v1)",
        user=_json(step.payload),
        lines=tuple(answer),
        routing=routing,
    )


def _routing(error: str | None, next_id: str | None) -> ReceiptRouting | None:
    """Where a plan step goes: on in plan order, the end of the plan, or nowhere (failed)."""
    if error is not None:
        return None
    if next_id:
        return ReceiptRouting(decision="advance", reason="plan_order")
    return ReceiptRouting(decision="terminate", reason="end_of_plan")


def _model_record(
    step: StepDefinition,
    kind: StepKind,
    started: datetime,
    completed: datetime,
    error: str | None,
    calls: ModelCalls,
    routing: ReceiptRouting | None,
) -> StepRecord:
    """The record of a step whose handler called a model: its calls, summed."""
    engine, outcome, prompt = calls.outcomes[-1]
    prompt_tokens = sum(o.tokens.prompt for _, o, _ in calls.outcomes)
    completion_tokens = sum(o.tokens.completion for _, o, _ in calls.outcomes)
    costs = [o.cost_usd for _, o, _ in calls.outcomes]
    cost_usd = None if any(c is None for c in costs) else sum(c or 0.0 for c in costs)
    tokens = TokenUsage(prompt_tokens, completion_tokens)
    return StepRecord(
        step_id=step.id,
        agent=kind.agent,
        started=started,
        completed=completed,
        error=error,
        system=prompt.system or f"{step.type} step '{step.id}': {kind.role}",
        user=calls.outcomes[0][2].user,
        lines=_call_lines(calls),
        engine=engine.engine_id,
        engine_short=engine.engine_short,
        mode=outcome.mode,
        provider=outcome.provider,
        model=outcome.model,
        tokens=tokens,
        cost_usd=cost_usd,
        cassette=outcome.cassette,
        request_sha256=outcome.request_sha256,
        routing=routing,
        # A provider was called: the receipt's cost (SPEC §7.2) of the step's calls.
        cost=None if outcome.provider == "none" else cost_of(outcome, tokens, cost_usd),
        attempt=calls.attempts,
        max_attempts=calls.max_attempts,
    )


def _call_lines(calls: ModelCalls) -> tuple[dict[str, Any], ...]:
    """The transcript lines of a step's model calls, after its first question."""
    lines: list[dict[str, Any]] = []
    for number, (_, made, asked) in enumerate(calls.outcomes):
        if number:  # a handler that asked more than once: each later question, then its reply
            lines.append({"role": "user", "content": asked.user})
        lines.extend(made.transcript)
    return tuple(lines)

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

from swarm_runtime.engines.base import TokenUsage
from swarm_runtime.plan.cycle import StepRecord

if TYPE_CHECKING:
    from swarm_runtime.contracts.plan import StepDefinition
    from swarm_runtime.documents import CostDoc, RoutingDoc
    from swarm_runtime.plan.calls import ModelCalls
    from swarm_runtime.plan.kinds import StepKind

__all__ = ["step_record"]


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
    routing: RoutingDoc | None = None
    if error is None:
        routing = (
            {"decision": "advance", "reason": "plan_order"}
            if next_id
            else {"decision": "terminate", "reason": "end_of_plan"}
        )
    answer = [{"role": "assistant", "content": _json(dict(result))}] if error is None else []
    if not calls.outcomes:
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
    engine, outcome, prompt = calls.outcomes[-1]
    prompt_tokens = sum(o.tokens.prompt for _, o, _ in calls.outcomes)
    completion_tokens = sum(o.tokens.completion for _, o, _ in calls.outcomes)
    costs = [o.cost_usd for _, o, _ in calls.outcomes]
    cost_usd = None if any(c is None for c in costs) else sum(c or 0.0 for c in costs)
    lines: list[dict[str, Any]] = []
    for number, (_, made, asked) in enumerate(calls.outcomes):
        if number:  # a handler that asked more than once: each later question, then its reply
            lines.append({"role": "user", "content": asked.user})
        lines.extend(made.transcript)
    cost: CostDoc | None = None
    if outcome.provider != "none":
        cost = {
            "model": outcome.model,
            "provider": outcome.provider,
            "tokens": {
                "input": prompt_tokens,
                "output": completion_tokens,
                "total": prompt_tokens + completion_tokens,
            },
            "estimatedCostUsd": cost_usd,
        }
    return StepRecord(
        step_id=step.id,
        agent=kind.agent,
        started=started,
        completed=completed,
        error=error,
        system=prompt.system or f"{step.type} step '{step.id}': {kind.role}",
        user=calls.outcomes[0][2].user,
        lines=tuple(lines),
        engine=engine.engine_id,
        engine_short=engine.engine_short,
        mode=outcome.mode,
        provider=outcome.provider,
        model=outcome.model,
        tokens=TokenUsage(prompt_tokens, completion_tokens),
        cost_usd=cost_usd,
        cassette=outcome.cassette,
        routing=routing,
        cost=cost,
        attempt=calls.attempts,
        max_attempts=calls.max_attempts,
    )

"""A plan step's answer to the kernel: its handler's end, as a :class:`StepOutcome`.

A step whose handler called a model answers as that call: the engine's mode, model,
tokens, cost and transcript lines, the prompt it was asked. Any other step answers as
``local``: its payload as the user line and its result as the assistant line, so a reader
sees what went in and what came out of every step. The result itself is the step's
artifact ``<flow>/artifacts/<step>.result.json``, listed in its receipt: a later step, and a
cycle resumed in another process, read it there (:func:`results_before`).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from swarm_runtime.engines.base import (
    Prompt,
    ResultCode,
    StepOutcome,
    StepResult,
    TokenUsage,
    truncate_output,
)
from swarm_runtime.errors import StorageError
from swarm_runtime.inputs.files import read_run_text
from swarm_runtime.inputs.json_input import load_json
from swarm_runtime.record import replace

if TYPE_CHECKING:
    from pathlib import Path

    from swarm_runtime.contracts.plan import ExecutionPlan, StepDefinition
    from swarm_runtime.engines.base import RunEvent
    from swarm_runtime.plan.calls import ModelCalls


def as_json(value: Any) -> str:
    """A payload or result as its transcript line shows it."""
    return json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True, default=str)


def result_name(step_id: str) -> str:
    """The file name of a step's result, under its flow's ``artifacts/``."""
    return f"{step_id}.result.json"


def results_before(plan: ExecutionPlan, step_id: str, artifacts: Path) -> dict[str, dict[str, Any]]:
    """The results of the steps before ``step_id``, by step id, as the run keeps them.

    Every one is there: a step runs only once the steps before it have succeeded (a plan
    is linear), in this process or before a resume.
    """
    found: dict[str, dict[str, Any]] = {}
    for step in plan.steps:
        if step.id == step_id:
            break
        path = artifacts / result_name(step.id)
        try:
            value = load_json(read_run_text(path))
        except (OSError, ValueError) as exc:
            raise StorageError(
                f"{path}: the result of step '{step.id}' is unreadable: {exc}"
            ) from None
        found[step.id] = value if isinstance(value, dict) else {}
    return found


def step_outcome(
    step: StepDefinition,
    role: str,
    error: str | None,
    result: Any,
    calls: ModelCalls | None,
) -> StepOutcome:
    """The answer of one attempt of a step, from how its handler ended.

    ``calls`` is None when the model calls may not be told (a handler past its time limit
    may still be making them).
    """
    answer = StepResult(step_id=step.id, status="failed", error=error)
    if error is None:
        text = as_json(dict(result))
        answer = StepResult(
            step_id=step.id,
            status="succeeded",
            output=truncate_output(text),
            artifacts=(
                {
                    "name": result_name(step.id),
                    "content": text,
                    "content_type": "application/json",
                },
            ),
        )
    code: ResultCode = "ok" if error is None else "fatal"
    if calls is not None and calls.outcomes:
        return _model_outcome(step, role, answer, code, calls)
    lines = ({"role": "assistant", "content": as_json(dict(result))},) if error is None else ()
    return StepOutcome(
        result=answer,
        result_code=code,
        model="none",
        provider="none",
        mode="local",
        transcript=lines,
        cost_usd=0.0,
        prompt=Prompt(
            f"{step.type} step '{step.id}': {role} (execution plan, v1)", as_json(step.payload)
        ),
    )


def retryable_outcome(
    step: StepDefinition, role: str, answer: StepOutcome, calls: ModelCalls
) -> StepOutcome:
    """The model answered ``retryable``: so does the step, with the model's wait."""
    result = StepResult(step_id=step.id, status="failed", error=answer.result.error)
    outcome = _model_outcome(step, role, result, "retryable", calls)
    return replace(outcome, retry_after_ms=answer.retry_after_ms)


def _model_outcome(
    step: StepDefinition, role: str, answer: StepResult, code: ResultCode, calls: ModelCalls
) -> StepOutcome:
    """The answer of a step whose handler called a model: its calls, summed."""
    made = [outcome for _, outcome, _ in calls.outcomes]
    last = made[-1]
    costs = [o.cost_usd for o in made]
    events: list[RunEvent] = [event for o in made for event in o.events]
    system = calls.outcomes[-1][2].system
    return StepOutcome(
        result=answer,
        events=tuple(events),
        result_code=code,
        tokens=TokenUsage(
            sum(o.tokens.prompt for o in made), sum(o.tokens.completion for o in made)
        ),
        model=last.model,
        provider=last.provider,
        mode=last.mode,
        transcript=_call_lines(calls),
        cost_usd=None if any(c is None for c in costs) else sum(c or 0.0 for c in costs),
        cassette=last.cassette,
        request_sha256=last.request_sha256,
        prompt=Prompt(system or f"{step.type} step '{step.id}': {role}", calls.outcomes[0][2].user),
    )


def _call_lines(calls: ModelCalls) -> tuple[dict[str, Any], ...]:
    """The transcript lines of a step's model calls, after its first question."""
    lines: list[dict[str, Any]] = []
    for number, (_, made, asked) in enumerate(calls.outcomes):
        if number:  # a handler that asked more than once: each later question, then its reply
            lines.append({"role": "user", "content": asked.user})
        lines.extend(made.transcript)
    return tuple(lines)

"""The payloads of the run's lifecycle events, built in one place each (SPEC §3.3).

Flow runs and plan cycles write ``run_created``, ``run_started``, ``step_error``,
``run_completed`` and the reason of a pause or a stop through these builders; each payload
is a TypedDict, so mypy holds every writer to its keys, and a test holds the keys to the
read side's models (:mod:`swarm_runtime.contracts.event_payloads`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, TypedDict

__all__ = [
    "ReasonPayload",
    "RunCompletedPayload",
    "RunCreatedPayload",
    "RunStartedPayload",
    "StepErrorPayload",
    "reason",
    "run_completed",
    "run_created",
    "run_started",
    "step_error",
]


class RunCreatedPayload(TypedDict):
    flows: list[str]
    backend: str
    initiator: str
    stepwise: Literal[True]


class RunStartedPayload(TypedDict):
    mode: Literal["stepwise"]
    routing_enabled: bool


class StepErrorPayload(TypedDict):
    status: Literal["failed"]
    duration_ms: int
    error: str
    engine: str


class RunCompletedPayload(TypedDict):
    status: str
    error: str | None
    steps_completed: int
    total_steps_executed: int


class ReasonPayload(TypedDict):
    """``run_pausing``, ``run_paused``, ``run_stopping`` and ``run_stopped``."""

    reason: str


def run_created(flows: Sequence[str], backend: str, initiator: str) -> RunCreatedPayload:
    """``run_created``: the run's flows, its backend and who started it."""
    return {"flows": list(flows), "backend": backend, "initiator": initiator, "stepwise": True}


def run_started() -> RunStartedPayload:
    """``run_started``: every run is stepwise, with routing on."""
    return {"mode": "stepwise", "routing_enabled": True}


def step_error(duration_ms: int, error: str, engine: Any) -> StepErrorPayload:
    """``step_error``: a step that failed, or was cut short, after ``duration_ms``."""
    return {"status": "failed", "duration_ms": duration_ms, "error": error, "engine": engine}


def run_completed(
    status: str, error: str | None, *, steps_completed: int, total_steps_executed: int
) -> RunCompletedPayload:
    """``run_completed``: how the attempt ended, and what it ran."""
    return {
        "status": status,
        "error": error,
        "steps_completed": steps_completed,
        "total_steps_executed": total_steps_executed,
    }


def reason(text: str) -> ReasonPayload:
    """The payload of a pause or a stop: why."""
    return {"reason": text}

"""The payloads of the run's lifecycle and step events, built in one place each (SPEC §3.3).

Flow runs and plan cycles write ``run_created``, ``run_started``, ``step_start``,
``step_end``, ``route_decision``, ``step_error``, ``run_completed`` and the reason of a
pause or a stop through these builders, and a navigator step ``routing_decision`` and
``routing_offroad`` (SPEC §4.5); each payload
is a TypedDict, so mypy holds every writer to its keys, and a test holds the keys to the
read side's models (:mod:`swarm_runtime.contracts.event_payloads`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, TypedDict


class RunCreatedPayload(TypedDict):
    flows: list[str]
    backend: str
    initiator: str
    stepwise: Literal[True]


class RunStartedPayload(TypedDict):
    mode: Literal["stepwise"]
    routing_enabled: bool


class StepStartPayload(TypedDict):
    role: str
    agents: list[str]
    step_index: int
    engine: str
    iteration: int


class StepEndPayload(TypedDict):
    status: str
    duration_ms: int
    engine: str


class RouteDecisionPayload(TypedDict):
    from_step: str
    to_step: str | None
    decision: str
    reason: str
    loop_state: dict[str, int]
    routing_source: str


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


def step_start(
    role: str, agents: Sequence[str], step_index: int, engine: str, iteration: int
) -> StepStartPayload:
    """``step_start``: what the step does, who runs it, where it is in its flow."""
    return {
        "role": role,
        "agents": list(agents),
        "step_index": step_index,
        "engine": engine,
        "iteration": iteration,
    }


def step_end(status: str, duration_ms: int, engine: str) -> StepEndPayload:
    """``step_end``: a step that succeeded (or was skipped) after ``duration_ms``."""
    return {"status": status, "duration_ms": duration_ms, "engine": engine}


def route_decision(
    from_step: str,
    to_step: str | None,
    decision: str,
    reason: str,
    *,
    loop_state: dict[str, int],
    routing_source: str,
) -> RouteDecisionPayload:
    """``route_decision``: where the run goes after ``from_step``, and why."""
    return {
        "from_step": from_step,
        "to_step": to_step,
        "decision": decision,
        "reason": reason,
        "loop_state": loop_state,
        "routing_source": routing_source,
    }


class CandidateDoc(TypedDict):
    id: str
    kind: Literal["edge", "detour", "utility"]
    to: str | None


class ConditionDoc(TypedDict):
    expr: str
    value: bool


class RoutingDecisionPayload(TypedDict):
    step: str
    candidates: list[CandidateDoc]
    chosen: str | None
    routing_source: str
    rationale: str | None
    confidence: float | None
    evaluated_conditions: list[ConditionDoc]
    tie_breaker_used: bool


class RoutingOffroadPayload(TypedDict):
    golden_path_step: str | None
    actual_step: str
    route_type: Literal["DETOUR", "INJECTION", "SKIP", "LOOP"]
    rationale: str | None
    return_address: str | None
    confidence: float | None
    evaluated_conditions: list[str]
    tie_breaker_used: bool


def routing_decision(
    step: str,
    candidates: list[CandidateDoc],
    chosen: str | None,
    *,
    rationale: str | None,
    confidence: float | None,
    evaluated: list[ConditionDoc],
) -> RoutingDecisionPayload:
    """``routing_decision``: what the navigator was offered and what it chose."""
    return {
        "step": step,
        "candidates": candidates,
        "chosen": chosen,
        "routing_source": "navigator",
        "rationale": rationale,
        "confidence": confidence,
        "evaluated_conditions": evaluated,
        "tie_breaker_used": False,
    }


def routing_offroad(
    golden: str | None,
    actual: str,
    route_type: Literal["DETOUR", "INJECTION", "SKIP", "LOOP"],
    *,
    rationale: str | None,
    confidence: float | None,
    held: list[str],
    return_address: str | None = None,
) -> RoutingOffroadPayload:
    """``routing_offroad``: a move off the golden path (the seed's payload, exactly)."""
    return {
        "golden_path_step": golden,
        "actual_step": actual,
        "route_type": route_type,
        "rationale": rationale,
        "return_address": return_address,
        "confidence": confidence,
        "evaluated_conditions": held,
        "tie_breaker_used": False,
    }


class GraphExtendedPayload(TypedDict):
    from_step: str
    to_step: str
    rationale: str | None


def graph_extended(from_step: str, to_step: str, rationale: str | None) -> GraphExtendedPayload:
    """``graph_extended``: an edge the navigator proposed outside its set (never followed)."""
    return {"from_step": from_step, "to_step": to_step, "rationale": rationale}


class StackPushPayload(TypedDict):
    paused_flow: str
    paused_step: str
    injected_flow: str
    current_depth: int


class StackPopPayload(TypedDict):
    resumed_flow: str
    resumed_step: str | None
    injected_flow: str
    current_depth: int


class FlowInjectedPayload(TypedDict):
    flow: str
    by_step: str
    trigger: str
    return_address: str | None


class NodeInjectedPayload(TypedDict):
    step: str
    into_flow: str
    after_step: str


class StackOverflowPayload(TypedDict):
    paused_flow: str
    paused_step: str
    injected_flow: str
    max_depth: int


def stack_push(paused: tuple[str, str], injected_flow: str, depth: int) -> StackPushPayload:
    """``stack_push``: a flow paused at a step, another one entered; the depth after it."""
    return {
        "paused_flow": paused[0],
        "paused_step": paused[1],
        "injected_flow": injected_flow,
        "current_depth": depth,
    }


def stack_pop(resumed: tuple[str, str | None], injected_flow: str, depth: int) -> StackPopPayload:
    """``stack_pop``: an injected flow left, the paused one resumed; the depth after it."""
    return {
        "resumed_flow": resumed[0],
        "resumed_step": resumed[1],
        "injected_flow": injected_flow,
        "current_depth": depth,
    }


def flow_injected(
    flow: str, by_step: str, trigger: str, return_address: str | None
) -> FlowInjectedPayload:
    """``flow_injected``: which flow was entered, by which step, on what, and back to where."""
    return {"flow": flow, "by_step": by_step, "trigger": trigger, "return_address": return_address}


def node_injected(step: str, into_flow: str, after_step: str) -> NodeInjectedPayload:
    """``node_injected``: one step of another flow run after ``after_step``."""
    return {"step": step, "into_flow": into_flow, "after_step": after_step}


def stack_overflow(
    paused: tuple[str, str], injected_flow: str, max_depth: int
) -> StackOverflowPayload:
    """``stack_overflow_prevented``: an injection past the depth, or a re-entry, not made."""
    return {
        "paused_flow": paused[0],
        "paused_step": paused[1],
        "injected_flow": injected_flow,
        "max_depth": max_depth,
    }


class FactsUpdatedPayload(TypedDict):
    added: list[str]
    updated: list[str]
    added_count: int
    updated_count: int
    total: int


MAX_FACT_IDS = 100
"""How many ids ``facts_updated`` lists of each kind; its counts say how many there were."""


class FactPayload(TypedDict):
    id: str
    text: str


def facts_updated(added: list[str], updated: list[str], total: int) -> FactsUpdatedPayload:
    """``facts_updated``: what a step's reply added and updated, and the run's fact count.

    Counts of both, and the first :data:`MAX_FACT_IDS` ids of each: a line stays short.
    """
    return {
        "added": added[:MAX_FACT_IDS],
        "updated": updated[:MAX_FACT_IDS],
        "added_count": len(added),
        "updated_count": len(updated),
        "total": total,
    }


def fact(fact_id: str, text: str) -> FactPayload:
    """``assumption_recorded`` or ``decision_recorded``: the fact."""
    return {"id": fact_id, "text": text}


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

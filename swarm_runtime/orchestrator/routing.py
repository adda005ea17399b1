"""Choosing the next step (SPEC §4): linear, microloop and branch, from handoff then receipt."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from swarm_runtime.errors import RoutingError
from swarm_runtime.flow.spec import FlowSpec, StepSpec
from swarm_runtime.record import Record

__all__ = ["Decision", "decide", "loop_key"]


class Decision(Record):
    """Where to go after a step, and why."""

    to_step: str | None
    decision: str
    """loop | advance | terminate."""
    reason: str
    source: str
    """fast_path | deterministic."""
    receipt_routing: dict[str, Any]


def loop_key(step: StepSpec) -> str:
    """The ``loop_state`` key of a microloop step: ``<step>:<loop_target>``."""
    return f"{step.id}:{step.routing.loop_target}"


def _lookup(name: str, handoff: Mapping[str, Any] | None, receipt: Mapping[str, Any]) -> Any:
    if handoff and name in handoff:
        return handoff[name]
    return receipt.get(name)


def _following(flow: FlowSpec, step: StepSpec) -> str | None:
    if step.routing.next:
        return step.routing.next
    position = flow.index_of(step.id) + 1
    return flow.steps[position].id if position < len(flow.steps) else None


def _onward(target: str | None, reason: str, source: str, extra: dict[str, Any]) -> Decision:
    if target is None:
        return Decision(
            None, "terminate", reason, source, {"decision": "terminate", "reason": reason, **extra}
        )
    return Decision(
        target, "advance", reason, source, {"decision": "advance", "reason": reason, **extra}
    )


def decide(
    flow: FlowSpec,
    step: StepSpec,
    *,
    handoff: Mapping[str, Any] | None,
    receipt: Mapping[str, Any],
    executions: int,
    linear_only: bool = False,
) -> Decision:
    """Route after ``step``; ``executions`` counts this loop's runs of it, this one included.

    ``linear_only`` routes a skipped step as linear whatever its kind. Raises RoutingError
    when a branch matches nothing and has no default.
    """
    routing = step.routing
    if routing.kind == "microloop" and not linear_only:
        field = routing.loop_condition_field or "status"
        extra = {"loop_iteration": executions - 1, "max_iterations": routing.max_iterations}
        value = _lookup(field, handoff, receipt)
        success = {item.lower() for item in routing.loop_success_values}
        onward = _following(flow, step)
        if value is not None and str(value).lower() in success:
            return _onward(onward, f"success_value:{value}", "deterministic", extra)
        if str(_lookup("can_further_iteration_help", handoff, receipt) or "").lower() == "no":
            return _onward(onward, "no_further_help", "deterministic", extra)
        if executions >= routing.max_iterations:
            return _onward(onward, "max_iterations", "deterministic", extra)
        reason = f"loop_iteration:{executions}"
        return Decision(
            routing.loop_target,
            "loop",
            reason,
            "deterministic",
            {"decision": "loop", "reason": reason, **extra},
        )
    if routing.kind == "branch" and not linear_only:
        value = _lookup(routing.branch_field, handoff, receipt)
        table = {key.lower(): target for key, target in routing.branches}
        if value is not None and str(value).lower() in table:
            target = table[str(value).lower()]
            return _onward(target, f"branch:{routing.branch_field}={value}", "deterministic", {})
        if routing.default:
            return _onward(
                routing.default,
                f"branch_default:{routing.branch_field}={value}",
                "deterministic",
                {},
            )
        raise RoutingError(
            f"branch step '{step.id}' of flow '{flow.key}': {routing.branch_field}={value!r} "
            f"matches no branch (allowed: {', '.join(k for k, _ in routing.branches)}) and "
            "there is no default; declare one of them in the handoff or add 'default:'"
        )
    onward = _following(flow, step)
    if onward is None:
        return _onward(None, "end_of_flow", "fast_path", {})
    reason = f"next:{onward}" if routing.next else "linear"
    return _onward(onward, reason, "fast_path", {})

"""Choosing the next step (SPEC §4): linear, microloop and branch, from handoff then receipt.

A navigator step's move is the kernel's :mod:`~swarm_runtime.orchestrator.navigator`; its
router here is its golden path, the step it takes when no candidate holds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from swarm_runtime.documents.receipt import ReceiptRouting
from swarm_runtime.documents.run_events import RouteMove, RoutingSource
from swarm_runtime.errors import RoutingError
from swarm_runtime.flow.kinds import NO_FURTHER_HELP_FIELD
from swarm_runtime.flow.spec import FlowSpec, StepSpec
from swarm_runtime.record import Record


class Decision(Record):
    """Where to go after a step, and why."""

    to_step: str | None
    decision: RouteMove
    """loop | advance | terminate."""
    reason: str
    source: RoutingSource
    """fast_path | deterministic | navigator."""
    loop: tuple[int, int] | None = None
    """A microloop's (0-based iteration, max_iterations), which its receipt records."""

    @property
    def receipt_routing(self) -> ReceiptRouting:
        """The receipt's ``routing`` (SPEC §4.4)."""
        if self.loop is None:
            return ReceiptRouting(decision=self.decision, reason=self.reason)
        iteration, most = self.loop
        return ReceiptRouting(
            decision=self.decision,
            reason=self.reason,
            loop_iteration=iteration,
            max_iterations=most,
        )


def _lookup(name: str, handoff: Mapping[str, Any] | None, receipt: Mapping[str, Any]) -> Any:
    if handoff and name in handoff:
        return handoff[name]
    return receipt.get(name)


def _following(flow: FlowSpec, step: StepSpec) -> str | None:
    if step.routing.next:
        return step.routing.next
    position = flow.index_of(step.id) + 1
    return flow.steps[position].id if position < len(flow.steps) else None


def _onward(
    target: str | None, reason: str, source: RoutingSource, loop: tuple[int, int] | None
) -> Decision:
    return Decision(target, "terminate" if target is None else "advance", reason, source, loop)


def _microloop(
    flow: FlowSpec, step: StepSpec, value_of: Callable[[str], Any], executions: int
) -> Decision:
    routing = step.routing
    extra = (executions - 1, routing.max_iterations)
    value = value_of(routing.loop_condition_field or "status")
    success = {item.lower() for item in routing.loop_success_values}
    onward = _following(flow, step)
    if value is not None and str(value).lower() in success:
        return _onward(onward, f"success_value:{value}", "deterministic", extra)
    if str(value_of(NO_FURTHER_HELP_FIELD) or "").lower() == "no":
        return _onward(onward, "no_further_help", "deterministic", extra)
    if executions >= routing.max_iterations:
        return _onward(onward, "max_iterations", "deterministic", extra)
    return Decision(
        routing.loop_target, "loop", f"loop_iteration:{executions}", "deterministic", extra
    )


def _branch(
    flow: FlowSpec, step: StepSpec, value_of: Callable[[str], Any], _executions: int
) -> Decision:
    routing = step.routing
    value = value_of(routing.branch_field)
    table = {key.lower(): target for key, target in routing.branches}
    if value is not None and str(value).lower() in table:
        target = table[str(value).lower()]
        return _onward(target, f"branch:{routing.branch_field}={value}", "deterministic", None)
    if routing.default:
        return _onward(
            routing.default, f"branch_default:{routing.branch_field}={value}", "deterministic", None
        )
    raise RoutingError(
        f"branch step '{step.id}' of flow '{flow.key}': {routing.branch_field}={value!r} "
        f"matches no branch (allowed: {', '.join(k for k, _ in routing.branches)}) and "
        "there is no default; declare one of them in the handoff or add 'default:'"
    )


def _linear(
    flow: FlowSpec, step: StepSpec, _value_of: Callable[[str], Any], _executions: int
) -> Decision:
    onward = _following(flow, step)
    if onward is None:
        return _onward(None, "end_of_flow", "fast_path", None)
    reason = f"next:{onward}" if step.routing.next else "linear"
    return _onward(onward, reason, "fast_path", None)


def _navigator(
    flow: FlowSpec, step: StepSpec, _value_of: Callable[[str], Any], _executions: int
) -> Decision:
    return _onward(step.routing.default, "navigator_default", "deterministic", None)


ROUTERS: dict[str, Callable[[FlowSpec, StepSpec, Callable[[str], Any], int], Decision]] = {
    "linear": _linear,
    "microloop": _microloop,
    "branch": _branch,
    "navigator": _navigator,
}
"""The run-time decision of each routing kind (the rest of a kind is in ``flow.kinds``)."""


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
    router = ROUTERS["linear" if linear_only else step.routing.kind]
    return router(flow, step, lambda name: _lookup(name, handoff, receipt), executions)

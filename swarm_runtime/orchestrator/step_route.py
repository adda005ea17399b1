"""Where a run goes after a step (SPEC §4): its routing's move, or a choice among candidates.

A step whose candidate set may hold more than its routing's own move (a navigator step, a
step with detours, any step of a non-utility flow when utility flows may be injected) has
its move chosen by :func:`~.navigator.route`; a detour too deep, or into a flow already on
the stack, is refused here. :meth:`StepRouter.next` then moves the flow stack (SPEC §4.6).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from swarm_runtime.documents.route_events import RoutingOffroad
from swarm_runtime.engines.base import StepContext, StepEngine, StepOutcome
from swarm_runtime.flow.spec import FlowSpec, StepSpec
from swarm_runtime.orchestrator import stack
from swarm_runtime.orchestrator.facts import declared
from swarm_runtime.orchestrator.navigator import (
    Injections,
    NavigatorRoute,
    candidate_moves,
    resume_step,
    route,
)
from swarm_runtime.orchestrator.navigator_call import NavigatorCall
from swarm_runtime.orchestrator.routing import Decision, decide
from swarm_runtime.orchestrator.state import RunState
from swarm_runtime.record import replace


class StepRouter:
    """Routes the steps of one run and keeps its flow stack."""

    def __init__(
        self,
        state: RunState,
        mode: str,
        injections: Injections,
        navigator: NavigatorCall,
        spec: Mapping[str, Any],
    ) -> None:
        self.state = state
        self.mode = mode
        """``llm`` or ``deterministic`` (SPEC §4.5)."""
        self.injections = injections
        self.navigator = navigator
        self.spec = spec

    def route(
        self,
        flow: FlowSpec,
        step: StepSpec,
        end: str | None,
        outcome: StepOutcome,
        receipt: Mapping[str, Any],
        asked: tuple[StepEngine, StepContext],
    ) -> NavigatorRoute:
        """The move after ``step``; ``receipt`` is its receipt as routing reads it."""
        skipped = outcome.result_code == "skipped"
        own = None
        if step.routing.kind != "navigator" or skipped:
            own = decide(
                flow,
                step,
                handoff=outcome.handoff,
                receipt=receipt,
                executions=self.state.loops.executions(flow.key, step),
                linear_only=skipped,
            )
        moved = NavigatorRoute(decision=own) if own is not None else None
        if not skipped and (own is None or end != step.id) and self._may_choose(flow, step):
            moved = self._navigate(flow, step, outcome, receipt, asked, own)
        assert moved is not None
        decision = moved.decision
        if end == step.id and decision.decision != "loop":
            reason = f"end_step:{step.id}"
            ended = Decision(None, "terminate", reason, decision.source, decision.loop)
            return replace(moved, decision=ended)
        return moved

    def _may_choose(self, flow: FlowSpec, step: StepSpec) -> bool:
        """Whether the step's candidate set may hold more than its routing's move."""
        injections = self.injections
        return bool(
            step.routing.kind == "navigator"
            or step.detours
            or (injections.utilities and not flow.utility)
        )

    def _navigate(
        self,
        flow: FlowSpec,
        step: StepSpec,
        outcome: StepOutcome,
        receipt: Mapping[str, Any],
        asked: tuple[StepEngine, StepContext],
        own: Decision | None,
    ) -> NavigatorRoute:
        """The move chosen from the candidate set, over what the step left (SPEC §4.5)."""
        facts = self.state.facts
        values = {
            "handoff": outcome.handoff or {},
            "receipt": lambda: dict(receipt),  # made only when a condition reads it
            "params": self.spec.get("params") or {},
            "loop_state": self.state.loops.of_flow(flow.key),
            # Made only when a condition reads them, from what earlier steps made ready.
            "facts": lambda: facts.cel(
                declared(outcome.text or outcome.result.output, outcome.handoff), flow.key, step.id
            ),
        }
        engine, ctx = asked
        injections = self.injections
        moves = candidate_moves(
            flow, step, own, utilities=injections.utilities, entry=injections.first_step
        )
        moved = route(
            flow,
            step,
            values,
            moves=moves,
            own=own,
            mode=self.mode,
            ask=lambda held, golden: self.navigator.ask(
                engine, ctx, flow, step, outcome, held, golden
            ),
        )
        if moved.detour is None or moved.detour.detour is None:
            return moved
        overflow = stack.refused(
            self.state.stack, (flow.key, step.id), moved.detour.detour.flow, injections.max_depth
        )
        if not overflow:
            return moved
        assert moved.golden is not None
        kept = [event for event in moved.events if not isinstance(event, RoutingOffroad)]
        golden = replace(moved.golden, reason=f"stack_overflow_prevented:{moved.detour.id}")
        return NavigatorRoute(golden, (*kept, *overflow), None, moved.golden)

    def next(
        self, flow: FlowSpec, step: StepSpec, moved: NavigatorRoute
    ) -> tuple[stack.Events, stack.Next]:
        """Where the run goes after the step, and the stack events of getting there."""
        frames, detour = self.state.stack, moved.detour
        if detour is not None and detour.detour is not None and detour.to is not None:
            target_flow, _, target_step = detour.to.partition("/")
            return stack.enter(
                frames,
                (flow.key, step.id),
                (target_flow, target_step),
                only_step=detour.detour.step is not None,
                resume_to=resume_step(detour, moved.golden or moved.decision),
                trigger=detour.when or f"detour:{detour.id}",
            )
        if moved.decision.to_step is None and frames:
            return stack.leave(frames)
        return [], stack.Next(flow.key, moved.decision.to_step)

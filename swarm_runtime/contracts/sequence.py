"""The sequencing invariants over the events of one run.

Walked once over the (line, event) pairs of an event log that parsed: the run's first
event first, steps that open and close in turn with the events inside them between (each
tool call's tool_end after its tool_start, before the next call or the step_end), a
route_decision after every step_end (how a navigator chose between the two, naming moves
it was offered and the one taken; what the move brought right after it), one
run_completed per attempt, ``seq`` with no gap or repeat, across resumes too. Where each
kind may stand is its declaration's :class:`~swarm_runtime.documents.payload.Stands`; a
kind nobody declared is the schema check's to report.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from swarm_runtime.contracts.violation import Violation
from swarm_runtime.documents.events import KINDS, stands_of
from swarm_runtime.documents.payload import Stands
from swarm_runtime.documents.route_events import (
    FlowInjected,
    NodeInjected,
    RoutingDecision,
    RoutingOffroad,
    StackPop,
    StackPush,
)
from swarm_runtime.documents.run_events import RunCompleted, RunPaused, RunStarted

STARTED_FIRST = frozenset(
    {
        Stands.STEP_START,
        Stands.IN_STEP,
        Stands.TOOL_START,
        Stands.TOOL_END,
        Stands.STEP_END,
        Stands.STEP_ERROR,
        Stands.ROUTING,
        Stands.ROUTE,
    }
)
"""Where an event needs its attempt's run_started before it."""
INSIDE_STEP = frozenset({Stands.IN_STEP, Stands.TOOL_START, Stands.TOOL_END})
"""Where an event belongs to the open step execution, which it leaves open."""


def _payload(event: dict[str, Any]) -> dict[str, Any]:
    payload = event.get("payload")
    return payload if isinstance(payload, dict) else {}


def check_event_sequence(
    events: Sequence[tuple[int, dict[str, Any]]], rel: str, *, crashed: bool = False
) -> list[Violation]:
    """The sequencing invariants over (line, event) pairs that already parsed.

    A run is allowed to end open (no ``run_completed``, a step never ended) when it is
    paused (its log ends with ``run_paused``) or ``crashed`` (killed: ``swarm resume``
    closes what it left open). A resumed run's log is read across its ``run_resumed``.
    """
    if not events:
        return [Violation(rel, None, "no events")]
    checker = _SequenceCheck(rel)
    checker.check_head(events)
    for line, event in events:
        checker.event(line, event)
    checker.finish(events[-1][0], open_end=crashed or events[-1][1].get("kind") == RunPaused.kind)
    return checker.found


class _SequenceCheck:
    """Walks the events of a run once, noting every break of the sequencing invariants.

    See docs/contract/events.md#where-events-may-stand.
    """

    def __init__(self, rel: str) -> None:
        self.rel = rel
        self.found: list[Violation] = []
        self.started = False
        self.open_step: tuple[int, dict[str, Any]] | None = None
        self.awaiting_route: tuple[int, dict[str, Any]] | None = None
        self.offered: set[str] | None = None
        """The steps a ``routing_decision`` offered, until the ``route_decision``."""
        self.offroad: str | None = None
        """Where a ``routing_offroad`` said the run goes, until the ``route_decision``."""
        self.completed: list[int] = []
        self.completed_status: object = None
        self.paused_open = False
        """A step stays open across a pause (it answered ``blocked``)."""
        self.routed = False
        """The last event was a route_decision, or what the move brought after one."""
        self.stack = _StackCheck(self.at)
        self.open_tool: tuple[int, str] | None = None
        """The line and tool of the open step's call that has no ``tool_end`` yet."""

    def at(self, line: int, message: str) -> None:
        self.found.append(Violation(self.rel, line, message))

    def check_head(self, events: Sequence[tuple[int, dict[str, Any]]]) -> None:
        """The first event, one run id, and ``seq`` running 1, 2, 3 … without gaps."""
        first_line, first = events[0]
        if stands_of(first.get("kind")) is not Stands.FIRST:
            firsts = [kind for kind, payload in KINDS.items() if payload.stands is Stands.FIRST]
            self.at(
                first_line,
                f"the first event must be {' or '.join(firsts)}, got {first.get('kind')}",
            )
        run_ids = {str(event.get("run_id")) for _, event in events}
        if len(run_ids) > 1:
            self.at(first_line, f"events carry several run ids: {sorted(map(str, run_ids))}")
        highest = 0
        for line, event in events:
            seq = event.get("seq")
            if not isinstance(seq, int):
                continue  # the schema check reports it
            if seq <= highest:
                self.at(
                    line,
                    f"seq {seq} repeats or goes back (highest so far {highest}); seq runs "
                    "1, 2, 3 … with no gap or repeat",
                )
            elif seq != highest + 1:
                self.at(line, f"seq jumps from {highest} to {seq}; seq runs 1, 2, 3 … with no gap")
            highest = max(highest, seq)

    def event(self, line: int, event: dict[str, Any]) -> None:
        """Check one event against what came before it."""
        kind = event.get("kind")
        stands = stands_of(kind)
        if stands is Stands.RESUME:
            self._resumed(line)
            return
        if stands is Stands.PAUSE and self.open_step is not None:
            self.paused_open = True
        if self.completed:
            self.at(
                line,
                f"{kind} after {RunCompleted.kind} (line {self.completed[0]}); "
                f"{RunCompleted.kind} must be last",
            )
        if stands is Stands.START:
            self.started = True
        elif stands is Stands.LAST:
            self.completed.append(line)
            self.completed_status = _payload(event).get("status")
            self._close_open_step()
            return
        if stands in STARTED_FIRST and not self.started:
            self.at(line, f"{kind} before {RunStarted.kind}")
        if self.awaiting_route is not None and stands not in (Stands.ROUTE, Stands.ROUTING):
            self._unrouted()
        if stands is not Stands.AFTER_ROUTE:
            self.routed = stands is Stands.ROUTE
        elif not self.routed:
            self.at(line, f"{kind} does not follow a route_decision (it comes right after one)")
        if stands is Stands.STEP_START:
            self.stack.step_start(line, event)
            self._step_start(line, event)
        elif stands is Stands.AFTER_ROUTE:
            self.stack.event(line, str(kind), event)
        elif stands in INSIDE_STEP or stands in (Stands.STEP_END, Stands.STEP_ERROR):
            self._inside_step(line, str(kind), stands, event)
        elif stands is Stands.ROUTE:
            self._route_decision(line, event)
            self.stack.routed(event)
        elif stands is Stands.ROUTING:
            self._routing(line, str(kind), event)

    def _resumed(self, line: int) -> None:
        """``run_resumed``: the run goes on after a pause, a stop or a crash."""
        if self.completed:
            if self.completed_status != "stopped":
                self.at(
                    line,
                    f"run_resumed after run_completed{{status: {self.completed_status}}} "
                    f"(line {self.completed[-1]}); only a stopped run is resumed",
                )
            self.completed = []
        if self.open_step is not None and not self.paused_open:
            self._close_open_step()  # a crash's open step must be closed before resuming
        if self.awaiting_route is not None:
            self._unrouted()
        self.paused_open = False

    def _close_open_step(self) -> None:
        if self.open_step is not None:
            line, event = self.open_step
            self.at(line, f"step '{event.get('step_id')}' started here never ended")
            self.open_step = None

    def _unrouted(self) -> None:
        assert self.awaiting_route is not None
        line, event = self.awaiting_route
        self.at(
            line,
            f"step_end of '{event.get('step_id')}' is not followed by a route_decision",
        )
        self.awaiting_route = None

    def _step_start(self, line: int, event: dict[str, Any]) -> None:
        if self.open_step is not None:
            self.at(
                line,
                f"step_start of '{event.get('step_id')}' while "
                f"'{self.open_step[1].get('step_id')}' (line {self.open_step[0]}) is still "
                "open: a second step_start without step_end/step_error",
            )
        self.open_step, self.open_tool = (line, event), None

    def _inside_step(self, line: int, kind: str, stands: Stands, event: dict[str, Any]) -> None:
        step = event.get("step_id")
        if self.open_step is None:
            self.at(line, f"{kind} of '{step}' outside any step execution (no open step_start)")
        elif (self.open_step[1].get("flow_key"), self.open_step[1].get("step_id")) != (
            event.get("flow_key"),
            step,
        ):
            self.at(
                line,
                f"{kind} of '{step}' inside the execution of '{self.open_step[1].get('step_id')}'",
            )
        if self.open_step is not None:
            self._tool_call(line, kind, stands, event)
        if stands not in INSIDE_STEP:
            self.open_step = None
            if stands is Stands.STEP_END:
                self.awaiting_route = (line, event)

    def _tool_call(self, line: int, kind: str, stands: Stands, event: dict[str, Any]) -> None:
        """A call's ``tool_end`` (same tool) comes before the next ``tool_start`` or ``step_end``.

        A ``step_error`` may end a step mid-call: it was killed, stopped or past its deadline.
        """
        tool = _payload(event).get("tool")
        if self.open_tool is not None and stands in (Stands.TOOL_START, Stands.STEP_END):
            began, name = self.open_tool
            self.at(
                line,
                f"{kind} while the call of tool '{name}' (line {began}) has no tool_end; "
                "every tool_start is followed by its tool_end",
            )
        if stands is Stands.TOOL_START:
            self.open_tool = (line, str(tool))
            return
        if stands is Stands.TOOL_END:
            if self.open_tool is None:
                self.at(line, f"tool_end of tool '{tool}' without a tool_start before it")
            elif self.open_tool[1] != str(tool):
                self.at(
                    line,
                    f"tool_end of tool '{tool}' ends the call of tool '{self.open_tool[1]}' "
                    f"(line {self.open_tool[0]}); a tool_end names the tool of its tool_start",
                )
        if stands is not Stands.IN_STEP:
            self.open_tool = None

    def _routing(self, line: int, kind: str, event: dict[str, Any]) -> None:
        """A navigator's ``routing_decision`` or ``routing_offroad``, inside a step's routing."""
        if self.awaiting_route is None:
            self.at(
                line,
                f"{kind} outside a step's routing (it comes between step_end and route_decision)",
            )
            return
        step = self.awaiting_route[1].get("step_id")
        if event.get("step_id") != step:
            self.at(line, f"{kind} of '{event.get('step_id')}' follows the step_end of '{step}'")
        payload = _payload(event)
        if kind == RoutingDecision.kind:
            candidates = [c for c in payload.get("candidates") or [] if isinstance(c, dict)]
            self.offered = {str(c.get("to")) for c in candidates}
            chosen = payload.get("chosen")
            if chosen is not None and chosen not in {c.get("id") for c in candidates}:
                self.at(line, f"routing_decision chose '{chosen}', which it was not offered")
            return
        if kind != RoutingOffroad.kind:
            return  # a proposal (never followed), a detour not made: no move of their own
        self.offroad = str(payload.get("actual_step"))
        if self.offered is not None and self.offroad not in self.offered:
            self.at(
                line,
                f"routing_offroad goes to '{self.offroad}', which no candidate offered "
                f"({', '.join(sorted(self.offered))})",
            )

    def _route_decision(self, line: int, event: dict[str, Any]) -> None:
        offroad, self.offroad, self.offered = self.offroad, None, None
        payload = _payload(event)
        moved = payload.get("decision") != "terminate"
        if offroad is not None and moved and payload.get("to_step") != offroad:
            self.at(
                line,
                f"route_decision goes to '{payload.get('to_step')}' where routing_offroad "
                f"said '{offroad}'",
            )
        if self.awaiting_route is None:
            self.at(line, "route_decision without a step_end just before it")
        else:
            payload = _payload(event)
            if payload.get("from_step") != self.awaiting_route[1].get("step_id"):
                self.at(
                    line,
                    f"route_decision from '{payload.get('from_step')}' follows the "
                    f"step_end of '{self.awaiting_route[1].get('step_id')}'",
                )
        self.awaiting_route = None

    def finish(self, last_line: int, *, open_end: bool = False) -> None:
        """What must hold once every event has been seen (``open_end``: paused, crashed)."""
        if open_end and not self.completed:
            return
        if self.awaiting_route is not None:
            self._unrouted()
        self._close_open_step()
        if not self.completed:
            self.at(last_line, "the run has no run_completed event (it must end every run)")
        elif len(self.completed) > 1:
            self.at(
                self.completed[1],
                f"run_completed appears {len(self.completed)} times (lines "
                f"{', '.join(map(str, self.completed))}); it must appear exactly once",
            )
        if self.completed and self.completed_status == "succeeded":
            self.stack.finish(self.completed[-1])


class _StackCheck:
    """The flow stack: pushes and pops nest, and only an injected flow runs.

    See docs/flows.md#detours-and-utility-flows.
    """

    def __init__(self, at: Callable[[int, str], None]) -> None:
        self.at = at
        self.flows: list[tuple[int, str]] = []
        """The injected flows on the stack (line of their push, flow), bottom first."""
        self.last_route: dict[str, Any] | None = None
        """The last route_decision, until a step starts."""
        self.pushed: str | None = None
        """The flow the last stack_push entered, until its flow_injected or node_injected."""

    def routed(self, event: dict[str, Any]) -> None:
        self.last_route = event

    def step_start(self, line: int, event: dict[str, Any]) -> None:
        self.last_route = self.pushed = None
        if self.flows and event.get("flow_key") != self.flows[-1][1]:
            self.at(
                line,
                f"step '{event.get('flow_key')}/{event.get('step_id')}' runs while flow "
                f"'{self.flows[-1][1]}' (pushed at line {self.flows[-1][0]}) is injected: "
                "an injected flow's steps lie between its stack_push and stack_pop",
            )

    def event(self, line: int, kind: str, event: dict[str, Any]) -> None:
        """An event after a route_decision: the stack's own move it, others pass."""
        payload = _payload(event)
        if kind == StackPush.kind:
            route = _payload(self.last_route) if self.last_route else {}
            if route.get("routing_source") != "navigator:detour":
                self.at(line, "stack_push without a route_decision that takes a detour")
            depth = len(self.flows) + 2
            if payload.get("current_depth") != depth:
                self.at(
                    line, f"stack_push current_depth {payload.get('current_depth')!r}, not {depth}"
                )
            self.flows.append((line, str(payload.get("injected_flow"))))
            self.pushed = str(payload.get("injected_flow"))
        elif kind in (FlowInjected.kind, NodeInjected.kind):
            entered = (
                payload.get("flow")
                if kind == FlowInjected.kind
                else str(payload.get("step", "")).partition("/")[0]
            )
            if self.pushed is None or entered != self.pushed:
                self.at(line, f"{kind} of '{entered}' does not follow its stack_push")
            self.pushed = None
        elif kind != StackPop.kind:
            return  # what else a move brings (facts) does not touch the stack
        elif not self.flows:
            self.at(line, "stack_pop with nothing on the stack")
        else:
            _, top = self.flows.pop()
            if payload.get("injected_flow") != top:
                self.at(
                    line,
                    f"stack_pop leaves '{payload.get('injected_flow')}', but '{top}' is on top",
                )
            depth = len(self.flows) + 1
            if payload.get("current_depth") != depth:
                self.at(
                    line, f"stack_pop current_depth {payload.get('current_depth')!r}, not {depth}"
                )

    def finish(self, line: int) -> None:
        for pushed, flow in self.flows:
            self.at(
                line, f"the run succeeded with flow '{flow}' (pushed at line {pushed}) never popped"
            )

"""The events of step executions, for flow runs and plan cycles alike (SPEC §3.3).

A step execution opens with ``step_start`` and ends with ``step_end`` + ``route_decision``
or with ``step_error``; :class:`StepLog` writes those events for every kind of run, keeps
the execution that is under way, and counts it in the run's totals and its flow's. A run
that is cut short closes the open execution here too, so each of these events is built in
one place.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Literal

from swarm_runtime.documents.payload import Event, Payload
from swarm_runtime.documents.run_events import RouteDecision, StepEnd, StepError, StepStart
from swarm_runtime.orchestrator.recorder import RunRecorder
from swarm_runtime.orchestrator.state import RunState
from swarm_runtime.record import Record
from swarm_runtime.timeutil import Clock, format_ts, ms_between


class OpenStep(Record):
    """A step execution that has a ``step_start`` and no end yet."""

    flow_key: str
    step_id: str
    agent_key: str
    started: datetime
    engine_id: str


class StepLog:
    """Writes the events of one run's step executions and knows the one under way."""

    def __init__(self, recorder: RunRecorder, state: RunState, clock: Clock) -> None:
        self.recorder = recorder
        self.state = state
        self.clock = clock
        self.open_step: OpenStep | None = None

    def start(
        self,
        step: OpenStep,
        *,
        role: str,
        agents: Sequence[str],
        index: int,
        iteration: int,
    ) -> None:
        """``step_start`` of a new execution, counted in the run's totals and its flow's."""
        self.state.totals.executed += 1
        self.state.flow(step.flow_key).executed += 1
        self.recorder.emit(
            StepStart(
                role=role,
                agents=list(agents),
                step_index=index,
                engine=step.engine_id,
                iteration=iteration,
            ),
            flow_key=step.flow_key,
            step_id=step.step_id,
            agent_key=step.agent_key,
            ts=format_ts(step.started),
        )
        self.open_step = step

    def reopen(self, step: OpenStep) -> None:
        """An execution still open in the log (a ``blocked`` step re-invoked): no event."""
        self.open_step = step

    def leave_open(self) -> None:
        """The execution stays open in the log on purpose (a ``blocked`` step's pause)."""
        self.open_step = None

    def emit_in_step(self, payload: Payload) -> None:
        """An event of the execution under way (``tool_start``, ``tool_end``, ``log``)."""
        step = self._open()
        self.recorder.emit(
            payload, flow_key=step.flow_key, step_id=step.step_id, agent_key=step.agent_key
        )

    def fail(self, duration_ms: int, error: str, *, ts: str | None = None) -> None:
        """``step_error`` of the execution under way, which ends it."""
        step = self._open()
        self.open_step = None
        self.recorder.emit(
            StepError(status="failed", duration_ms=duration_ms, error=error, engine=step.engine_id),
            ts=ts,
            flow_key=step.flow_key,
            step_id=step.step_id,
            agent_key=step.agent_key,
        )

    def close_open(self, error: str) -> None:
        """An execution cut short (a stop, a write error): its ``step_error``, if one is open."""
        if self.open_step is not None:
            self.fail(ms_between(self.open_step.started, self.clock()), error)

    def ended(
        self,
        status: Literal["succeeded", "skipped"],
        duration_ms: int,
        route: RouteDecision,
        *,
        ts: str | None = None,
        routing: Sequence[Payload] = (),
        after: Sequence[Payload] = (),
        before: Callable[[list[Event]], list[str]] | None = None,
    ) -> None:
        """``step_end`` and ``route_decision`` of the execution under way, which ends it.

        ``routing`` are the events that say how a navigator chose the move
        (``routing_decision``, ``routing_offroad``), written between the two; ``after``
        follow them (``facts_updated``…). ``before`` is given the events before they are
        written (a flow run checkpoints them) and gives back their encoded lines. The
        execution stays open until all are appended, so a run cut short still closes it.
        """
        step = self._open()
        recorder = self.recorder
        payloads = [
            StepEnd(status=status, duration_ms=duration_ms, engine=step.engine_id),
            *routing,
            route,
            *after,
        ]
        events = [
            recorder.event(
                payload,
                ts=ts,
                ahead=ahead,
                flow_key=step.flow_key,
                step_id=step.step_id,
                agent_key=step.agent_key,
            )
            for ahead, payload in enumerate(payloads)
        ]
        lines = before(events) if before else [recorder.encode(event) for event in events]
        recorder.append_encoded(events, lines)
        self.open_step = None

    def _open(self) -> OpenStep:
        if self.open_step is None:
            raise RuntimeError("no step execution is under way")
        return self.open_step

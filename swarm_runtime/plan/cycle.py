"""One cycle's run directory: the §2 layout and §3 events, written through the run recorder.

A cycle is a run of one flow-like part, ``cycle``, whose steps are the plan's: each
execution has its ``step_start``, its ``step_end`` and ``route_decision`` (plan order:
``advance``, then ``terminate``) or its ``step_error``, a receipt and a transcript; the
run opens with ``run_created``/``run_started`` and ends with exactly one ``run_completed``.
So ``swarm runs validate`` and the contract suite read a cycle as they read a flow run.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from swarm_runtime.credentials import Credentials
from swarm_runtime.engines.base import TokenUsage
from swarm_runtime.orchestrator import payloads
from swarm_runtime.orchestrator.history import HistoryBudget
from swarm_runtime.orchestrator.receipt import ReceiptHead, base_receipt, settle
from swarm_runtime.orchestrator.recorder import RunRecorder, TranscriptLine
from swarm_runtime.orchestrator.run_book import RunBook, RunHeader
from swarm_runtime.orchestrator.state import RunState
from swarm_runtime.orchestrator.step_log import OpenStep, StepLog
from swarm_runtime.record import Record
from swarm_runtime.timeutil import Clock, format_ts, ms_between

if TYPE_CHECKING:
    from swarm_runtime.documents import (
        CostDoc,
        RoutingDoc,
        RunSpecDoc,
    )
    from swarm_runtime.plugins import RunListeners

CYCLE_FLOW = "cycle"
"""The flow key of a cycle's steps in its run (``<run>/cycle/receipts/…``)."""
PLAN_BACKEND = "plan-executor"
"""The backend a cycle's ``spec.json`` and ``meta.json`` name."""
LOCAL_ENGINE = "plan-handler"
"""The engine of a step whose handler called no model."""


class StepRecord(Record):
    """What a finished step execution leaves behind, for its receipt and transcript."""

    step_id: str
    agent: str
    started: datetime
    completed: datetime
    error: str | None
    system: str
    user: str
    lines: tuple[dict[str, Any], ...]
    """Transcript lines after the system and user ones."""
    engine: str = LOCAL_ENGINE
    engine_short: str = "local"
    mode: str = "local"
    provider: str = "none"
    model: str = "none"
    tokens: TokenUsage = TokenUsage()
    cost_usd: float | None = 0.0
    cassette: str | None = None
    request_sha256: str | None = None
    routing: RoutingDoc | None = None
    cost: CostDoc | None = None
    """The receipt's ``cost`` (SPEC §7.2) when a provider was called."""
    attempt: int = 1
    max_attempts: int = 1


class CycleRecord:
    """Creates a cycle's run dir and writes everything in it, in order."""

    def __init__(
        self,
        runs_dir: Path,
        spec: RunSpecDoc,
        *,
        clock: Clock,
        rand: Any,
        durable: bool,
        credentials: Credentials,
        listeners: RunListeners | None,
    ) -> None:
        self.spec = spec
        self.clock = clock
        self.state = RunState(HistoryBudget())
        self.state.flow(CYCLE_FLOW)  # meta.json lists the cycle's totals before any step
        self.recorder = RunRecorder.create(
            runs_dir,
            spec,
            self.state,
            clock=clock,
            rand=rand,
            durable=durable,
            credentials=credentials,
            listeners=listeners,
        )
        self.book = RunBook(
            self.recorder,
            self.state,
            RunHeader([CYCLE_FLOW], PLAN_BACKEND, spec["mode"], spec["engine"], spec["initiator"]),
            clock,
        )
        self.steps = StepLog(self.recorder, self.state, clock)
        """The events of the plan's step executions, as a flow run writes them."""

    @property
    def run_id(self) -> str:
        """The cycle's run id."""
        return self.recorder.run_id

    @property
    def path(self) -> Path:
        """The cycle's run directory."""
        return self.recorder.layout.root

    def begin(self) -> None:
        """``meta.json`` pending, ``run_created``, running, ``run_started``."""
        self.book.open()

    def start_step(self, step_id: str, agent: str, role: str, index: int, engine: str) -> datetime:
        """``step_start`` of a plan step; when it started."""
        started = self.clock()
        self.steps.start(
            OpenStep(CYCLE_FLOW, step_id, agent, started, engine),
            role=role,
            agents=[agent],
            index=index,
            iteration=0,
        )
        return started

    def emit_in_step(self, kind: str, payload: dict[str, Any]) -> None:
        """A ``tool_start``/``tool_end``/``log`` event of the step under way."""
        self.steps.emit_in_step(kind, payload)

    def finish_step(self, record: StepRecord, next_step: str | None) -> None:
        """Receipt, transcript, ``step_end`` or ``step_error``, and the route on success."""
        self._write_files(record)
        duration = ms_between(record.started, record.completed)
        ts = format_ts(record.completed)
        for totals in (self.state.totals, self.state.flow(CYCLE_FLOW)):
            totals.add_call(record.tokens, record.cost_usd)
            totals.duration_ms += duration
        if record.error is not None:
            self.steps.fail(duration, record.error, ts=ts)
            return
        for totals in (self.state.totals, self.state.flow(CYCLE_FLOW)):
            totals.steps_completed += 1
        route = payloads.route_decision(
            record.step_id,
            next_step,
            "advance" if next_step else "terminate",
            "plan_order" if next_step else "end_of_plan",
            loop_state={},
            routing_source="fast_path",
        )
        self.steps.ended("succeeded", duration, route, ts=ts)

    def _write_files(self, record: StepRecord) -> None:
        layout = self.recorder.layout
        receipt_path, transcript_path = layout.step_files(
            CYCLE_FLOW, record.step_id, record.agent, record.engine_short
        )
        started, completed = format_ts(record.started), format_ts(record.completed)
        lines: list[TranscriptLine] = [
            {"timestamp": started, "role": "system", "content": record.system},
            {"timestamp": started, "role": "user", "content": record.user},
        ]
        lines.extend({"timestamp": completed, **line} for line in record.lines)
        receipt = base_receipt(
            ReceiptHead(
                run_id=self.run_id,
                flow_key=CYCLE_FLOW,
                step_id=record.step_id,
                agent_key=record.agent,
                engine=record.engine,
                engine_short=record.engine_short,
                mode=record.mode,
                provider=record.provider,
                model=record.model,
                tokens=record.tokens,
                started_at=started,
                completed_at=completed,
                duration_ms=ms_between(record.started, record.completed),
                iteration=0,
                result_code="fatal" if record.error is not None else "ok",
                attempt=record.attempt,
                max_attempts=record.max_attempts,
            )
        )
        if record.cassette is not None:
            receipt["cassette"] = record.cassette
        if record.request_sha256 is not None:
            receipt["request_sha256"] = record.request_sha256
        if record.cost is not None:
            receipt["cost"] = record.cost
        settle(receipt, error=record.error, routing=record.routing)
        self.recorder.write_step(receipt_path, transcript_path, receipt, lines, iteration=0)

    def close_open_step(self, error: str) -> None:
        """A step cut short (Ctrl-C, a write error): its ``step_error``, no files."""
        self.steps.close_open(error)

    def complete(self, status: str, error: str | None) -> str:
        """``run_completed`` and the final ``meta.json``; when the cycle ended."""
        self.state.status, self.state.error = status, error
        self.book.emit_completed(status)
        return self.book.finish(status)

    def close(self) -> None:
        """Close the log and give the run's lock up."""
        self.recorder.close()

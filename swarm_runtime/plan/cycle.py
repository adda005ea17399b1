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
from typing import Any, cast

from msgspec import UNSET

from swarm_runtime.credentials import Credentials
from swarm_runtime.documents.payload import Payload
from swarm_runtime.documents.receipt import Cost, Mode, Receipt, ReceiptRouting
from swarm_runtime.documents.run import RunSpecDocument
from swarm_runtime.documents.run_events import Ended, RouteDecision
from swarm_runtime.engines.base import TokenUsage
from swarm_runtime.orchestrator.history import HistoryBudget
from swarm_runtime.orchestrator.receipt import tokens_of
from swarm_runtime.orchestrator.recorder import EventObserver, RunRecorder, TranscriptLine
from swarm_runtime.orchestrator.run_book import RunBook, RunHeader
from swarm_runtime.orchestrator.state import RunState
from swarm_runtime.orchestrator.step_log import OpenStep, StepLog
from swarm_runtime.record import Record
from swarm_runtime.timeutil import Clock, format_ts, ms_between

CYCLE_FLOW = "cycle"
"""The flow key of a cycle's steps in its run (``<run>/cycle/receipts/…``)."""
PLAN_BACKEND = "plan-executor"
"""The backend a cycle's ``spec.json`` and ``meta.json`` name."""
LOCAL_ENGINE = "plan-handler"
"""The engine of a step whose handler called no model."""


class StepRecord(Record):
    """What a finished step execution leaves behind, for its receipt and transcript.

    (What plan steps are stays the plan's own until plan cycles run on the run kernel.)
    """

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
    routing: ReceiptRouting | None = None
    cost: Cost | None = None
    """The receipt's ``cost`` (SPEC §7.2) when a provider was called."""
    attempt: int = 1
    max_attempts: int = 1


class CycleRecord:
    """Creates a cycle's run dir and writes everything in it, in order."""

    def __init__(
        self,
        runs_dir: Path,
        spec: RunSpecDocument,
        *,
        clock: Clock,
        rand: Any,
        durable: bool,
        credentials: Credentials,
        observer: EventObserver | None,
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
            observer=observer,
        )
        self.book = RunBook(
            self.recorder,
            self.state,
            RunHeader([CYCLE_FLOW], PLAN_BACKEND, spec.mode, spec.engine, spec.initiator),
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

    def emit_in_step(self, payload: Payload) -> None:
        """A ``tool_start``/``tool_end``/``log`` event of the step under way."""
        self.steps.emit_in_step(payload)

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
        route = RouteDecision(
            from_step=record.step_id,
            to_step=next_step,
            decision="advance" if next_step else "terminate",
            reason="plan_order" if next_step else "end_of_plan",
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
        receipt = Receipt(
            engine=record.engine,
            mode=cast(Mode, record.mode),  # an engine's mode, or local
            provider=record.provider,
            model=record.model,
            step_id=record.step_id,
            flow_key=CYCLE_FLOW,
            run_id=self.run_id,
            agent_key=record.agent,
            started_at=started,
            completed_at=completed,
            duration_ms=ms_between(record.started, record.completed),
            status="succeeded" if record.error is None else "failed",
            tokens=tokens_of(record.tokens),
            transcript_path=f"llm/{record.step_id}-{record.agent}-{record.engine_short}.jsonl",
            iteration=0,
            result_code="fatal" if record.error is not None else "ok",
            attempt=record.attempt,
            max_attempts=record.max_attempts,
            error=UNSET if record.error is None else record.error,
            routing=UNSET if record.routing is None else record.routing,
            cost=UNSET if record.cost is None else record.cost,
            cassette=UNSET if record.cassette is None else record.cassette,
            request_sha256=UNSET if record.request_sha256 is None else record.request_sha256,
        )
        self.recorder.write_step(receipt_path, transcript_path, receipt, lines, iteration=0)

    def close_open_step(self, error: str) -> None:
        """A step cut short (Ctrl-C, a write error): its ``step_error``, no files."""
        self.steps.close_open(error)

    def complete(self, status: Ended, error: str | None) -> str:
        """``run_completed`` and the final ``meta.json``; when the cycle ended."""
        self.state.status, self.state.error = status, error
        self.book.emit_completed(status)
        return self.book.finish(status)

    def close(self) -> None:
        """Close the log and give the run's lock up."""
        self.recorder.close()

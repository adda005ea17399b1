"""One step execution: its events, the verdict on the engine's answer, its files.

:class:`StepRunner` runs a step the way docs/contract/events.md and
docs/contract/steps.md#result-codes say: ``step_start``; the engine call, retried within the
execution while it answers ``retryable`` (:class:`~.recorder.EngineCaller`, with the context of
:class:`~.context.ContextMaker`); the verdict (engine failure, budgets, routing); the transcript and
the receipt (:func:`~.context.build_receipt`); then ``step_end`` + ``route_decision``, or
``step_error``, written by the :class:`StepLog` that plan cycles use too.

The events of step executions, for flow runs and plan cycles alike (docs/contract/events.md).

A step execution opens with ``step_start`` and ends with ``step_end`` + ``route_decision``
or with ``step_error``; :class:`StepLog` writes those events for every kind of run, keeps
the execution that is under way, and counts it in the run's totals and its flow's. A run
that is cut short closes the open execution here too, so each of these events is built in
one place.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, NoReturn, Protocol

import msgspec

from swarm_runtime.config import MAX_RETRY_AFTER_S
from swarm_runtime.documents.payload import Event, Payload
from swarm_runtime.documents.receipt import Receipt, ReceiptJudgement
from swarm_runtime.documents.route_events import GraphExtended
from swarm_runtime.documents.run_events import RouteDecision, StepEnd, StepError, StepStart
from swarm_runtime.engines.base import (
    HistoryItem,
    StepContext,
    StepEngine,
    StepOutcome,
    StepResult,
)
from swarm_runtime.errors import RoutingError
from swarm_runtime.flow.spec import Budget, FlowSpec, StepSpec
from swarm_runtime.orchestrator.checkpoint import Blocked, BlockedStep, RunControl
from swarm_runtime.orchestrator.context import (
    Call,
    ContextMaker,
    Execution,
    PromptParts,
    ReceiptSoFar,
    Verdict,
    build_receipt,
    step_timing,
)
from swarm_runtime.orchestrator.judging import JudgeCall
from swarm_runtime.orchestrator.recorder import (
    EngineCaller,
    RunRecorder,
    TranscriptLine,
    outcome_error,
)
from swarm_runtime.orchestrator.routing import Injections, NavigatorCall, NavigatorRoute, StepRouter
from swarm_runtime.orchestrator.state import BudgetCheck, Next, RunState, declared
from swarm_runtime.record import Record, replace
from swarm_runtime.storage.store import message_line, stamped_line
from swarm_runtime.timeutil import Clock, format_ts, ms_between, parse_ts


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
        ts: str | None = None,
    ) -> int:
        """``step_start`` of a new execution, counted in the run's totals and its flow's.

        Returns the execution's iteration (its number among the step's in its flow).
        ``ts``: its start as formatted already, when it was.
        """
        iteration = self.state.next_iteration(step.flow_key, step.step_id)
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
            ts=ts or format_ts(step.started),
        )
        self.open_step = step
        return iteration

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
        ts = ts or format_ts(recorder.clock())  # one write: one moment for all its events
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


Completed = Callable[[list[Event], Next], list[str]]
"""Called once a step is complete, with its ``step_end``, ``route_decision`` and the events
around them (not yet written) and where the run goes next: the run checkpoints there and
gives back the events' encoded lines, which are then appended."""


class StepEngineSource(Protocol):
    """Where a run's engines come from (:class:`~.plan.StepEngines`)."""

    def engine_for(self, flow: FlowSpec, step: StepSpec) -> StepEngine:
        """The engine that runs ``step``."""

    def engine(self, engine_id: str | None = None) -> StepEngine:
        """The engine ``engine_id`` of the run's mode (a judge's ``engine:``)."""


class StepSettings(Record):
    """How steps are run: retries, the sleep and jitter between them, where the repo is."""

    clock: Clock
    sleep: Callable[[float], None]
    jitter: Callable[[], float]
    max_attempts: int
    repo_root: Path
    max_retry_after_s: float = MAX_RETRY_AFTER_S
    """The longest wait a server's ``retry-after`` may ask for before a retry."""
    result_observer: Callable[[str, StepResult], None] | None = None
    navigator: str = "llm"
    """``llm``: a navigator step's move is asked of the navigator; ``deterministic``: the
    first candidate that holds is taken with no call (docs/flows.md#navigator)."""
    injections: Injections = Injections()
    """The utility flows a step may inject, and how deep
    (docs/flows.md#detours-and-utility-flows)."""
    run_budget: Budget | None = None
    """The run's budget (docs/budgets.md), checked after every call with the step's and flow's."""


class StepRunner:
    """Runs step executions of one run and records each of them."""

    def __init__(
        self,
        *,
        recorder: RunRecorder,
        state: RunState,
        control: RunControl,
        settings: StepSettings,
        prompts: PromptParts,
        engines: StepEngineSource,
        spec: Mapping[str, Any],
        completed: Completed,
    ) -> None:
        self.recorder = recorder
        self.completed = completed
        self.state = state
        self.control = control
        self.settings = settings
        self.prompts = prompts
        self.engine_for = engines.engine_for
        self.spec = dict(spec)
        self.log = StepLog(recorder, state, settings.clock)
        self.budgets = BudgetCheck(settings.run_budget)
        self.router = StepRouter(
            state,
            settings.navigator,
            settings.injections,
            NavigatorCall(recorder, state, control, settings.clock),
            self.spec,
        )
        self.judges = JudgeCall(recorder, state, control, settings.clock, engines.engine)
        self.contexts = ContextMaker(
            prompts=prompts, layout=recorder.layout, repo_root=settings.repo_root, spec=self.spec
        )
        self._files: dict[tuple[str, str, str], tuple[str, str]] = {}
        """Each step's receipt and transcript paths, per engine: named once per run."""
        self.caller = EngineCaller(
            recorder=recorder,
            control=control,
            clock=settings.clock,
            sleep=settings.sleep,
            jitter=settings.jitter,
            max_attempts=settings.max_attempts,
            max_retry_after_s=settings.max_retry_after_s,
        )

    def run(
        self,
        flow: FlowSpec,
        step: StepSpec,
        end: str | None,
        *,
        blocked: BlockedStep | None = None,
        external_input: str | None = None,
        started: datetime | None = None,
    ) -> Next | None:
        """Run ``step`` once; where the run goes next, or None when the step failed the run.

        ``blocked`` re-invokes a step that answered ``blocked``: it is still open (no new
        ``step_start``) and keeps its iteration; ``external_input`` is what it waited for.
        ``started``: when it began, if read already. Raises :class:`Blocked` on ``blocked``.
        """
        engine = self.engine_for(flow, step)
        rendered = self.state.history.render()
        facts = self.state.facts.prompt_section(self.state.history.budget.total_chars // 4)
        user = self.prompts.user(rendered, external_input, facts)
        started = started or self.settings.clock()
        iteration, started_at = self._open(flow, step, engine, blocked, started)
        ctx = self.contexts.make(flow, step, iteration, rendered, user)
        if external_input is not None:
            ctx = replace(ctx, extra={**ctx.extra, "input": external_input})
        call, completed = self._call(engine, ctx, flow, step, iteration)
        outcome = call.outcome
        kept = self.recorder.write_artifacts(flow.key, step.id, iteration, outcome.result.artifacts)
        span = step_timing((started, completed), call, started_at)
        made = Execution(
            self.recorder.run_id, flow, step, engine, call, iteration, rendered, span, list(kept)
        )
        error = call.error or outcome_error(step, outcome, call.max_attempts)
        judged = self._judge(engine, ctx, flow, step, outcome) if error is None else None
        over = self.budgets.over(self.state, flow, step, call, span) if error is None else None
        error = error or over
        reply = outcome.text or outcome.result.output
        seen = self.state.facts.seen_by_routing(reply, outcome.handoff, flow.key, step.id)
        moved: NavigatorRoute | None = None
        if error is None:
            try:
                so_far = ReceiptSoFar(made)
                moved = self.router.route(flow, step, end, outcome, so_far, (engine, ctx), seen)
            except RoutingError as exc:
                error = str(exc)
        decision = moved.decision if moved is not None else None
        routing = decision.receipt_routing if decision is not None else None
        # A broken budget is a fatal failure, whatever the engine answered (docs/budgets.md).
        receipt = build_receipt(made, Verdict(error, routing, over_budget=bool(over)))
        if judged:
            receipt = msgspec.structs.replace(receipt, judgements=judged)
        self._write(receipt, made, user)
        if error is not None or moved is None:
            self._fail(flow, step, receipt.duration_ms, error or "no routing decision")
            return None
        return self._succeed(flow, step, receipt.duration_ms, outcome, iteration, moved)

    def _call(
        self, engine: StepEngine, ctx: StepContext, flow: FlowSpec, step: StepSpec, iteration: int
    ) -> tuple[Call, datetime]:
        """The engine's call and when it ended, counted; :class:`Blocked` on ``blocked``."""
        call = self.caller.call(engine, ctx, flow, step)
        completed = self.settings.clock()
        self._count_call(flow, call)
        if self.settings.result_observer is not None:
            self.settings.result_observer(flow.key, call.outcome.result)
        if call.error is None and call.outcome.result_code == "blocked":
            self._block(call.outcome, iteration)
        return call, completed

    def _judge(
        self,
        engine: StepEngine,
        ctx: StepContext,
        flow: FlowSpec,
        step: StepSpec,
        outcome: StepOutcome,
    ) -> list[ReceiptJudgement] | None:
        """The step's judges on its reply: their events; the receipt's entries.

        Before the budgets are checked: the judges' calls count in the flow's and the run's.

        See docs/judges.md#judges.
        """
        if not step.judges or outcome.result_code != "ok":
            return None
        events, entries = self.judges.grade(engine, ctx, flow, step, outcome)
        for event in events:
            self.log.emit_in_step(event)
        return entries

    def _count_call(self, flow: FlowSpec, call: Call) -> None:
        """Add the engine call's tokens and cost (every attempt's) to the run's and flow's."""
        tokens, cost = call.tokens, call.cost_usd
        for totals in (self.state.totals, self.state.flow(flow.key)):
            totals.add_call(tokens, cost)

    def _block(self, outcome: StepOutcome, iteration: int) -> NoReturn:
        """The engine answered ``blocked`` (its call counted): leave the step open, pause."""
        open_step = self.log.open_step
        assert open_step is not None
        raise Blocked(
            BlockedStep(
                open_step.flow_key,
                open_step.step_id,
                open_step.agent_key,
                iteration,
                outcome.result.error or "the step waits for external input",
                open_step.engine_id,
                format_ts(open_step.started),
            )
        )

    # -- before the call -----------------------------------------------------------------

    def _open(
        self,
        flow: FlowSpec,
        step: StepSpec,
        engine: StepEngine,
        blocked: BlockedStep | None,
        started: datetime,
    ) -> tuple[int, str]:
        """Open the execution: its iteration, and ``started`` formatted.

        A new one gets its ``step_start``; a ``blocked`` step re-invoked is still open
        and keeps its iteration.
        """
        started_at = format_ts(started)
        if blocked is None:
            iteration = self.log.start(
                OpenStep(flow.key, step.id, step.primary_agent, started, engine.engine_id),
                role=step.role,
                agents=step.agents,
                index=flow.index_of(step.id) + 1,
                ts=started_at,
            )
            return iteration, started_at
        iteration = blocked.iteration
        self.log.reopen(
            OpenStep(
                flow.key,
                step.id,
                step.primary_agent,
                parse_ts(blocked.started_at),
                engine.engine_id,
            )
        )
        return iteration, started_at

    # -- after the call ------------------------------------------------------------------

    def _write(self, receipt: Receipt, made: Execution, user: str) -> None:
        flow, step = made.flow, made.step
        short = made.engine.engine_short
        files = self._files.get((flow.key, step.id, short))
        if files is None:
            files = self._files[(flow.key, step.id, short)] = self.recorder.layout.step_files(
                flow.key, step.id, step.primary_agent, short
            )
        receipt_path, transcript_path = files
        started_ts, completed_ts = receipt.started_at, receipt.completed_at
        asked = made.call.outcome.prompt
        system = asked.system if asked is not None else self.prompts.system(flow, step)
        lines: list[TranscriptLine] = [
            message_line(system, "system", started_ts),
            message_line(asked.user if asked else user, "user", started_ts),
        ]
        lines.extend(stamped_line(line, completed_ts) for line in made.call.outcome.transcript)
        self.recorder.write_step(
            receipt_path, transcript_path, receipt, lines, iteration=made.iteration
        )

    def _fail(self, flow: FlowSpec, step: StepSpec, duration: int, error: str) -> None:
        self.log.fail(duration, error)
        self.state.status, self.state.error = "failed", f"{flow.key}/{step.id}: {error}"

    def _succeed(
        self,
        flow: FlowSpec,
        step: StepSpec,
        duration: int,
        outcome: StepOutcome,
        iteration: int,
        moved: NavigatorRoute,
    ) -> Next:
        state, decision = self.state, moved.decision
        skipped = outcome.result_code == "skipped"
        state.totals.steps_completed += 1
        state.flow(flow.key).steps_completed += 1
        item = HistoryItem(flow.key, step.id, step.primary_agent, iteration, outcome.result.output)
        state.history.add(item)
        self.recorder.append_history(item)
        found = declared(outcome.text or outcome.result.output, outcome.handoff)
        entries, noted = state.facts.add(found, flow.key, step.id, iteration)
        if entries:
            self.recorder.append_journal("facts", entries)
        proposed = [
            {**msgspec.structs.asdict(p), "flow": flow.key, "iteration": iteration}
            for p in moved.events
            if isinstance(p, GraphExtended)
        ]
        if proposed:  # graph_proposals.jsonl: what the navigator suggested, never followed
            self.recorder.append_journal("graph_proposals", proposed)
        counted = moved.golden if moved.detour is not None and moved.golden else decision
        loop_state = state.loops.after(flow.key, step, counted.decision, skipped=skipped)
        moves, nxt = self.router.next(flow, step, moved)
        if decision.decision == "loop":
            state.totals.loops += 1
            state.flow(flow.key).loops += 1
        self.log.ended(
            "skipped" if skipped else "succeeded",
            duration,
            RouteDecision(
                from_step=step.id,
                to_step=decision.to_step,
                decision=decision.decision,
                reason=decision.reason,
                loop_state=loop_state,
                routing_source=decision.source,
            ),
            routing=moved.events,
            after=[*noted, *moves],
            before=lambda events: self.completed(events, nxt),
        )
        return nxt

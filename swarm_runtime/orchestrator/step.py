"""One step execution: its events, the verdict on the engine's answer, its files.

:class:`StepRunner` runs a step the way SPEC §3.3 and §7.3 say: ``step_start``; the engine
call, retried within the execution while it answers ``retryable`` (:mod:`.attempts`, with
the context of :mod:`.step_context`); the verdict (engine failure, budgets, routing); the
transcript and the receipt (:mod:`.receipt`); then ``step_end`` + ``route_decision``, or
``step_error``, written by the :class:`~.step_log.StepLog` that plan cycles use too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, NoReturn

import msgspec

from swarm_runtime.config import MAX_RETRY_AFTER_S
from swarm_runtime.documents.payload import Event
from swarm_runtime.documents.receipt import Receipt
from swarm_runtime.documents.route_events import GraphExtended
from swarm_runtime.documents.run_events import RouteDecision
from swarm_runtime.engines.base import (
    HistoryItem,
    StepEngine,
    StepOutcome,
    StepResult,
)
from swarm_runtime.errors import RoutingError
from swarm_runtime.flow.spec import Budget, FlowSpec, StepSpec
from swarm_runtime.orchestrator import stack
from swarm_runtime.orchestrator.attempts import EngineCaller
from swarm_runtime.orchestrator.budgets import BudgetCheck, Spent
from swarm_runtime.orchestrator.checkpoint import BlockedStep
from swarm_runtime.orchestrator.control import Blocked, RunControl
from swarm_runtime.orchestrator.facts import declared
from swarm_runtime.orchestrator.history import RenderedHistory
from swarm_runtime.orchestrator.navigator import (
    Injections,
    NavigatorRoute,
)
from swarm_runtime.orchestrator.navigator_call import NavigatorCall
from swarm_runtime.orchestrator.prompt import PromptParts
from swarm_runtime.orchestrator.receipt import (
    Call,
    Execution,
    ReceiptSoFar,
    Verdict,
    build_receipt,
    step_timing,
)
from swarm_runtime.orchestrator.recorder import RunRecorder, TranscriptLine
from swarm_runtime.orchestrator.state import RunState
from swarm_runtime.orchestrator.step_context import ContextMaker
from swarm_runtime.orchestrator.step_log import OpenStep, StepLog
from swarm_runtime.orchestrator.step_route import StepRouter
from swarm_runtime.orchestrator.verdict import outcome_error
from swarm_runtime.record import Record, replace
from swarm_runtime.timeutil import Clock, format_ts, ms_between, parse_ts

Completed = Callable[[list[Event], stack.Next], list[str]]
"""Called once a step is complete, with its ``step_end``, ``route_decision`` and the events
around them (not yet written) and where the run goes next: the run checkpoints there and
gives back the events' encoded lines, which are then appended."""


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
    first candidate that holds is taken with no call (SPEC §4.5)."""
    injections: Injections = Injections()
    """The utility flows a step may inject, and how deep (SPEC §4.6)."""
    run_budget: Budget | None = None
    """The run's budget (SPEC §10.7), checked after every call with the step's and flow's."""


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
        engine_for: Callable[[FlowSpec, StepSpec], StepEngine],
        spec: Mapping[str, Any],
        completed: Completed,
    ) -> None:
        self.recorder = recorder
        self.completed = completed
        self.state = state
        self.control = control
        self.settings = settings
        self.prompts = prompts
        self.engine_for = engine_for
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
        self.contexts = ContextMaker(
            prompts=prompts, layout=recorder.layout, repo_root=settings.repo_root, spec=self.spec
        )
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
    ) -> stack.Next | None:
        """Run ``step`` once; where the run goes next, or None when the step failed the run.

        ``blocked`` re-invokes a step that answered ``blocked``: it is still open (no new
        ``step_start``) and keeps its iteration; ``external_input`` is what it waited for.
        Raises :class:`Blocked` when the engine answers ``blocked``.
        """
        engine = self.engine_for(flow, step)
        rendered = self.state.history.render()
        facts = self.state.facts.prompt_section(self.state.history.budget.total_chars // 4)
        user = self.prompts.user(rendered, external_input, facts)
        iteration, started = self._open(flow, step, engine, blocked)
        ctx = self.contexts.make(flow, step, iteration, rendered, user)
        if external_input is not None:
            ctx = replace(ctx, extra={**ctx.extra, "input": external_input})
        call = self.caller.call(engine, ctx, flow, step)
        completed = self.settings.clock()
        outcome = call.outcome
        self._count_call(flow, call)
        if self.settings.result_observer is not None:
            self.settings.result_observer(flow.key, outcome.result)
        if call.error is None and outcome.result_code == "blocked":
            self._block(flow, step, engine, outcome, iteration)
        error = call.error or outcome_error(step, outcome, call.max_attempts)
        over = error is None and self._over_budget(flow, step, call, started, completed)
        if over:
            error = over
        made = self._execution(flow, step, engine, call, iteration, rendered, (started, completed))
        moved: NavigatorRoute | None = None
        if error is None:
            try:
                so_far = ReceiptSoFar(made)
                moved = self.router.route(flow, step, end, outcome, so_far, (engine, ctx))
            except RoutingError as exc:
                error = str(exc)
        decision = moved.decision if moved is not None else None
        routing = decision.receipt_routing if decision is not None else None
        # SPEC §10.7: a broken budget is a fatal failure, whatever the engine answered.
        receipt = build_receipt(made, Verdict(error, routing, over_budget=bool(over)))
        self._write(receipt, made, user)
        if error is not None or moved is None:
            self._fail(flow, step, receipt.duration_ms, error or "no routing decision")
            return None
        return self._succeed(flow, step, receipt.duration_ms, outcome, iteration, moved)

    def _count_call(self, flow: FlowSpec, call: Call) -> None:
        """Add the engine call's tokens and cost (every attempt's) to the run's and flow's."""
        tokens, cost = call.tokens, call.cost_usd
        for totals in (self.state.totals, self.state.flow(flow.key)):
            totals.add_call(tokens, cost)

    def _over_budget(
        self, flow: FlowSpec, step: StepSpec, call: Call, started: datetime, completed: datetime
    ) -> str | None:
        """The step's, flow's or run's budget the execution broke (SPEC §10.7), or None."""
        if flow.budget is None and step.budget is None and self.budgets.run is None:
            return None
        spent = Spent(call.tokens.total, call.cost_usd, ms_between(started, completed))
        return self.budgets.check(self.state, flow, step, spent)

    def _block(
        self,
        flow: FlowSpec,
        step: StepSpec,
        engine: StepEngine,
        outcome: StepOutcome,
        iteration: int,
    ) -> NoReturn:
        """The engine answered ``blocked`` (its call counted): leave the step open, pause."""
        open_step = self.log.open_step
        assert open_step is not None
        raise Blocked(
            BlockedStep(
                flow.key,
                step.id,
                step.primary_agent,
                iteration,
                outcome.result.error or "the step waits for external input",
                engine.engine_id,
                format_ts(open_step.started),
            )
        )

    # -- before the call -----------------------------------------------------------------

    def _open(
        self, flow: FlowSpec, step: StepSpec, engine: StepEngine, blocked: BlockedStep | None
    ) -> tuple[int, datetime]:
        """Open the execution: its iteration, and when it started.

        A new one gets its ``step_start``; a ``blocked`` step re-invoked is still open
        and keeps its iteration.
        """
        if blocked is None:
            iteration = self.state.next_iteration(flow.key, step.id)
            started = self.settings.clock()
            self._start(flow, step, engine, iteration, started)
            return iteration, started
        iteration, started = blocked.iteration, self.settings.clock()
        self.log.reopen(
            OpenStep(
                flow.key,
                step.id,
                step.primary_agent,
                parse_ts(blocked.started_at),
                engine.engine_id,
            )
        )
        return iteration, started

    def _start(
        self,
        flow: FlowSpec,
        step: StepSpec,
        engine: StepEngine,
        iteration: int,
        started: datetime,
    ) -> None:
        self.log.start(
            OpenStep(flow.key, step.id, step.primary_agent, started, engine.engine_id),
            role=step.role,
            agents=step.agents,
            index=flow.index_of(step.id) + 1,
            iteration=iteration,
        )

    # -- after the call ------------------------------------------------------------------

    def _execution(
        self,
        flow: FlowSpec,
        step: StepSpec,
        engine: StepEngine,
        call: Call,
        iteration: int,
        rendered: RenderedHistory,
        span: tuple[datetime, datetime],
    ) -> Execution:
        """The execution's artifacts written: all its receipt says but the verdict."""
        artifacts = self.recorder.write_artifacts(
            flow.key, step.id, iteration, call.outcome.result.artifacts
        )
        return Execution(
            self.recorder.run_id,
            flow,
            step,
            engine,
            call,
            iteration,
            rendered,
            step_timing(span, call),
            list(artifacts),
        )

    def _write(self, receipt: Receipt, made: Execution, user: str) -> None:
        flow, step = made.flow, made.step
        receipt_path, transcript_path = self.recorder.layout.step_files(
            flow.key, step.id, step.primary_agent, made.engine.engine_short
        )
        started_ts, completed_ts = receipt.started_at, receipt.completed_at
        asked = made.call.outcome.prompt
        system = asked.system if asked is not None else self.prompts.system(flow, step)
        lines: list[TranscriptLine] = [
            {"content": system, "role": "system", "timestamp": started_ts},
            {"content": asked.user if asked else user, "role": "user", "timestamp": started_ts},
        ]
        lines.extend({"timestamp": completed_ts, **line} for line in made.call.outcome.transcript)
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
    ) -> stack.Next:
        state, decision = self.state, moved.decision
        skipped = outcome.result_code == "skipped"
        state.totals.steps_completed += 1
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

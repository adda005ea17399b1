"""The lifecycle of one run around its step loop: begin, run the flows, pause or complete.

SPEC §3.3 and §8: ``run_created``/``run_started`` (or, for a resumed run, the events that
close what a crash left open and ``run_resumed``); the flows from where the run stands;
then a pause (a request or a ``blocked`` step: ``run_pausing``, ``run_paused``, then status
``paused``) or the end (a stop adds ``run_stopping`` and ``run_stopped``; every end has
exactly one ``run_completed``). A checkpoint is written after every completed step.
"""

from __future__ import annotations

import contextlib
from functools import partial
from typing import TYPE_CHECKING, Any, cast

import msgspec

from swarm_runtime.documents.run_events import (
    Ended,
    RunPaused,
    RunPausing,
    RunStarted,
    RunStopped,
    RunStopping,
)
from swarm_runtime.errors import StorageError
from swarm_runtime.orchestrator.checkpoint import BlockedStep, Checkpoint, Position
from swarm_runtime.orchestrator.control import Blocked, Interrupted
from swarm_runtime.orchestrator.deps import RunContext
from swarm_runtime.orchestrator.navigator import Injections
from swarm_runtime.orchestrator.plan import FlowSlice, RunOutcome, RunSpec
from swarm_runtime.orchestrator.prompt import PromptParts
from swarm_runtime.orchestrator.recorder import RunRecorder
from swarm_runtime.orchestrator.resume import Reopened
from swarm_runtime.orchestrator.run_book import RunBook, RunHeader
from swarm_runtime.orchestrator.run_budget import RunBudget
from swarm_runtime.orchestrator.stack import Next
from swarm_runtime.orchestrator.state import RunState
from swarm_runtime.orchestrator.step import StepRunner, StepSettings
from swarm_runtime.storage.store import encoded
from swarm_runtime.timeutil import format_ts, ms_between

if TYPE_CHECKING:
    from datetime import datetime


class RunLifecycle:
    """One run while it executes: the lifecycle around the step loop."""

    def __init__(
        self,
        context: RunContext,
        spec: RunSpec,
        plan: list[FlowSlice],
        recorder: RunRecorder,
        state: RunState,
    ) -> None:
        self.context = context
        self.spec = spec
        self.plan = plan
        deps, limits = context.deps, context.limits
        self.clock = deps.clock
        self.state = state
        self.recorder = recorder
        self.flows = [part.flow.key for part in plan]
        """The flows this run runs: those of the spec, less what a slice leaves out."""
        self.budget = RunBudget.of(limits, plan)
        recorder.dir_size.limit = self.budget.size  # no write may take the run dir past it
        choice, heard = context.engine, recorder.listeners
        self.book = RunBook(
            recorder,
            state,
            RunHeader(self.flows, spec.backend, choice.mode, choice.engine_id, spec.initiator),
            deps.clock,
        )
        self.flow_index = 0
        self.failure: Exception | None = None
        """What made the run fail, when it was an exception (a write error, an engine bug)."""
        self._timing: tuple[str, datetime, int] | None = None
        """The step under way: its flow, when it began, the ms of it counted so far."""
        context.control.control_file = recorder.layout.control
        self.steps = StepRunner(
            recorder=recorder,
            state=state,
            control=context.control,
            settings=StepSettings(
                clock=deps.clock,
                sleep=deps.sleep,
                jitter=deps.jitter,
                max_attempts=limits.max_attempts,
                max_retry_after_s=limits.max_retry_after_s,
                repo_root=context.repo_root,
                result_observer=partial(heard.step_result, recorder.layout.root) if heard else None,
                navigator=choice.navigator,
                injections=Injections(
                    utilities=tuple(context.flows.utilities()),
                    entry=lambda key: context.flows.get(key).steps[0].id,
                    max_depth=limits.max_depth,
                ),
                run_budget=limits.budget,
            ),
            prompts=PromptParts(context.flows, spec.params, context.flows.system_prompts),
            engine_for=context.engines.engine_for,
            spec=msgspec.to_builtins(
                spec.as_document(mode=context.engine.mode, engine=context.engine.engine_id)
            ),
            completed=self._checkpoint,
        )

    @classmethod
    def create(cls, context: RunContext, spec: RunSpec, plan: list[FlowSlice]) -> RunLifecycle:
        """A new run: its directory, lock and ``spec.json``."""
        deps, choice = context.deps, context.engine
        state = RunState(context.limits.history_budget)
        spec_doc = spec.as_document(
            mode=choice.mode, engine=choice.engine_id, origin=context.origin
        )
        recorder = RunRecorder.create(
            context.runs_dir,
            spec_doc,
            state,
            clock=deps.clock,
            rand=deps.rand,
            durable=context.limits.durable,
            credentials=context.credentials,
            listeners=deps.plugins.for_run(),
        )
        return cls(context, spec, plan, recorder, state)

    def hand_over(self) -> None:
        """Leave the new run unexecuted for a worker: ``meta.json`` pending, the lock let go."""
        try:
            self.book.set_status("pending")
        finally:
            self.recorder.close()
            self.context.engines.close()

    def execute(self, reopened: Reopened | None = None) -> RunOutcome:
        """Run the run to its end or pause; its listeners hear how (an exception too)."""
        outcome: RunOutcome | None = None
        try:
            outcome = self._execute(reopened)
            return outcome
        finally:
            self.book.tell_end(outcome)

    def _execute(self, reopened: Reopened | None) -> RunOutcome:
        interrupted: Interrupted | None = None
        completed: str | None = None
        try:
            if reopened is not None:
                self.book.created_at = reopened.created_at or self.book.created_at
                if reopened.finished is not None:
                    return self._finish_bookkeeping(reopened.finished)
            interrupted = self._run_flows(reopened)
            if interrupted is not None and interrupted.pause:
                pass  # paused: the run goes on with `swarm resume`, it is not complete
            else:
                completed = self._complete(interrupted)
        finally:
            self.recorder.close()
            self.context.engines.close()
        return RunOutcome(
            run_id=self.recorder.run_id,
            status=self.state.status,
            error=self.state.error,
            path=self.recorder.layout.root,
            summary=msgspec.to_builtins(self.book.summary(completed)),
            interrupted=interrupted is not None,
            aborted=interrupted is not None and interrupted.aborted,
            paused=interrupted is not None and interrupted.pause,
            blocked=self.state.error if self.state.status == "paused" else None,
            budget_use=self.steps.budgets.shares(self.state, self.context.flows.get),
        )

    def _finish_bookkeeping(self, completed: dict[str, Any]) -> RunOutcome:
        """A run killed after its ``run_completed``: write the ``meta.json`` it missed."""
        payload = completed["payload"]
        self.state.status = cast(Ended, payload["status"])  # the log's, as resume read it
        self.state.error = payload.get("error")
        self.book.set_status(self.state.status, str(completed["ts"]))
        return RunOutcome(
            run_id=self.recorder.run_id,
            status=self.state.status,
            error=self.state.error,
            path=self.recorder.layout.root,
            summary=msgspec.to_builtins(self.book.summary(str(completed["ts"]))),
        )

    def _begin(self, reopened: Reopened | None) -> Position:
        """The opening events of a new or resumed run; where its steps start."""
        recorder = self.recorder
        if reopened is None or reopened.previous == "queued":
            self.book.open()  # a new run, or one queued for a worker: nothing to resume
            return Position(0)
        if reopened.needs_created:
            self.book.created()
        for event in reopened.closing:  # the step a crash left open
            recorder.emit(**event)
        self.state.error = None
        self.book.set_status("running")
        recorder.emit(reopened.resumed_payload())
        if reopened.needs_started:
            recorder.emit(RunStarted(mode="stepwise", routing_enabled=True))
        return reopened.position

    def _count_time(self) -> None:
        """Add the time of the step under way, so far, to its flow's totals."""
        if self._timing is not None:
            key, began, counted = self._timing
            spent = ms_between(began, self.clock())
            self.state.flow(key).duration_ms += spent - counted
            self._timing = (key, began, spent)

    def _checkpoint(self, pending: list[Any], nxt: Next) -> list[str]:
        """After a completed step: save where the run goes next (SPEC §8.2).

        The pending events' lines are returned, for the log. Inside an injected flow the
        position's step is of that flow (the stack, saved with it, says which).
        """
        position = (
            Position(self.flow_index, nxt.step)
            if nxt.step is not None
            else Position(self.flow_index + 1)
        )
        recorder = self.recorder
        recorder.lock.renew_at_boundary()  # the lease goes on (SPEC §8.3)
        self._count_time()  # a resume from this checkpoint counts the step's time too
        lines = [recorder.encode(event) for event in pending]
        recorder.write_checkpoint(
            Checkpoint.capture(
                self.state,
                recorder.run_id,
                position,
                history=recorder.history_mark,
                pending=[encoded(line) for line in lines],
            )
        )
        return lines

    def _run_flows(self, reopened: Reopened | None) -> Interrupted | None:
        """Open the run and run the planned flows; how an interruption ended them, if one did."""
        state = self.state
        try:
            try:
                start = self._begin(reopened)
                blocked = reopened.blocked if reopened is not None else None
                external = reopened.external_input if reopened is not None else None
                for index in range(start.flow_index, len(self.plan)):
                    self.flow_index = index
                    part = self.plan[index]
                    first = start.step_id if index == start.flow_index and start.step_id else None
                    if not self._run_flow(part, first or part.first_step, blocked, external):
                        break
                    blocked = external = None
            except Blocked as exc:
                self._pause_blocked(exc.step)
                return Interrupted(aborted=False, pause=True, reason=exc.step.reason)
            except (KeyboardInterrupt, Interrupted) as exc:
                stop = exc if isinstance(exc, Interrupted) else Interrupted(aborted=True)
                if stop.pause:
                    self._pause(stop.reason)
                    return stop
                self._close_open_step("interrupted")
                state.status = "stopped"
                state.error = str(stop) if not stop.aborted else "interrupted"
                return stop
        except Exception as exc:  # storage or engine trouble, also while pausing or stopping
            with contextlib.suppress(StorageError):  # a full disk may refuse this line too
                self._close_open_step(f"{type(exc).__name__}: {exc}")
            state.status, state.error = "failed", f"{type(exc).__name__}: {exc}"
            self.failure = exc
        return None

    def _pause(self, reason: str) -> None:
        """At a step boundary: ``run_pausing``, ``run_paused``, then status paused.

        The log comes first: ``meta.json`` never says paused before the log does, so a
        resume asked for on seeing "paused" finds ``run_paused`` (and waits for this
        process to let go of the run, SPEC §8.2).
        """
        self.recorder.emit(RunPausing(reason=reason))
        self.recorder.emit(RunPaused(reason=reason))
        self.state.error = None
        self.book.set_status("paused")

    def _pause_blocked(self, step: BlockedStep) -> None:
        """A blocked step: checkpoint it (still open), then pause the run."""
        recorder = self.recorder
        reason = f"blocked: {step.reason}"
        where = f"{step.flow_key}/{step.step_id}"
        pending = [
            recorder.event(
                payload,
                flow_key=step.flow_key,
                step_id=step.step_id,
                agent_key=step.agent_key,
                ahead=ahead,
            )
            for ahead, payload in enumerate(
                (RunPausing(reason=reason, step=where), RunPaused(reason=reason, step=where))
            )
        ]
        recorder.write_checkpoint(
            Checkpoint.capture(
                self.state,
                recorder.run_id,
                Position(self.flow_index, step.step_id),
                history=recorder.history_mark,
                pending=pending,
                blocked=step,
            )
        )
        self.steps.log.leave_open()  # it stays open in the log, on purpose
        recorder.append_all(pending)  # the log says paused before meta.json does
        self.state.error = reason
        self.book.set_status("paused")

    def _complete(self, interrupted: Interrupted | None) -> str:
        """Append ``run_completed`` and write the final ``meta.json``."""
        state = self.state
        status = state.status
        final: Ended = (
            "failed" if status == "failed" else "stopped" if status == "stopped" else "succeeded"
        )
        if state.seq == 0:
            # Not even run_created could be written (a full disk): leave no run behind.
            self.recorder.discard()
            if isinstance(self.failure, StorageError):
                raise self.failure
            raise StorageError(state.error or "the run could not be started")
        try:
            if interrupted is not None:
                self.recorder.emit(RunStopping(reason=interrupted.reason))
                self.recorder.emit(RunStopped(reason=interrupted.reason))
            self.book.emit_completed(final)
        except StorageError as exc:
            # The log cannot be written (disk full, …): meta.json says why it ends open.
            earlier = f"{state.error}; then " if state.error else ""
            state.status = "failed"
            state.error = f"{earlier}run_completed could not be appended: {exc}"
            with contextlib.suppress(StorageError):
                self.book.set_status("failed", format_ts(self.clock()))
            raise
        return self.book.finish(final)

    def _close_open_step(self, error: str) -> None:
        self.steps.log.close_open(error)

    def _run_flow(
        self,
        part: FlowSlice,
        first: str,
        blocked: BlockedStep | None,
        external_input: str | None,
    ) -> bool:
        """Run one flow from ``first``; False when the run failed and must not go on.

        Detours and utility flows it takes run here too (on the run's flow stack), each
        step's time counted in the totals of the flow it belongs to.
        """
        frames = self.state.stack
        flow = self.context.flows.get(frames[-1].injected_flow) if frames else part.flow
        current: str | None = first
        while current is not None:
            if blocked is None:  # a blocked step re-invoked is no new boundary, no new execution
                self.context.control.check_boundary()
                spent = self.budget.spent(
                    f"{flow.key}/{current}",
                    executed=self.state.totals.executed,
                    size=self.recorder.size,
                )
                if spent is not None:
                    self.state.status, self.state.error = "failed", spent
                    return False
            end = part.end if not frames else frames[-1].only_step
            self._timing = (flow.key, self.clock(), 0)
            nxt = self.steps.run(
                flow, flow.step(current), end, blocked=blocked, external_input=external_input
            )
            blocked = external_input = None
            self._count_time()
            self._timing = None
            if nxt is None:
                return False
            if nxt.flow != flow.key:
                flow = self.context.flows.get(nxt.flow)
            current = nxt.step
        return True

"""The stepwise orchestrator: runs flows one step at a time and records everything.

The run loop lives here: plan the run (:mod:`.plan`), create its directory
(:mod:`.recorder`), then run each flow step by step (:mod:`.step`) until routing ends it.

Every run, whatever runs its steps (flow runs and plan cycles), opens the same way
(``meta.json`` pending, ``run_created``, running, ``run_started``) and ends the same way
(``run_completed``, then the final ``meta.json``); :class:`RunBook` does both, so each is
built in one place.

The events between (docs/contract/events.md, docs/run-control.md): ``run_created`` and
``run_started`` (or, for a resumed run, the events that close what a crash left open and
``run_resumed``); the flows from where the run stands; then a pause (a request or a
``blocked`` step: ``run_pausing``, ``run_paused``, then status ``paused``) or the end (a stop
adds ``run_stopping`` and ``run_stopped``). A checkpoint is written after every completed
step.

The sequencing invariants of docs/contract/events.md#where-events-may-stand hold on every path out
of a run: a failing step, an engine that raises, a routing error and Ctrl-C all end in exactly one
``run_completed``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import msgspec

from swarm_runtime.credentials import Credentials
from swarm_runtime.documents.run import RunStatus, RunSummary
from swarm_runtime.documents.run_events import (
    Ended,
    RunCreated,
    RunPaused,
    RunPausing,
    RunStarted,
    RunStopped,
    RunStopping,
)
from swarm_runtime.engines.faults import FaultPlan
from swarm_runtime.errors import RunControlError, StorageError
from swarm_runtime.flow.budget_input import budget_document
from swarm_runtime.flow.registry import FlowRegistry
from swarm_runtime.orchestrator.checkpoint import (
    Blocked,
    BlockedStep,
    Checkpoint,
    Interrupted,
    Position,
    RunControl,
)
from swarm_runtime.orchestrator.context import PromptParts
from swarm_runtime.orchestrator.plan import (
    EngineChoice,
    FlowSlice,
    RunBudget,
    RunContext,
    RunDeps,
    RunLimits,
    RunSpec,
    StepEngines,
    injectable,
    plan_run,
)
from swarm_runtime.orchestrator.recorder import RunRecorder
from swarm_runtime.orchestrator.resume import Reopened, read_run_spec, reopen_run
from swarm_runtime.orchestrator.routing import Injections
from swarm_runtime.orchestrator.state import Next, RunOutcome, RunState
from swarm_runtime.orchestrator.step import StepRunner, StepSettings
from swarm_runtime.record import Record
from swarm_runtime.storage.store import encoded
from swarm_runtime.timeutil import Clock, format_ts, ms_between

if TYPE_CHECKING:
    from datetime import datetime

if TYPE_CHECKING:
    from swarm_runtime.orchestrator.state import RunOutcome


class RunHeader(Record):
    """What a run's ``meta.json`` and ``run_created`` say of it besides its counters."""

    flows: Sequence[str]
    backend: str
    mode: str
    engine: str
    initiator: str


class RunBook:
    """Writes one run's ``meta.json`` and its opening and closing events."""

    def __init__(
        self, recorder: RunRecorder, state: RunState, header: RunHeader, clock: Clock
    ) -> None:
        self.recorder = recorder
        self.state = state
        self.header = header
        self.clock = clock
        self.created_at = format_ts(clock())
        """When the run was made (a resumed run keeps its first attempt's)."""

    def summary(self, completed_at: str | None = None) -> RunSummary:
        """``meta.json`` as the run stands."""
        header = self.header
        return self.state.summary(
            self.recorder.run_id,
            header.flows,
            (header.backend, header.mode, header.engine),
            self.created_at,
            completed_at,
        )

    def set_status(self, status: RunStatus, completed_at: str | None = None) -> None:
        """A new status, into ``meta.json`` at once."""
        self.state.status = status
        self.recorder.write_meta(self.summary(completed_at))

    def created(self) -> None:
        """``run_created``: the run's flows, its backend and who started it."""
        header = self.header
        self.recorder.emit(
            RunCreated(
                flows=list(header.flows),
                backend=header.backend,
                initiator=header.initiator,
                stepwise=True,
            )
        )

    def open(self) -> None:
        """A new run: ``meta.json`` pending, ``run_created``, running, ``run_started``."""
        self.set_status("pending")
        self.created()
        self.set_status("running")
        self.recorder.emit(RunStarted(mode="stepwise", routing_enabled=True))

    def emit_completed(self, status: Ended) -> None:
        """``run_completed`` of this attempt, ending with ``status``."""
        self.recorder.emit(self.state.completed(status))

    def finish(self, status: Ended) -> str:
        """The final ``meta.json`` after ``run_completed``; when the attempt ended."""
        completed = format_ts(self.clock())
        self.set_status(status, completed)
        return completed

    def tell_end(self, outcome: RunOutcome | None) -> None:
        """The run's listeners hear how its attempt ended (None: by an exception, as left)."""
        listeners = self.recorder.listeners
        if listeners is None:
            return
        if outcome is None:
            from swarm_runtime.orchestrator.state import RunOutcome

            state = self.state
            outcome = RunOutcome(
                run_id=self.recorder.run_id,
                status=state.status,
                error=state.error,
                path=self.recorder.layout.root,
                summary=msgspec.to_builtins(self.summary()),
            )
        listeners.run_end(outcome)


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
        mode = choice.written_mode  # a recording's and its replay's documents are the same
        self.book = RunBook(
            recorder,
            state,
            RunHeader(self.flows, spec.backend, mode, choice.engine_id, spec.initiator),
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
            engines=context.engines,
            spec=msgspec.to_builtins(spec.as_document(mode=mode, engine=context.engine.engine_id)),
            completed=self._checkpoint,
        )

    @classmethod
    def create(cls, context: RunContext, spec: RunSpec, plan: list[FlowSlice]) -> RunLifecycle:
        """A new run: its directory, lock and ``spec.json``."""
        deps, choice = context.deps, context.engine
        state = RunState(context.limits.history_budget)
        spec_doc = spec.as_document(
            mode=choice.written_mode, engine=choice.engine_id, origin=context.origin
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
        """After a completed step: save where the run goes next.

        The pending events' lines are returned, for the log. Inside an injected flow the
        position's step is of that flow (the stack, saved with it, says which).

        See docs/run-control.md#pause-stop-and-resume.
        """
        position = (
            Position(self.flow_index, nxt.step)
            if nxt.step is not None
            else Position(self.flow_index + 1)
        )
        recorder = self.recorder
        # The lease goes on (docs/run-control.md#runs-across-machines).
        recorder.lock.renew_at_boundary()
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
        process to let go of the run, docs/run-control.md#pause-stop-and-resume).
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
            began = self.clock()
            self._timing = (flow.key, began, 0)
            nxt = self.steps.run(
                flow,
                flow.step(current),
                end,
                blocked=blocked,
                external_input=external_input,
                started=began,
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


class PreparedRun(Record):
    """A run whose directory exists: ``execute()`` runs it (in this thread or a worker)."""

    run_id: str
    path: Path
    execute: Callable[[], RunOutcome]
    hand_over: Callable[[], None] = lambda: None
    """Give the run up unexecuted (its lock): a worker will run it
    (docs/run-control.md#runs-across-machines)."""


class Orchestrator:
    """Runs flows from a :class:`FlowRegistry` with engines from an :class:`EngineRegistry`.

    What a run is handed comes in as records: ``deps`` (clock, ids, sleep, engines,
    listeners), ``engine`` (engine id, mode, scenario, strategy, settings) and ``limits``;
    nothing here reads the environment
    (:func:`swarm_runtime.orchestrator.assembly.build_orchestrator` builds one from
    resolved settings).
    """

    def __init__(
        self,
        flows: FlowRegistry,
        *,
        runs_dir: Path,
        deps: RunDeps | None = None,
        engine: EngineChoice | None = None,
        limits: RunLimits | None = None,
        repo_root: Path | None = None,
        refuse_values: Iterable[str] | Credentials = (),
        origin: dict[str, Any] | None = None,
    ) -> None:
        self.limits = limits or RunLimits()
        self.limits.check()
        self.flows = flows
        self.runs_dir = Path(runs_dir)
        self.deps = deps or RunDeps()
        self.engine = engine or EngineChoice()
        self.repo_root = repo_root or Path.cwd()
        self.credentials = Credentials.of(refuse_values)
        """Credential values that must never be written (checked before every write)."""
        self.origin = dict(origin or {})
        """How the run was made, beyond its spec (config, cassettes): kept in spec.json."""
        self.control = RunControl()
        self.engines = StepEngines(self.engine, self.deps.engines, self.deps.sleep)

    def interrupt(self, reason: str = "interrupted (Ctrl-C)") -> bool:
        """Ask the run to stop; call it from a SIGINT handler or another thread.

        The first call stops the run before its next step. A second call also aborts the
        engine call under way: it returns True when one is, so a signal handler raises
        KeyboardInterrupt there. Nothing is interrupted mid-write, so files stay whole.
        """
        return self.control.interrupt(reason)

    def run_stepwise_flow(
        self,
        flow_key: str,
        spec: RunSpec | None = None,
        start_step: str | None = None,
        end_step: str | None = None,
    ) -> RunOutcome:
        """Run one flow, or the slice ``start_step``..``end_step`` of it, synchronously."""
        base = spec or RunSpec(flows=(flow_key,))
        sliced = RunSpec(
            flows=(flow_key,),
            params=base.params,
            backend=base.backend,
            initiator=base.initiator,
            start_step=start_step or base.start_step,
            end_step=end_step or base.end_step,
        )
        return self.run(sliced)

    def run(self, spec: RunSpec) -> RunOutcome:
        """Validate, create the run directory, and execute every flow of ``spec`` in order."""
        return self.prepare(spec).execute()

    def prepare(self, spec: RunSpec) -> PreparedRun:
        """Plan the run and create its directory; ``execute()`` then runs it.

        A stop asked for meanwhile (a Ctrl-C while the run is being made) is kept: the run
        stops before its first step. The requests end with the run (:meth:`_then_reset`).
        """
        with self._reset_on_error():
            plan = self._plan(spec)
            run = RunLifecycle.create(self._context(), spec, plan)
        return PreparedRun(
            run.recorder.run_id,
            run.recorder.layout.root,
            self._then_reset(run.execute),
            run.hand_over,
        )

    def _plan(self, spec: RunSpec) -> list[FlowSlice]:
        """The run ``spec`` asks for, checked against the flows and engines (new or resumed)."""
        return plan_run(
            spec,
            self.flows,
            engine_strategy=self.engine.strategy,
            scenario=self.engine.scenario,
            check_engine=self.engines.engine_for,
            credentials=self.credentials,
            faults=self.engine.faults,
            engines=self.engines.registry,
        )

    @contextlib.contextmanager
    def _reset_on_error(self) -> Iterator[None]:
        """No run was made: what was asked of it is dropped, not left for the next one."""
        try:
            yield
        except BaseException:
            self.control.reset()
            raise

    def _then_reset(self, execute: Callable[[], RunOutcome]) -> Callable[[], RunOutcome]:
        """``execute``, after which the run's stop, pause and abort requests are cleared."""

        def run() -> RunOutcome:
            try:
                return execute()
            finally:
                self.control.reset()

        return run

    def resume(self, run_dir: Path, *, external_input: str | None = None) -> RunOutcome:
        """Continue a paused, stopped or crashed run from its checkpoint.

        ``external_input`` answers a step that is ``blocked``. The orchestrator must be
        built as the run's ``spec.json`` says (see :func:`.resume.read_run_spec`).

        See docs/contract/checkpoint.md.
        """
        return self.prepare_resume(run_dir, external_input=external_input).execute()

    def prepare_resume(self, run_dir: Path, *, external_input: str | None = None) -> PreparedRun:
        """Lock and mend a run directory for :meth:`resume`; ``execute()`` goes on."""
        with self._reset_on_error():
            return self._prepare_resume(run_dir, external_input)

    def _prepare_resume(self, run_dir: Path, external_input: str | None) -> PreparedRun:
        found = self.credentials.found_in(external_input) if external_input else None
        if found is not None:
            raise RunControlError(
                f"the input for run {Path(run_dir).name} holds the value of {found[0]} "
                f"({found[1]}); it would be written into the run's transcript and events - "
                "the run was left as it is: resume it with an input that holds no secret"
            )
        spec, _ = read_run_spec(Path(run_dir))
        plan = self._plan(spec)
        reopened = reopen_run(
            Path(run_dir),
            plan=plan,
            budget=self.limits.history_budget,
            clock=self.deps.clock,
            durable=self.limits.durable,
            credentials=self.credentials,
            listeners=self.deps.plugins.for_run(),
            external_input=external_input,
            injectable=injectable([part.flow for part in plan], self.flows),
            max_depth=self.limits.max_depth,
            sleep=self.deps.sleep,
            notice=self.deps.notice,
        )
        run = RunLifecycle(self._context(), reopened.spec, plan, reopened.recorder, reopened.state)
        return PreparedRun(
            run.recorder.run_id,
            run.recorder.layout.root,
            self._then_reset(lambda: run.execute(reopened)),
        )

    def _context(self) -> RunContext:
        return RunContext(
            flows=self.flows,
            runs_dir=self.runs_dir,
            deps=self.deps,
            engine=self.engine,
            limits=self.limits,
            repo_root=self.repo_root,
            credentials=self.credentials,
            control=self.control,
            engines=self.engines,
            origin=self.origin_document(),
        )

    def origin_document(self) -> dict[str, Any]:
        """``spec.json``'s ``origin``: what ``swarm resume`` needs besides the spec."""
        scenario, limits = self.engine.scenario, self.limits
        return {
            "flows_dir": str(self.flows.resolved_dir),
            "scenario": scenario.raw if scenario is not None else None,
            "scenario_file": scenario.source if scenario is not None else None,
            "max_steps": limits.max_steps,
            # Only when set, so spec.json (and the goldens made of it) stay as they were.
            **({"max_run_mb": limits.max_run_mb} if limits.max_run_mb is not None else {}),
            **({"max_depth": limits.max_depth} if limits.max_depth != 4 else {}),
            **({"budget": budget_document(limits.budget)} if limits.budget is not None else {}),
            "config": None,
            "cassettes": self.engine.cassettes is not None,
            # Only when not the default, so spec.json (and the goldens) stay as they were.
            **({"navigator": self.engine.navigator} if self.engine.navigator != "llm" else {}),
            **_faults_origin(self.engine.faults),
            **self.origin,
        }


def _faults_origin(plan: FaultPlan | None) -> dict[str, Any]:
    """A fault plan given on its own, kept for ``swarm resume`` (only when there is one)."""
    if plan is None:
        return {}
    return {"faults": plan.raw, "faults_source": plan.source}

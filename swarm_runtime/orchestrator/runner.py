"""The stepwise orchestrator: runs flows one step at a time and records everything.

The run loop lives here: plan the run (:mod:`.plan`), create its directory
(:mod:`.recorder`), then run each flow step by step (:mod:`.step`) until routing ends it.
The sequencing invariants of SPEC §3.3 hold on every path out of a run: a failing step,
an engine that raises, a routing error and Ctrl-C all end in exactly one
``run_completed``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from swarm_runtime.credentials import Credentials
from swarm_runtime.engines.faults import FaultPlan
from swarm_runtime.errors import RunControlError
from swarm_runtime.flow.budget_input import budget_document
from swarm_runtime.flow.registry import FlowRegistry
from swarm_runtime.orchestrator.control import RunControl
from swarm_runtime.orchestrator.deps import (
    EngineChoice,
    RunContext,
    RunDeps,
    RunLimits,
    StepEngines,
)
from swarm_runtime.orchestrator.lifecycle import RunLifecycle
from swarm_runtime.orchestrator.plan import RunOutcome, RunSpec, injectable, plan_run
from swarm_runtime.orchestrator.resume import read_run_spec, reopen_run
from swarm_runtime.record import Record


class PreparedRun(Record):
    """A run whose directory exists: ``execute()`` runs it (in this thread or a worker)."""

    run_id: str
    path: Path
    execute: Callable[[], RunOutcome]
    hand_over: Callable[[], None] = lambda: None
    """Give the run up unexecuted (its lock): a worker will run it (SPEC §8.3)."""


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
            plan = plan_run(
                spec,
                self.flows,
                engine_strategy=self.engine.strategy,
                scenario=self.engine.scenario,
                check_engine=self.engines.engine_for,
                credentials=self.credentials,
                faults=self.engine.faults,
                engines=self.engines.registry,
            )
            run = RunLifecycle.create(self._context(), spec, plan)
        return PreparedRun(
            run.recorder.run_id,
            run.recorder.layout.root,
            self._then_reset(run.execute),
            run.hand_over,
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
        """Continue a paused, stopped or crashed run from its checkpoint (SPEC §8.2).

        ``external_input`` answers a step that is ``blocked``. The orchestrator must be
        built as the run's ``spec.json`` says (see :func:`.resume.read_run_spec`).
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
        plan = plan_run(
            spec,
            self.flows,
            engine_strategy=self.engine.strategy,
            scenario=self.engine.scenario,
            check_engine=self.engines.engine_for,
            credentials=self.credentials,
            faults=self.engine.faults,
            engines=self.engines.registry,
        )
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
            "cassettes": "cassettes" in self.engine.config,
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

"""The stepwise orchestrator: runs flows one step at a time and records everything.

The run loop lives here: plan the run (:mod:`.plan`), create its directory
(:mod:`.recorder`), then run each flow step by step (:mod:`.step`) until routing ends it.
The sequencing invariants of SPEC §3.3 hold on every path out of a run: a failing step,
an engine that raises, a routing error and Ctrl-C all end in exactly one
``run_completed``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from swarm_runtime.documents import SCHEMA_VERSION, RunSummaryDoc
from swarm_runtime.engines.base import StepEngine, StepResult
from swarm_runtime.engines.registry import EngineOptions, EngineRegistry, default_registry
from swarm_runtime.engines.scenario import Scenario
from swarm_runtime.errors import ConfigError
from swarm_runtime.flow.registry import FlowRegistry
from swarm_runtime.flow.spec import FlowSpec, StepSpec
from swarm_runtime.orchestrator.control import Interrupted, RunControl
from swarm_runtime.orchestrator.history import HistoryBudget
from swarm_runtime.orchestrator.plan import (
    FlowSlice,
    RunOutcome,
    RunSpec,
    default_max_steps,
    plan_run,
)
from swarm_runtime.orchestrator.recorder import EventObserver, RunRecorder
from swarm_runtime.orchestrator.state import RunState
from swarm_runtime.orchestrator.step import PromptParts, StepRunner, StepSettings
from swarm_runtime.timeutil import (
    Clock,
    format_ts,
    interruptible_sleep,
    ms_between,
    system_clock,
)

__all__ = ["Orchestrator", "RunOutcome", "RunSpec"]


class Orchestrator:
    """Runs flows from a :class:`FlowRegistry` with engines from an :class:`EngineRegistry`.

    The clock, the id factory, the sleep and the engines are passed in; nothing here reads
    the environment (:func:`swarm_runtime.orchestrator.assembly.build_orchestrator` builds
    one from resolved settings).
    """

    def __init__(
        self,
        flows: FlowRegistry,
        *,
        runs_dir: Path,
        engines: EngineRegistry | None = None,
        engine_id: str = "claude-step",
        mode: str = "stub",
        scenario: Scenario | None = None,
        engine_strategy: dict[str, dict[str, str]] | None = None,
        clock: Clock = system_clock,
        rand: Callable[[int], str] | None = None,
        sleep: Callable[[float], None] | None = None,
        durable: bool = False,
        history_budget: HistoryBudget | None = None,
        repo_root: Path | None = None,
        observer: EventObserver | None = None,
        result_observer: Callable[[str, StepResult], None] | None = None,
        max_steps: int | None = None,
        max_attempts: int = 3,
        jitter: Callable[[], float] | None = None,
        engine_config: dict[str, Any] | None = None,
        refuse_values: tuple[str, ...] = (),
    ) -> None:
        if max_steps is not None and (isinstance(max_steps, bool) or max_steps < 1):
            raise ConfigError(f"max_steps must be a whole number >= 1, got {max_steps!r}")
        if max_attempts < 1:
            raise ConfigError(f"max_attempts must be a whole number >= 1, got {max_attempts!r}")
        self.flows = flows
        self.runs_dir = Path(runs_dir)
        self.engines = engines or default_registry()
        self.engine_id = engine_id
        self.mode = mode
        self.scenario = scenario
        self.engine_strategy = engine_strategy or {}
        self.clock = clock
        self.rand = rand
        self.sleep: Callable[[float], None] = sleep or interruptible_sleep
        self.max_attempts = max_attempts
        """Calls per step execution when the engine answers ``retryable`` (§7.3)."""
        self.jitter: Callable[[], float] = jitter or _random_fraction
        self.durable = durable
        self.history_budget = history_budget or HistoryBudget()
        self.repo_root = repo_root or Path.cwd()
        self.observer = observer
        self.result_observer = result_observer
        self.max_steps = max_steps
        """Step executions a run may make (default: 10 per step of its flows, at least 100)."""
        self.engine_config = dict(engine_config or {})
        """Settings for engine factories (api key, base URL, model…), resolved at the edge."""
        self.refuse_values = tuple(v for v in refuse_values if v)
        """Credential values that must never be written (checked before every write)."""
        self.control = RunControl()
        self._engine_cache: dict[str, StepEngine] = {}
        self._system_prompts: dict[Any, tuple[str, str]] = {}

    def interrupt(self) -> bool:
        """Ask the run to stop; call it from a SIGINT handler or another thread.

        The first call stops the run before its next step. A second call also aborts the
        engine call under way: it returns True when one is, so a signal handler raises
        KeyboardInterrupt there. Nothing is interrupted mid-write, so files stay whole.
        """
        return self.control.interrupt()

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
        self.control.reset()
        plan = plan_run(
            spec,
            self.flows,
            engine_strategy=self.engine_strategy,
            scenario=self.scenario,
            check_engine=self.engine_for,
        )
        return _Run(self, spec, plan).execute()

    def engine_for(self, flow: FlowSpec, step: StepSpec) -> StepEngine:
        """The engine of a step: its own ``engine:``, the strategy, else the run's."""
        engine_id = (
            step.engine or self.engine_strategy.get(flow.key, {}).get(step.id) or self.engine_id
        )
        engine = self._engine_cache.get(engine_id)
        if engine is None:
            engine = self.engines.create(
                engine_id,
                EngineOptions(
                    mode=self.mode,
                    scenario=self.scenario,
                    sleep=self.sleep,
                    config=self.engine_config,
                ),
            )
            self._engine_cache[engine_id] = engine
        return engine

    def close_engines(self) -> None:
        """Close every engine built for the last run."""
        engines, self._engine_cache = list(self._engine_cache.values()), {}
        for engine in engines:
            engine.close()


class _Run:
    """One run while it executes: the lifecycle around the step loop."""

    def __init__(self, owner: Orchestrator, spec: RunSpec, plan: list[FlowSlice]) -> None:
        self.o = owner
        self.spec = spec
        self.plan = plan
        self.clock = owner.clock
        self.state = RunState(owner.history_budget)
        self.flows = [part.flow.key for part in plan]
        """The flows this run runs: those of the spec, less what a slice leaves out."""
        self.step_budget = owner.max_steps or default_max_steps(plan)
        spec_doc = spec.as_document(mode=owner.mode, engine=owner.engine_id)
        self.created_at = format_ts(self.clock())
        self.recorder = RunRecorder.create(
            owner.runs_dir,
            spec_doc,
            self.state,
            clock=owner.clock,
            rand=owner.rand,
            durable=owner.durable,
            refuse_values=owner.refuse_values,
            observer=owner.observer,
        )
        self.steps = StepRunner(
            recorder=self.recorder,
            state=self.state,
            control=owner.control,
            settings=StepSettings(
                clock=owner.clock,
                sleep=owner.sleep,
                jitter=owner.jitter,
                max_attempts=owner.max_attempts,
                repo_root=owner.repo_root,
                result_observer=owner.result_observer,
            ),
            prompts=PromptParts(owner.flows, spec.params, owner._system_prompts),
            engine_for=owner.engine_for,
            spec=spec_doc,
        )

    def summary(self, *, completed_at: str | None = None) -> RunSummaryDoc:
        """``meta.json`` as it stands."""
        state, totals = self.state, self.state.totals
        return {
            "schema_version": SCHEMA_VERSION,
            "run_id": self.recorder.run_id,
            "status": state.status,
            "flows": self.flows,
            "backend": self.spec.backend,
            "mode": self.o.mode,
            "engine": self.o.engine_id,
            "created_at": self.created_at,
            "completed_at": completed_at,
            "error": state.error,
            "steps_completed": totals.steps_completed,
            "total_steps_executed": totals.executed,
            "loop_iterations": totals.loops,
            "tokens": totals.tokens(),
            "cost_usd": totals.cost,
            "steps_without_cost": totals.steps_without_cost,
            "flow_totals": {key: ft.as_flow_document() for key, ft in state.flow_totals.items()},
        }

    def set_status(self, status: str, *, completed_at: str | None = None) -> None:
        self.state.status = status
        self.recorder.write_meta(self.summary(completed_at=completed_at))

    def execute(self) -> RunOutcome:
        interrupted: Interrupted | None = None
        completed: str | None = None
        try:
            self.set_status("pending")
            self.recorder.emit(
                "run_created",
                {
                    "flows": self.flows,
                    "backend": self.spec.backend,
                    "initiator": self.spec.initiator,
                    "stepwise": True,
                },
            )
            self.set_status("running")
            self.recorder.emit("run_started", {"mode": "stepwise", "routing_enabled": True})
            interrupted = self._run_flows()
            completed = self._complete()
        finally:
            self.recorder.close()
            self.o.close_engines()
        observer_error = self.recorder.observer_error
        return RunOutcome(
            run_id=self.recorder.run_id,
            status=self.state.status,
            error=self.state.error,
            path=self.recorder.layout.root,
            summary=dict(self.summary(completed_at=completed)),
            interrupted=interrupted is not None,
            aborted=interrupted is not None and interrupted.aborted,
            warnings=(f"progress display stopped: {observer_error}",) if observer_error else (),
        )

    def _run_flows(self) -> Interrupted | None:
        """Run the planned flows; how an interruption ended them, if one did."""
        state = self.state
        try:
            for part in self.plan:
                if not self._run_flow(part):
                    break
        except (KeyboardInterrupt, Interrupted) as exc:
            stop = exc if isinstance(exc, Interrupted) else Interrupted(aborted=True)
            self._close_open_step("interrupted")
            state.status = "stopped"
            state.error = str(stop) if not stop.aborted else "interrupted"
            return stop
        except Exception as exc:  # storage or engine trouble: the run still completes
            self._close_open_step(f"{type(exc).__name__}: {exc}")
            state.status, state.error = "failed", f"{type(exc).__name__}: {exc}"
        return None

    def _complete(self) -> str:
        """Append ``run_completed`` and write the final ``meta.json``."""
        state = self.state
        final = state.status if state.status != "running" else "succeeded"
        try:
            self.recorder.emit(
                "run_completed",
                {
                    "status": final,
                    "error": state.error,
                    "steps_completed": state.totals.steps_completed,
                    "total_steps_executed": state.totals.executed,
                },
            )
        except Exception as exc:
            # The log cannot be written (disk full, …): say so in meta.json at least.
            state.status, state.error = "failed", f"{type(exc).__name__}: {exc}"
            self.set_status("failed", completed_at=format_ts(self.clock()))
            raise
        completed = format_ts(self.clock())
        self.set_status(final, completed_at=completed)
        return completed

    def _close_open_step(self, error: str) -> None:
        open_step = self.steps.open_step
        if open_step is None:
            return
        self.steps.open_step = None
        self.recorder.emit(
            "step_error",
            {
                "status": "failed",
                "duration_ms": ms_between(open_step.started, self.clock()),
                "error": error,
                "engine": open_step.engine_id,
            },
            flow_key=open_step.flow_key,
            step_id=open_step.step_id,
            agent_key=open_step.agent_key,
        )

    def _run_flow(self, part: FlowSlice) -> bool:
        """Run one flow; False when the run failed and must not go on."""
        flow = part.flow
        current: str | None = part.first_step
        began = self.clock()
        flow_totals = self.state.flow(flow.key)
        while current is not None:
            self.o.control.check_boundary()
            if self.state.totals.executed >= self.step_budget:
                self.state.status = "failed"
                self.state.error = (
                    f"{flow.key}/{current}: the run reached its limit of {self.step_budget} "
                    "step executions; a route loops without end (a next or branch back to an "
                    "earlier step?) - fix the flow, or raise the limit with --max-steps"
                )
                return False
            decision = self.steps.run(flow, flow.step(current), part.end)
            flow_totals.duration_ms = ms_between(began, self.clock())
            if decision is None:
                return False
            current = decision.to_step
        return True


def _random_fraction() -> float:
    import random  # only when a retry happens: random costs start-up time

    return random.random()

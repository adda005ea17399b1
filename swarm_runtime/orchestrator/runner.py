"""The stepwise orchestrator: runs flows one step at a time and records everything.

The run loop lives here: plan the run (:mod:`.plan`), create its directory
(:mod:`.recorder`), then run each flow step by step (:mod:`.step`) until routing ends it.
The sequencing invariants of SPEC §3.3 hold on every path out of a run: a failing step,
an engine that raises, a routing error and Ctrl-C all end in exactly one
``run_completed``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from swarm_runtime.credentials import Credentials
from swarm_runtime.engines.base import StepEngine, StepResult
from swarm_runtime.engines.registry import EngineOptions, EngineRegistry, default_registry
from swarm_runtime.engines.scenario import Scenario
from swarm_runtime.errors import ConfigError, RunControlError
from swarm_runtime.flow.registry import FlowRegistry
from swarm_runtime.flow.spec import FlowSpec, StepSpec
from swarm_runtime.orchestrator.control import RunControl
from swarm_runtime.orchestrator.history import HistoryBudget
from swarm_runtime.orchestrator.lifecycle import RunLifecycle
from swarm_runtime.orchestrator.plan import (
    RunOutcome,
    RunSpec,
    plan_run,
)
from swarm_runtime.orchestrator.recorder import EventObserver
from swarm_runtime.orchestrator.resume import read_run_spec, reopen_run
from swarm_runtime.record import Record
from swarm_runtime.timeutil import (
    Clock,
    interruptible_sleep,
    system_clock,
)

__all__ = ["Orchestrator", "PreparedRun", "RunOutcome", "RunSpec"]


class PreparedRun(Record):
    """A run whose directory exists: ``execute()`` runs it (in this thread or a worker)."""

    run_id: str
    path: Path
    execute: Callable[[], RunOutcome]


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
        max_run_mb: int | None = None,
        max_attempts: int = 3,
        jitter: Callable[[], float] | None = None,
        engine_config: dict[str, Any] | None = None,
        refuse_values: Iterable[str] | Credentials = (),
        origin: dict[str, Any] | None = None,
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
        if max_run_mb is not None and (isinstance(max_run_mb, bool) or max_run_mb < 1):
            raise ConfigError(f"max_run_mb must be a whole number >= 1, got {max_run_mb!r}")
        self.max_run_mb = max_run_mb
        """How big a run dir may grow, in MiB (default :data:`DEFAULT_MAX_RUN_MB`)."""
        self.engine_config = dict(engine_config or {})
        """Settings for engine factories (api key, base URL, model…), resolved at the edge."""
        self.credentials = Credentials.of(refuse_values)
        """Credential values that must never be written (checked before every write)."""
        self.origin = dict(origin or {})
        """How the run was made, beyond its spec (config, cassettes): kept in spec.json."""
        self.control = RunControl()
        self._engine_cache: dict[str, StepEngine] = {}

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
        """Plan the run and create its directory; ``execute()`` then runs it."""
        self.control.reset()
        plan = plan_run(
            spec,
            self.flows,
            engine_strategy=self.engine_strategy,
            scenario=self.scenario,
            check_engine=self.engine_for,
            credentials=self.credentials,
        )
        run = RunLifecycle.create(self, spec, plan)
        return PreparedRun(run.recorder.run_id, run.recorder.layout.root, run.execute)

    def resume(self, run_dir: Path, *, external_input: str | None = None) -> RunOutcome:
        """Continue a paused, stopped or crashed run from its checkpoint (SPEC §8.2).

        ``external_input`` answers a step that is ``blocked``. The orchestrator must be
        built as the run's ``spec.json`` says (see :func:`.resume.read_run_spec`).
        """
        return self.prepare_resume(run_dir, external_input=external_input).execute()

    def prepare_resume(self, run_dir: Path, *, external_input: str | None = None) -> PreparedRun:
        """Lock and mend a run directory for :meth:`resume`; ``execute()`` goes on."""
        self.control.reset()
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
            engine_strategy=self.engine_strategy,
            scenario=self.scenario,
            check_engine=self.engine_for,
            credentials=self.credentials,
        )
        reopened = reopen_run(
            Path(run_dir),
            plan=plan,
            budget=self.history_budget,
            clock=self.clock,
            durable=self.durable,
            credentials=self.credentials,
            observer=self.observer,
            external_input=external_input,
        )
        run = RunLifecycle(self, reopened.spec, plan, reopened.recorder, reopened.state)
        return PreparedRun(
            run.recorder.run_id, run.recorder.layout.root, lambda: run.execute(reopened)
        )

    def origin_document(self) -> dict[str, Any]:
        """``spec.json``'s ``origin``: what ``swarm resume`` needs besides the spec."""
        scenario = self.scenario
        return {
            "flows_dir": str(self.flows.resolved_dir),
            "scenario": scenario.raw if scenario is not None else None,
            "scenario_file": scenario.source if scenario is not None else None,
            "max_steps": self.max_steps,
            # Only when set, so spec.json (and the goldens made of it) stay as they were.
            **({"max_run_mb": self.max_run_mb} if self.max_run_mb is not None else {}),
            "config": None,
            "cassettes": "cassettes" in self.engine_config,
            **self.origin,
        }

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


def _random_fraction() -> float:
    import random  # only when a retry happens: random costs start-up time

    return random.random()

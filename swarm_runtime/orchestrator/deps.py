"""What a run is given, as three records, and the context one run executes in.

:class:`RunDeps` is what a run is handed rather than finds (the clock, ids, waiting, the
engine registry, the plugins that listen): tests pass fakes. :class:`EngineChoice` is which
engine runs the steps, and how (mode, scenario, per-step strategy, settings resolved at the edge).
:class:`RunLimits` bounds a run. :class:`RunContext` holds them with the run's flows and
store for the lifecycle of one run: the lifecycle never reaches back into the
:class:`~swarm_runtime.orchestrator.runner.Orchestrator` that made it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from swarm_runtime.config import MAX_RETRY_AFTER_S
from swarm_runtime.credentials import Credentials
from swarm_runtime.engines.base import StepEngine
from swarm_runtime.engines.faults import FaultInjector, FaultPlan
from swarm_runtime.engines.registry import EngineOptions, EngineRegistry
from swarm_runtime.engines.scenario import Scenario
from swarm_runtime.errors import ConfigError
from swarm_runtime.flow.registry import FlowRegistry
from swarm_runtime.flow.spec import Budget, FlowSpec, StepSpec
from swarm_runtime.orchestrator.control import RunControl
from swarm_runtime.orchestrator.history import HistoryBudget
from swarm_runtime.plugins import SwarmPlugins, engine_registry, process_plugins
from swarm_runtime.record import Record, field
from swarm_runtime.timeutil import Clock, interruptible_sleep, system_clock

REPLAY_CONFIG = {"api_key": "replay-needs-no-key", "base_url": "http://127.0.0.1:9"}
"""A replay never reaches a server: the cassettes answer, or refuse."""


def _random_fraction() -> float:
    import random  # only when a retry happens: random costs start-up time

    return random.random()


class RunDeps(Record):
    """What a run is handed: time, ids, waiting, engines and who watches it."""

    clock: Clock = system_clock
    rand: Callable[[int], str] | None = None
    """Random id suffixes (default: the secrets module's)."""
    sleep: Callable[[float], None] = interruptible_sleep
    jitter: Callable[[], float] = _random_fraction
    """A fraction in [0, 1) that spreads retry waits (SPEC §7.3)."""
    engines: EngineRegistry = field(default_factory=engine_registry)
    """The built-in engines and the plugins' (``swarm_register_engines``)."""
    plugins: SwarmPlugins = field(default_factory=process_plugins)
    """Whose listener hooks hear the run: the process's plugins, or those and a caller's
    own beside them (``process_plugins().with_listeners(progress)``)."""
    notice: Callable[[str], None] | None = None
    """Told what a run waits for before it goes on (a resume waiting for the process that
    paused the run to let go of it)."""


class EngineChoice(Record):
    """Which engine runs the steps, and how."""

    engine_id: str = "claude-step"
    mode: str = "stub"
    scenario: Scenario | None = None
    strategy: dict[str, dict[str, str]] = field(default_factory=dict)
    """Per flow, per step: the engine id, where a step names none."""
    config: dict[str, Any] = field(default_factory=dict)
    """Settings for engine factories (api key, base URL, model…), resolved at the edge."""
    navigator: str = "llm"
    """How a navigator step's move is chosen: asked of the navigator through the step's
    engine (``llm``), or the first candidate that holds (``deterministic``), SPEC §4.5."""
    faults: FaultPlan | None = None
    """A fault plan given on its own (``--faults``, the ``swarm_faults`` marker): it
    replaces the scenario's ``faults:`` (SPEC §10.7)."""

    @property
    def fault_plan(self) -> FaultPlan | None:
        """The run's fault plan: the one given on its own, else the scenario's."""
        if self.faults is not None:
            return self.faults
        return self.scenario.faults if self.scenario is not None else None

    @property
    def replays(self) -> bool:
        """Answered from cassettes: no server, and a recorded retry waits no time."""
        cassettes = self.config.get("cassettes")
        return cassettes is not None and not cassettes.record


def step_engine_id(
    flow: FlowSpec, step: StepSpec, strategy: dict[str, dict[str, str]], default: str
) -> str:
    """The engine that runs a step: its own ``engine:``, runtime.yaml's strategy, else the run's."""
    return step.engine or strategy.get(flow.key, {}).get(step.id) or default


def engines_in_use(
    flows: Iterable[FlowSpec], strategy: dict[str, dict[str, str]], default: str
) -> set[str]:
    """Every engine id some step of ``flows`` runs on (see :func:`step_engine_id`)."""
    return {step_engine_id(flow, step, strategy, default) for flow in flows for step in flow.steps}


def no_wait(_seconds: float) -> None:
    """A replay's retry wait: the recording already holds what came after it."""


def engine_for_mode(
    mode: str,
    *,
    cassettes: Any = None,
    engine_id: str = "claude-step",
    scenario: Scenario | None = None,
    config: dict[str, Any] | None = None,
) -> EngineChoice:
    """A user's mode (stub, replay, record, sdk, cli) as the engines see it, in one place.

    A recorded or replayed call is an ``sdk`` call whose HTTP goes through ``cassettes``
    (SPEC §3.1); a replay needs no key and reaches no server. ``config`` adds engine
    settings of the caller's own.
    """
    settings: dict[str, Any] = dict(config or {})
    if mode in ("record", "replay"):
        if cassettes is None:
            raise ConfigError(f"mode {mode} needs the cassettes it records to or replays from")
        settings["cassettes"] = cassettes
        if not cassettes.record:
            settings.update(REPLAY_CONFIG)
        mode = "sdk"
    return EngineChoice(engine_id=engine_id, mode=mode, scenario=scenario, config=settings)


class RunLimits(Record):
    """How far a run may go."""

    max_steps: int | None = None
    """Step executions a run may make (default: 10 per step of its flows, at least 100)."""
    max_run_mb: int | None = None
    """How big a run dir may grow, in MiB (default ``DEFAULT_MAX_RUN_MB``)."""
    max_attempts: int = 3
    """Calls per step execution when the engine answers ``retryable`` (§7.3)."""
    max_retry_after_s: float = MAX_RETRY_AFTER_S
    """The longest wait a server's ``retry-after`` may ask for: a longer one is not retried."""
    history_budget: HistoryBudget = field(default_factory=HistoryBudget)
    durable: bool = False
    """fsync every write (slower; survives a power cut, not just a crash)."""
    max_depth: int = 4
    """The deepest flow stack (SPEC §4.6): flows on it, the run's own included."""
    budget: Budget | None = None
    """The run budget (SPEC §10.7): tokens, cost and step time the whole run may spend."""

    def check(self) -> None:
        """A clear error for a limit that cannot be."""
        if isinstance(self.max_depth, bool) or not 1 <= self.max_depth <= 16:
            raise ConfigError(
                f"navigator.max_depth must be a whole number from 1 to 16, got {self.max_depth!r}"
            )
        for name in ("max_steps", "max_run_mb"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or value < 1):
                raise ConfigError(f"{name} must be a whole number >= 1, got {value!r}")
        if isinstance(self.max_attempts, bool) or self.max_attempts < 1:
            raise ConfigError(
                f"max_attempts must be a whole number >= 1, got {self.max_attempts!r}"
            )


class StepEngines:
    """The engines of one run's steps, flow run or plan cycle: built on first use, closed."""

    def __init__(self, choice: EngineChoice, registry: EngineRegistry, sleep: Any) -> None:
        self.choice = choice
        self.registry = registry
        self.sleep: Callable[[float], None] = sleep
        self._built: dict[str, StepEngine] = {}
        self._injector: FaultInjector | None = None

    def engine_for(self, flow: FlowSpec, step: StepSpec) -> StepEngine:
        """The engine of a step: its own ``engine:``, the strategy, else the run's."""
        choice = self.choice
        engine = self.engine(step_engine_id(flow, step, choice.strategy, choice.engine_id))
        plan = choice.fault_plan
        if plan is not None:  # a kind the step's engine cannot be given: before any write
            plan.check_mode(flow.key, step.id, engine.mode, getattr(engine, "fault_kinds", None))
        return engine

    def engine(self, engine_id: str | None = None) -> StepEngine:
        """An engine of the run's mode (the run's own by default), built on first use."""
        key = engine_id or self.choice.engine_id
        engine = self._built.get(key)
        if engine is None:
            choice = self.choice
            plan = choice.fault_plan
            config = choice.config
            if plan is not None:
                # One injector per run: each step's entries are taken in order across it.
                if self._injector is None:
                    self._injector = FaultInjector(plan)
                config = {**config, "fault_injector": self._injector}
            engine = self.registry.create(
                key,
                EngineOptions(
                    mode=choice.mode, scenario=choice.scenario, sleep=self.sleep, config=config
                ),
            )
            if self._injector is not None:
                from swarm_runtime.engines.fault_engine import FaultyEngine

                engine = FaultyEngine(engine, self._injector)
            self._built[key] = engine
        return engine

    def close(self) -> None:
        """Close every engine built so far (the next run takes its faults from the start)."""
        engines, self._built = list(self._built.values()), {}
        self._injector = None
        for engine in engines:
            engine.close()


class RunContext(Record):
    """Everything one run executes with, in one record: no way back to its maker."""

    flows: FlowRegistry
    runs_dir: Path
    deps: RunDeps
    engine: EngineChoice
    limits: RunLimits
    repo_root: Path
    credentials: Credentials
    control: RunControl
    engines: StepEngines
    origin: dict[str, Any]
    """``spec.json``'s ``origin``: what ``swarm resume`` needs besides the spec."""

"""What a run is asked to do, and the plan of it: the flows, each whole or sliced.

Planning happens before anything is written: every flow is loaded, ``--from``/``--to``
are resolved, the engine strategy and the scenario are checked against the flows, so a
mistake is a usage error and never a half-made run directory.

The request parameters of a run: checked where they enter, whatever the way in.

``swarm run --param``, ``POST /api/runs``, ``flow_runner(**params)`` and the run service
all plan a run through :func:`~swarm_runtime.orchestrator.plan.plan_run`, which checks the
params here: a mapping of names to JSON values, strict JSON (no NaN or infinity), nested
at most :data:`~swarm_runtime.inputs.MAX_DEPTH` deep, and at most :data:`MAX_PARAMS_BYTES`
in all, since they are written to ``spec.json`` and sent with every step's prompt. A
credential's value in one is refused too, naming the param. Each refusal is a usage
error, before anything is written.

What a run is given, as three records, and the context one run executes in.

:class:`RunDeps` is what a run is handed rather than finds (the clock, ids, waiting, the
engine registry, the plugins that listen): tests pass fakes. :class:`EngineChoice` is which
engine runs the steps, and how (mode, scenario, per-step strategy, settings resolved at the edge).
:class:`RunLimits` bounds a run. :class:`RunContext` holds them with the run's flows and
store for the lifecycle of one run: the lifecycle never reaches back into the
:class:`~swarm_runtime.orchestrator.run.Orchestrator` that made it.

A run's budget: how many step executions it may make, how big its run dir may grow.

Past either, the run ends, failed, at its next step boundary, with a message that says
which limit it met and what to do: raise the limit, or fix the loop that spends it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from msgspec import UNSET

from swarm_runtime.config import MAX_RETRY_AFTER_S
from swarm_runtime.credentials import Credentials
from swarm_runtime.documents.run import RunSpecDocument
from swarm_runtime.engines.base import StepEngine
from swarm_runtime.engines.faults import FaultInjector, FaultPlan
from swarm_runtime.engines.options import EngineOptions
from swarm_runtime.engines.registry import EngineRegistry
from swarm_runtime.engines.scenario import Scenario
from swarm_runtime.errors import ConfigError, FlowDefinitionError, SwarmUsageError
from swarm_runtime.flow.registry import FlowRegistry
from swarm_runtime.flow.spec import Budget, FlowSpec, JudgeSpec, StepSpec
from swarm_runtime.inputs.json_input import check_json_depth
from swarm_runtime.inputs.limits import MAX_DEPTH, InputRefused
from swarm_runtime.orchestrator.checkpoint import RunControl
from swarm_runtime.orchestrator.context import HistoryBudget
from swarm_runtime.plugins import SwarmPlugins, engine_registry, process_plugins
from swarm_runtime.record import Record, field, replace
from swarm_runtime.timeutil import Clock, interruptible_sleep, system_clock
from swarm_runtime.tools.config import ToolSettings

if TYPE_CHECKING:
    from swarm_runtime.engines.cassette import Cassettes
    from swarm_runtime.engines.registry import EngineRegistry
    from swarm_runtime.tools.box import ToolBox
    from swarm_runtime.tools.registry import ToolRegistry


MAX_PARAMS_BYTES = 256 * 1024
"""The most a run's params may hold, as JSON: they go into every prompt of the run."""


def check_params(params: Any, credentials: Credentials | None = None) -> None:
    """Raise SwarmUsageError naming the param when ``params`` cannot be given to a run."""
    if not isinstance(params, Mapping):
        raise SwarmUsageError(f"params must map names to values, got {type(params).__name__}")
    size = 0
    for key, value in params.items():
        if not isinstance(key, str) or not key.strip() or len(key) > 200:
            raise SwarmUsageError(
                f"param name {key!r} must be non-empty text of 200 characters or fewer"
            )
        try:
            text = json.dumps(value, allow_nan=False, ensure_ascii=False)
            check_json_depth(text, MAX_DEPTH)
        except (TypeError, ValueError, RecursionError) as exc:
            why = exc if isinstance(exc, InputRefused) else "it is not a JSON value"
            raise SwarmUsageError(
                f"param {key!r}: {why} (give text, numbers, true/false, lists or mappings; "
                "no NaN or infinity)"
            ) from None
        size += len(key.encode("utf-8")) + len(text.encode("utf-8"))
        found = credentials.found_in(text) if credentials else None
        if found is not None:
            raise SwarmUsageError(
                f"param {key!r} holds the value of {found[0]} ({found[1]}); it would be "
                "written into spec.json and every prompt - keep secrets out of params"
            )
    if size > MAX_PARAMS_BYTES:
        raise SwarmUsageError(
            f"the params are {size} bytes; at most {MAX_PARAMS_BYTES} are given to a run (they "
            "go into every prompt): pass a path to a file the flow reads instead"
        )


DEFAULT_MAX_RUN_MB = 1024
"""How big a run dir may grow by default (MiB): past it the run ends, failed, at a step
boundary - a loop whose prompts keep growing must not fill the disk."""


class RunSpec(Record):
    """What to run (docs/contract/index.md): flows in order, the request, and an optional slice."""

    flows: tuple[str, ...]
    params: dict[str, Any] = field(default_factory=dict)
    backend: str = "claude-step-orchestrator"
    initiator: str = "api"
    start_step: str | None = None
    """``step`` or ``flow/step``: where the run starts."""
    end_step: str | None = None
    """``step`` or ``flow/step``: the last step run."""

    @classmethod
    def from_document(cls, doc: Any) -> RunSpec:
        """A RunSpec from ``spec.json`` (or the same keys); TypeError/KeyError if malformed."""
        flows = doc["flows"]
        if not isinstance(flows, list | tuple) or not all(isinstance(f, str) for f in flows):
            raise TypeError(f"'flows' must be a list of flow keys, got {flows!r}")
        return cls(
            flows=tuple(flows),
            params=dict(doc.get("params") or {}),
            backend=str(doc.get("backend") or "claude-step-orchestrator"),
            initiator=str(doc.get("initiator") or "api"),
            start_step=doc.get("start_step"),
            end_step=doc.get("end_step"),
        )

    def as_document(
        self, *, mode: str, engine: str, origin: dict[str, Any] | None = None
    ) -> RunSpecDocument:
        """The document written to ``spec.json`` (``origin``: what a resume needs too)."""
        return RunSpecDocument(
            flows=list(self.flows),
            params=self.params,
            backend=self.backend,
            initiator=self.initiator,
            mode=mode,
            engine=engine,
            start_step=self.start_step,
            end_step=self.end_step,
            origin=UNSET if origin is None else origin,
        )


class FlowSlice(Record):
    """One flow of a run: where it starts and, for the last flow of a slice, where it ends."""

    flow: FlowSpec
    start: str | None = None
    """The first step run (None: the flow's first step)."""
    end: str | None = None
    """The last step run (None: wherever routing ends the flow)."""

    @property
    def first_step(self) -> str:
        """The id of the step this flow starts at."""
        return self.start or self.flow.steps[0].id


def plan_run(
    spec: RunSpec,
    flows: FlowRegistry,
    *,
    engine_strategy: dict[str, dict[str, str]],
    scenario: Scenario | None,
    check_engine: Callable[[FlowSpec, StepSpec], object],
    credentials: Credentials | None = None,
    faults: FaultPlan | None = None,
    engines: EngineRegistry | None = None,
) -> list[FlowSlice]:
    """Load the flows of ``spec`` and resolve its slice; raise a usage error on any mistake.

    Also checked: the params (:func:`check_params`, against ``credentials`` when given) and the
    whole flows dir, as ``swarm flows validate`` checks it (each step's ``engine:`` against
    ``engines`` too, when given).
    """
    check_params(spec.params, credentials)
    flows.check(engine_errors(flows, engines) if engines is not None else ())
    if not spec.flows:
        raise SwarmUsageError(f"a run needs at least one flow (none in {flows.flows_dir})")
    if repeated := sorted({key for key in spec.flows if spec.flows.count(key) > 1}):
        raise SwarmUsageError(
            f"flow(s) {', '.join(repeated)} listed more than once; a run runs each flow once"
        )
    loaded = [flows.get(key) for key in spec.flows]
    for flow in (flow for flow in loaded if flow.utility):
        raise SwarmUsageError(
            f"flow '{flow.key}' is a utility flow (utility: true in {flow.path}): it is "
            "injected after a step whose state makes its trigger true, or taken as a "
            "detour; it is never run on its own"
        )
    reachable = injectable(loaded, flows)
    _check_strategy(engine_strategy, flows)
    start = _locate(spec.start_step, loaded, "--from") if spec.start_step else None
    end = _locate(spec.end_step, loaded, "--to") if spec.end_step else None
    first_flow = start[0] if start else 0
    last_flow = end[0] if end else len(loaded) - 1
    if first_flow > last_flow or (
        start
        and end
        and start[0] == end[0]
        and loaded[start[0]].index_of(start[1]) > loaded[end[0]].index_of(end[1])
    ):
        raise SwarmUsageError(
            f"--from {spec.start_step} comes after --to {spec.end_step} in the run order"
        )
    if scenario is not None:
        scenario.check_steps((f.key, [s.id for s in f.steps]) for f in (*loaded, *reachable))
    if faults is not None:
        faults.check_steps((f.key, [s.id for s in f.steps]) for f in (*loaded, *reachable))
    _check_engines((*loaded, *reachable), check_engine)  # before any write
    return [
        FlowSlice(
            loaded[position],
            start[1] if start and position == start[0] else None,
            end[1] if end and position == end[0] else None,
        )
        for position in range(first_flow, last_flow + 1)
    ]


def injectable(loaded: Sequence[FlowSpec], flows: FlowRegistry) -> list[FlowSpec]:
    """The flows a run of ``loaded`` may enter by a detour or an injection.

    Raises a usage error naming the step and detour when a detour names no flow, or a step
    its flow does not have.

    See docs/flows.md#detours-and-utility-flows.
    """
    found: dict[str, FlowSpec] = {utility.key: utility for utility in flows.utilities()}
    todo = [*loaded, *found.values()]
    while todo:
        flow = todo.pop()
        for step in flow.steps:
            for detour in step.detours:
                where = f"{flow.path}: step '{step.id}', detour '{detour.id}'"
                try:
                    target = flows.get(detour.flow)
                except (SwarmUsageError, FlowDefinitionError) as exc:
                    raise SwarmUsageError(f"{where}: {exc}") from None
                if detour.step is not None and not target.has_step(detour.step):
                    raise SwarmUsageError(
                        f"{where}: flow '{target.key}' has no step '{detour.step}' "
                        f"(steps: {', '.join(s.id for s in target.steps)})"
                    )
                if target.key not in found and all(f.key != target.key for f in loaded):
                    found[target.key] = target
                    todo.append(target)
    return sorted(found.values(), key=lambda flow: flow.key)


def _check_engines(
    flows: Iterable[FlowSpec], check_engine: Callable[[FlowSpec, StepSpec], object]
) -> None:
    """Each step's engine exists and takes the run's mode.

    A step's own ``engine:`` that does not is a flow error at its line, as ``swarm flows
    validate`` reports it.
    """
    for flow in flows:
        for step in flow.steps:
            try:
                check_engine(flow, step)
            except FlowDefinitionError:
                raise
            except SwarmUsageError as exc:
                if step.engine is None:
                    raise
                raise _engine_error(flow, step, str(exc)) from None
            for judge in step.judges:  # a judge's own engine: of the run's mode too
                if judge.engine is None:
                    continue
                try:
                    check_engine(flow, replace(step, engine=judge.engine))
                except FlowDefinitionError:
                    raise
                except SwarmUsageError as exc:
                    raise _judge_engine_error(flow, step, judge, str(exc)) from None


def engine_errors(flows: FlowRegistry, engines: EngineRegistry) -> list[FlowDefinitionError]:
    """Every step whose ``engine:`` names no registered engine, of every flow file that reads.

    A file with other errors is read as far as it goes, so they do not hide these.
    """
    found: list[FlowDefinitionError] = []
    ids = set(engines.ids())
    for flow in flows.read():
        found.extend(
            _engine_error(flow, step, engines.unknown(step.engine))
            for step in flow.steps
            if step.engine is not None and step.engine not in ids
        )
        found.extend(
            _judge_engine_error(flow, step, judge, engines.unknown(judge.engine))
            for step in flow.steps
            for judge in step.judges
            if judge.engine is not None and judge.engine not in ids
        )
    return found


def _judge_engine_error(
    flow: FlowSpec, step: StepSpec, judge: JudgeSpec, message: str
) -> FlowDefinitionError:
    return FlowDefinitionError(
        f"judge '{judge.name}': {message}",
        file=str(flow.path),
        line=judge.line or step.line,
        step_id=step.id,
        field=f"judges.{judge.name}.engine",
    )


def _engine_error(flow: FlowSpec, step: StepSpec, message: str) -> FlowDefinitionError:
    return FlowDefinitionError(
        message,
        file=str(flow.path),
        line=step.line_of("engine"),
        step_id=step.id,
        field="engine",
    )


def default_max_steps(plan: Iterable[FlowSlice]) -> int:
    """Step executions a run may make: 10 per step of its flows, at least 100."""
    return max(100, 10 * sum(len(part.flow.steps) for part in plan))


def _check_strategy(strategy: dict[str, dict[str, str]], flows: FlowRegistry) -> None:
    for flow_key, steps in strategy.items():
        strategy_flow = flows.get(flow_key)  # an unknown flow is an error too
        for step_id in steps:
            if not strategy_flow.has_step(step_id):
                raise ConfigError(
                    f"engine_strategy: flow '{flow_key}' has no step '{step_id}' "
                    f"(steps: {', '.join(s.id for s in strategy_flow.steps)})"
                )


def _locate(ref: str, flows: list[FlowSpec], flag: str) -> tuple[int, str]:
    flow_part, _, step_part = ref.rpartition("/")
    hits = [
        (i, step_part)
        for i, flow in enumerate(flows)
        if (not flow_part or flow.key == flow_part) and flow.has_step(step_part)
    ]
    if not hits:
        raise SwarmUsageError(
            f"{flag} {ref}: no such step in the flows of this run "
            f"({', '.join(f.key for f in flows)}); use STEP or FLOW/STEP"
        )
    if len(hits) > 1:
        raise SwarmUsageError(
            f"{flag} {ref}: the step is in several flows "
            f"({', '.join(flows[i].key for i, _ in hits)}); write FLOW/STEP"
        )
    return hits[0]


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
    """A fraction in [0, 1) that spreads retry waits (docs/contract/steps.md#result-codes)."""
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
    cassettes: Cassettes | None = None
    """Where ``record`` records to and ``replay`` replays from."""
    sections: dict[str, dict[str, Any]] = field(default_factory=dict)
    """runtime.yaml's ``engines.<name>``, as written: each is its engine's to read."""
    given: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Flags' values for an engine's section (``--gemini-mode``), by section."""
    env: Mapping[str, str] = field(default_factory=dict)
    """The environment the edge was given (engines read their keys and URLs from it)."""
    credentials: Credentials = field(default_factory=Credentials)
    """Every credential value the run was given: no file may hold one."""
    where: str = "runtime.yaml"
    """The runtime.yaml the sections came from, for messages."""
    tools: ToolSettings = field(default_factory=ToolSettings)
    """runtime.yaml's tool settings: MCP servers, limits (docs/tools.md)."""
    tool_registry: ToolRegistry | None = None
    """The run's Python tools (plugins' and runtime.yaml's); None: none."""
    navigator: str = "llm"
    """How a navigator step's move is chosen: asked of the navigator through the step's
    engine (``llm``), or the first candidate that holds (``deterministic``),
    docs/flows.md#navigator."""
    faults: FaultPlan | None = None
    """A fault plan given on its own (``--faults``, the ``swarm_faults`` marker): it
    replaces the scenario's ``faults:`` (docs/faults.md)."""

    @property
    def fault_plan(self) -> FaultPlan | None:
        """The run's fault plan: the one given on its own, else the scenario's."""
        if self.faults is not None:
            return self.faults
        return self.scenario.faults if self.scenario is not None else None

    def __post_init__(self) -> None:
        if self.mode in ("record", "replay") and self.cassettes is None:
            raise ConfigError(f"mode {self.mode} needs the cassettes it records to or replays from")

    @property
    def replays(self) -> bool:
        """Answered from cassettes: no server, and a recorded retry waits no time."""
        return self.cassettes is not None and not self.cassettes.record

    @property
    def written_mode(self) -> str:
        """The mode meta.json and spec.json name (a recording's and a replay's: ``sdk``).

        A recorded or replayed call is an ``sdk`` call (docs/contract/receipt.md): a recording and
        its replay write the same documents.
        """
        return "sdk" if self.mode in ("record", "replay") else self.mode


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


class RunLimits(Record):
    """How far a run may go."""

    max_steps: int | None = None
    """Step executions a run may make (default: 10 per step of its flows, at least 100)."""
    max_run_mb: int | None = None
    """How big a run dir may grow, in MiB (default ``DEFAULT_MAX_RUN_MB``)."""
    max_attempts: int = 3
    """Calls per step execution when the engine answers ``retryable``
    (docs/contract/steps.md#result-codes)."""
    max_retry_after_s: float = MAX_RETRY_AFTER_S
    """The longest wait a server's ``retry-after`` may ask for: a longer one is not retried."""
    history_budget: HistoryBudget = field(default_factory=HistoryBudget)
    durable: bool = False
    """fsync every write (slower; survives a power cut, not just a crash)."""
    max_depth: int = 4
    """The deepest flow stack (docs/flows.md#detours-and-utility-flows): flows on it, the run's own
    included."""
    budget: Budget | None = None
    """The run budget (docs/budgets.md): tokens, cost and step time the whole run may spend."""

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
        self._tools: ToolBox | None = None

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
            if plan is not None and self._injector is None:
                # One injector per run: each step's entries are taken in order across it.
                self._injector = FaultInjector(plan)
            options = EngineOptions(
                mode=choice.mode,
                scenario=choice.scenario,
                sleep=self.sleep,
                cassettes=choice.cassettes,
                faults=self._injector,
                credentials=choice.credentials,
                env=choice.env,
                where=choice.where,
                navigator=choice.navigator,
                tools=self.tools(),
            )
            engine = self.registry.create(
                key, options, sections=choice.sections, given=choice.given
            )
            if self._injector is not None:
                from swarm_runtime.engines.fault_engine import FaultyEngine

                engine = FaultyEngine(engine, self._injector)
            self._built[key] = engine
        return engine

    def tools(self) -> ToolBox:
        """The run's tools: its MCP servers start when a step first needs them."""
        if self._tools is None:
            from swarm_runtime.tools.box import ToolBox

            choice = self.choice
            self._tools = ToolBox(
                choice.tool_registry, choice.tools, credentials=choice.credentials
            )
        return self._tools

    def close(self) -> None:
        """Close the engines built so far, then stop the run's MCP servers.

        The next run takes its faults from the start.
        """
        engines, self._built = list(self._built.values()), {}
        self._injector = None
        tools, self._tools = self._tools, None
        try:
            for engine in engines:
                engine.close()
        finally:
            if tools is not None:
                tools.close()


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


class RunBudget(Record):
    """The step executions and the run-dir size one run may spend."""

    steps: int
    """Step executions (``--max-steps``, else :func:`default_max_steps` of the plan)."""
    size: int
    """Characters written to the run dir (``--max-run-mb``, else ``DEFAULT_MAX_RUN_MB``)."""

    @classmethod
    def of(cls, limits: RunLimits, plan: Sequence[FlowSlice]) -> RunBudget:
        """The budget of a run with these ``limits`` and this ``plan``."""
        return cls(
            limits.max_steps or default_max_steps(plan),
            (limits.max_run_mb or DEFAULT_MAX_RUN_MB) << 20,
        )

    def spent(self, where: str, *, executed: int, size: int) -> str | None:
        """Why the run ends before step ``where`` (``flow/step``) runs, or None.

        ``executed``: the step executions made so far; ``size``: the run dir's size.
        """
        if executed >= self.steps:
            return (
                f"{where}: the run reached its limit of {self.steps} "
                "step executions; a route loops without end (a next or branch back to an "
                "earlier step?) - fix the flow, or raise the limit with --max-steps"
            )
        if size > self.size:
            return (
                f"{where}: the run dir has grown to "
                f"{size >> 20} MiB, past its limit of "
                f"{self.size >> 20} MiB; the run ends here - raise the limit with "
                "--max-run-mb (or max_run_mb in runtime.yaml), or look for a loop whose "
                "prompts keep growing"
            )
        return None

"""What a run is asked to do, and the plan of it: the flows, each whole or sliced.

Planning happens before anything is written: every flow is loaded, ``--from``/``--to``
are resolved, the engine strategy and the scenario are checked against the flows, so a
mistake is a usage error and never a half-made run directory.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from msgspec import UNSET

from swarm_runtime.credentials import Credentials
from swarm_runtime.documents.run import RunSpecDocument
from swarm_runtime.engines.faults import FaultPlan
from swarm_runtime.engines.scenario import Scenario
from swarm_runtime.errors import ConfigError, FlowDefinitionError, SwarmUsageError
from swarm_runtime.flow.registry import FlowRegistry
from swarm_runtime.flow.spec import FlowSpec, StepSpec
from swarm_runtime.orchestrator.params import check_params
from swarm_runtime.record import Record, field

if TYPE_CHECKING:
    from swarm_runtime.engines.registry import EngineRegistry

DEFAULT_MAX_RUN_MB = 1024
"""How big a run dir may grow by default (MiB): past it the run ends, failed, at a step
boundary - a loop whose prompts keep growing must not fill the disk."""


class RunSpec(Record):
    """What to run (SPEC §3): flows in order, the request, and an optional slice."""

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


class RunOutcome(Record):
    """How a run ended."""

    run_id: str
    status: str
    """succeeded | failed | stopped | paused."""
    error: str | None
    path: Path
    summary: dict[str, Any]
    interrupted: bool = False
    """The run was stopped from outside (Ctrl-C, SIGTERM, ``interrupt()``)."""
    aborted: bool = False
    """The stop cut a step short (a second Ctrl-C, SIGTERM); else it came at a boundary."""
    paused: bool = False
    """The run paused (a request, or a blocked step); ``swarm resume`` continues it."""
    blocked: str | None = None
    """Why the step the run paused at is blocked, when that is why it paused."""
    budget_use: dict[str, str] = field(default_factory=dict)
    """Per flow key (``""``: the run budget), the largest share of a declared budget used
    in this attempt, e.g. ``83% (tokens of flow build)``; empty when none is declared."""


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

    Also checked: the params (:mod:`.params`, against ``credentials`` when given) and the
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
    """The flows a run of ``loaded`` may enter by a detour or an injection (SPEC §4.6).

    Raises a usage error naming the step and detour when a detour names no flow, or a step
    its flow does not have.
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
    return found


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

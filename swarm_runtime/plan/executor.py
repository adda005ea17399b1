"""The plan executor: runs the steps of an execution plan in order, one cycle at a time.

The core is neutral (docs/plans.md): it checks the plan's rules before any step runs, then runs
the steps in plan order, handing each handler its payload as written (a copy) and the
results so far (read-only); it never wires, reorders or changes anything. Every cycle is a
run of the one kernel (:mod:`swarm_runtime.plan.kernel`): the same attempts and backoff,
receipts, events, checkpoints, budgets, run lock, pause, stop and ``swarm resume`` as a
flow run. Failures follow the step type: **CycleFail** ends the cycle, which comes back as
a failed :class:`CycleResult`, and the runtime goes on with the next one; **FailFast**
stops the runtime with :class:`~swarm_runtime.errors.FailFast`, raised once the cycle's
run is closed and never swallowed here.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from swarm_runtime.credentials import Credentials
from swarm_runtime.errors import FailFast, PlanError
from swarm_runtime.orchestrator.plan import EngineChoice, RunDeps, RunLimits, RunSpec
from swarm_runtime.orchestrator.run import Orchestrator
from swarm_runtime.orchestrator.state import RunOutcome
from swarm_runtime.plan.builtins import default_handlers
from swarm_runtime.plan.cycle import CYCLE_FLOW, PLAN_BACKEND, RefusedRun, refused_cycle
from swarm_runtime.plan.engine import PlanCycle
from swarm_runtime.plan.handlers import HandlerRegistry
from swarm_runtime.plan.kernel import PlanEngines, PlanFlows
from swarm_runtime.plan.kinds import KINDS
from swarm_runtime.plan.outcome import result_name
from swarm_runtime.plan.validate import checked_plan
from swarm_runtime.record import Record

if TYPE_CHECKING:
    from swarm_runtime.config import Settings
    from swarm_runtime.contracts.plan import ExecutionPlan
    from swarm_runtime.flow.registry import FlowRegistry
    from swarm_runtime.plan.memory_store import MemoryStore

Assemble = Callable[["FlowRegistry", dict[str, Any]], Orchestrator]
"""Builds the orchestrator of a cycle from its flows and its ``spec.json`` origin."""
Around = Callable[[Orchestrator, Callable[[], RunOutcome]], RunOutcome]
"""Runs a cycle's start (``swarm plan run`` turns Ctrl-C and SIGTERM into stop requests)."""


class CycleResult(Record):
    """How one cycle ended."""

    status: Literal["succeeded", "failed", "stopped", "paused"]
    run_id: str
    path: Path
    results: dict[str, dict[str, Any]]
    """Each completed step's result, by step id."""
    error: str | None = None
    failed_step: str | None = None
    rule: str | None = None
    """The plan rule broken, when the cycle failed before any step ran."""


class PlanPaths(Record):
    """Where a plan runtime works: its runs, its store, and the repository it reads."""

    runs_dir: Path
    """Where each cycle's run directory is made."""
    store_path: Path
    """The plan store, opened on first use."""
    repo_root: Path | None = None
    """The repository the handlers read (default: the working directory)."""


class PlanRuntime:
    """Runs cycles of execution plans, each into its own run directory under ``runs_dir``.

    The clock, the ids, the sleep, the engines and the handlers are passed in; nothing here
    reads the environment (``swarm plan run`` resolves the settings, and builds each
    cycle's orchestrator with :func:`~swarm_runtime.orchestrator.assembly.build_orchestrator`
    through :meth:`from_settings`).
    """

    def __init__(
        self,
        paths: PlanPaths,
        *,
        handlers: HandlerRegistry | None = None,
        deps: RunDeps | None = None,
        engine: EngineChoice | None = None,
        limits: RunLimits | None = None,
        refuse_values: Iterable[str] | Credentials = (),
        initiator: str = "api",
        origin: Mapping[str, Any] | None = None,
    ) -> None:
        self.runs_dir = Path(paths.runs_dir)
        self.store_path = Path(paths.store_path)
        self.repo_root = Path(paths.repo_root or Path.cwd())
        self.handlers = handlers or default_handlers()
        self.deps = deps or RunDeps()
        self.choice = engine or EngineChoice()
        self.limits = limits or RunLimits()
        self.credentials = Credentials.of(refuse_values)
        self.initiator = initiator
        self.origin = dict(origin or {})
        self.assemble: Assemble = self._orchestrator
        self.around: Around = lambda _orchestrator, start: start()
        self._store: MemoryStore | None = None

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        paths: PlanPaths,
        *,
        env: Mapping[str, str],
        deps: RunDeps | None = None,
        engine: EngineChoice | None = None,
        initiator: str = "api",
        origin: Mapping[str, Any] | None = None,
    ) -> PlanRuntime:
        """A runtime whose cycles are assembled as ``swarm run`` assembles a run.

        runtime.yaml's run budget, run size limit, history budget and durability reach every
        cycle, and credential values of ``env`` are refused in its files.
        """
        from swarm_runtime.orchestrator.assembly import build_orchestrator

        runtime = cls(
            paths,
            deps=deps,
            engine=engine,
            limits=RunLimits(
                durable=settings.durable, max_retry_after_s=settings.max_retry_after_s
            ),
            initiator=initiator,
            origin=origin,
        )

        def assemble(flows: FlowRegistry, origin: dict[str, Any]) -> Orchestrator:
            built = build_orchestrator(
                settings,
                flows,
                env=env,
                runs_dir=runtime.runs_dir,
                deps=runtime.deps,
                engine=runtime.choice,
                origin=origin,
            )
            runtime.credentials = built.credentials
            return built

        runtime.assemble = assemble
        return runtime

    def memory(self) -> MemoryStore:
        """The plan store, opened on first use."""
        if self._store is None:
            from swarm_runtime.plan.memory_store import MemoryStore

            self._store = MemoryStore(self.store_path)
        return self._store

    def close(self) -> None:
        """Close the store."""
        if self._store is not None:
            self._store.close()
            self._store = None

    def run(
        self, plan: ExecutionPlan | Mapping[str, Any], inputs: Iterable[str], *, session: str
    ) -> list[CycleResult]:
        """One cycle per input, in order; a failed cycle does not stop the next one.

        FailFast stops them: it propagates, after the cycle's run is closed. So does a
        cycle stopped or paused: the inputs after it are not run.
        """
        results: list[CycleResult] = []
        for text in inputs:
            results.append(self.run_cycle(plan, input=text, session=session))
            if results[-1].status in ("stopped", "paused"):
                break
        return results

    def run_cycle(
        self, plan: ExecutionPlan | Mapping[str, Any], *, input: str, session: str
    ) -> CycleResult:
        """Check the plan, then run its steps in order into a new run directory."""
        document = plan.model_dump(mode="json") if hasattr(plan, "model_dump") else plan
        origin = {
            "plan": copy.deepcopy(document),
            "store": str(self.store_path.resolve()),  # a resume may start elsewhere
            "repo": str(self.repo_root.resolve()),
            **self.origin,
        }
        params = {"input": input, "session": session}
        try:
            checked = checked_plan(plan)
        except PlanError as exc:
            return self._refused(
                exc, RunSpec((CYCLE_FLOW,), params, PLAN_BACKEND, self.initiator), origin
            )
        orchestrator = self.assemble(PlanFlows(checked, self.repo_root), origin)
        PlanEngines.install(
            orchestrator,
            PlanCycle(checked, self.handlers, self.memory, self.repo_root, self.deps.clock),
        )
        spec = RunSpec((CYCLE_FLOW,), params, PLAN_BACKEND, self.initiator)
        return cycle_result(checked, self.around(orchestrator, lambda: orchestrator.run(spec)))

    def _orchestrator(self, flows: FlowRegistry, origin: dict[str, Any]) -> Orchestrator:
        return Orchestrator(
            flows,
            runs_dir=self.runs_dir,
            deps=self.deps,
            engine=self.choice,
            limits=self.limits,
            repo_root=self.repo_root,
            refuse_values=self.credentials,
            origin=origin,
        )

    def _refused(self, broken: PlanError, spec: RunSpec, origin: dict[str, Any]) -> CycleResult:
        """The cycle of a plan that breaks a rule: a run that fails before any step."""
        why = f"the plan was refused before any step ran: {broken}"
        deps = self.deps
        run_id, path = refused_cycle(
            RefusedRun(
                self.runs_dir,
                deps.clock,
                deps.rand,
                self.limits.durable,
                self.credentials,
                deps.plugins.for_run(),
            ),
            spec.as_document(mode=self.choice.mode, engine=self.choice.engine_id, origin=origin),
            why,
        )
        return CycleResult("failed", run_id, path, {}, why, broken.step_id, broken.rule)


def cycle_result(plan: ExecutionPlan, outcome: RunOutcome) -> CycleResult:
    """How the cycle run ``outcome`` ended, as a :class:`CycleResult`; FailFast raised."""
    failed = _failed_step(plan, outcome)
    done = [step.id for step in plan.steps]
    if failed is not None:
        done = done[: done.index(failed[0])]
    results = _results(outcome.path, done)
    status = outcome.status
    if status == "succeeded" or status in ("stopped", "paused"):
        return CycleResult(status, outcome.run_id, outcome.path, results, outcome.error)  # type: ignore[arg-type]
    if failed is None:
        return CycleResult("failed", outcome.run_id, outcome.path, results, outcome.error)
    step_id, why = failed
    step_type = next(step.type for step in plan.steps if step.id == step_id)
    message = f"step '{step_id}' ({step_type}) failed: {why}"
    if KINDS[step_type].failure == "FailFast":
        raise FailFast(
            f"FailFast: {message}", step_id=step_id, step_type=step_type, run_id=outcome.run_id
        )
    return CycleResult("failed", outcome.run_id, outcome.path, results, message, step_id)


def _failed_step(plan: ExecutionPlan, outcome: RunOutcome) -> tuple[str, str] | None:
    """The plan step that failed the run, and why, from the kernel's ``flow/step: why``."""
    if outcome.status != "failed" or not outcome.error:
        return None
    where, _, why = outcome.error.partition(": ")
    flow, _, step_id = where.partition("/")
    if flow != CYCLE_FLOW or all(step.id != step_id for step in plan.steps):
        return None
    return step_id, why


def _results(path: Path, steps: list[str]) -> dict[str, dict[str, Any]]:
    """The results the run keeps of ``steps`` (those that have one)."""
    from swarm_runtime.inputs.files import read_run_text
    from swarm_runtime.inputs.json_input import load_json

    found: dict[str, dict[str, Any]] = {}
    for step_id in steps:
        file = path / CYCLE_FLOW / "artifacts" / result_name(step_id)
        if file.is_file():
            value = load_json(read_run_text(file))
            found[step_id] = value if isinstance(value, dict) else {}
    return found

"""The plan executor: runs the steps of an execution plan in order, one cycle at a time.

The core is neutral (SPEC §9): it checks the plan's rules before any step runs, then runs
the steps in plan order, handing each handler its payload as written (a copy) and the
results so far (read-only); it never wires, reorders or changes anything. Failures follow
the step type: **CycleFail** ends the cycle, which comes back as a failed
:class:`CycleResult`, and the runtime goes on with the next one; **FailFast** stops the
runtime with :class:`~swarm_runtime.errors.FailFast`, which is raised again once the
cycle's run is closed and is never swallowed here. Every cycle is a run on disk.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

from swarm_runtime.credentials import Credentials
from swarm_runtime.engines.base import Prompt, StepContext, StepEngine
from swarm_runtime.errors import FailFast, PlanError, StorageError, SwarmError
from swarm_runtime.orchestrator.deps import EngineChoice, RunDeps, RunLimits, StepEngines
from swarm_runtime.plan.builtins import default_handlers
from swarm_runtime.plan.calls import HandlerTimeout, ModelCalls, call_handler
from swarm_runtime.plan.cycle import CYCLE_FLOW, PLAN_BACKEND, CycleRecord
from swarm_runtime.plan.handlers import HandlerError, HandlerRegistry, StepCall
from swarm_runtime.plan.kinds import KINDS
from swarm_runtime.plan.outcome import step_record
from swarm_runtime.plan.validate import checked_plan
from swarm_runtime.record import Record
from swarm_runtime.versions import SCHEMA_VERSION

if TYPE_CHECKING:
    from swarm_runtime.contracts.plan import ExecutionPlan, PlanMetadata, StepDefinition
    from swarm_runtime.documents import RunSpecDoc
    from swarm_runtime.plan.memory_store import MemoryStore


class CycleResult(Record):
    """How one cycle ended."""

    status: Literal["succeeded", "failed"]
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
    reads the environment (``swarm plan run`` resolves the settings). Of the run records,
    a plan uses ``deps``' clock, rand, sleep, engines and plugins, ``engine``'s id, mode
    and config, and ``limits``' durable, max_attempts and max_retry_after_s.
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
        deps = deps or RunDeps()
        engine = engine or EngineChoice()
        limits = limits or RunLimits()
        self.runs_dir = Path(paths.runs_dir)
        self.store_path = Path(paths.store_path)
        self.repo_root = Path(paths.repo_root or Path.cwd())
        self.handlers = handlers or default_handlers()
        self.engines = StepEngines(engine, deps.engines, deps.sleep)
        self.engine_id = engine.engine_id
        self.mode = engine.mode
        self.clock = deps.clock
        self.rand = deps.rand
        self.sleep = deps.sleep
        self.durable = limits.durable
        self.credentials = Credentials.of(refuse_values)
        self.plugins = deps.plugins
        self.initiator = initiator
        self.max_attempts = limits.max_attempts
        self.max_retry_after_s = limits.max_retry_after_s
        self.origin = dict(origin or {})
        self._store: MemoryStore | None = None

    def memory(self) -> MemoryStore:
        """The plan store, opened on first use."""
        if self._store is None:
            from swarm_runtime.plan.memory_store import MemoryStore

            self._store = MemoryStore(self.store_path)
        return self._store

    def engine(self, engine_id: str | None) -> StepEngine:
        """An engine of the run's mode, built once per runtime (as a flow run's are)."""
        return self.engines.engine(engine_id)

    def close(self) -> None:
        """Close the store and the engines."""
        if self._store is not None:
            self._store.close()
            self._store = None
        self.engines.close()

    def run(
        self, plan: ExecutionPlan | Mapping[str, Any], inputs: Iterable[str], *, session: str
    ) -> list[CycleResult]:
        """One cycle per input, in order; a failed cycle does not stop the next one.

        FailFast stops them: it propagates, after the cycle's run is closed.
        """
        return [self.run_cycle(plan, input=text, session=session) for text in inputs]

    def run_cycle(
        self, plan: ExecutionPlan | Mapping[str, Any], *, input: str, session: str
    ) -> CycleResult:
        """Check the plan, then run its steps in order into a new run directory."""
        checked: ExecutionPlan | None = None
        broken: PlanError | None = None
        try:
            checked = checked_plan(plan)
        except PlanError as exc:
            broken = exc
        cycle = CycleRecord(
            self.runs_dir,
            self._spec(plan, input, session),
            clock=self.clock,
            rand=self.rand,
            durable=self.durable,
            credentials=self.credentials,
            listeners=self.plugins.for_run(),
        )
        try:
            return self._execute(cycle, checked, broken, input, session)
        finally:
            cycle.close()

    def _spec(self, plan: Any, input: str, session: str) -> RunSpecDoc:
        document = plan.model_dump(mode="json") if hasattr(plan, "model_dump") else plan
        return {
            "schema_version": SCHEMA_VERSION,
            "flows": [CYCLE_FLOW],
            "params": {"input": input, "session": session},
            "backend": PLAN_BACKEND,
            "initiator": self.initiator,
            "mode": self.mode,
            "engine": self.engine_id,
            "start_step": None,
            "end_step": None,
            "origin": {
                "plan": copy.deepcopy(document),
                "store": str(self.store_path),
                **self.origin,
            },
        }

    def _execute(
        self,
        cycle: CycleRecord,
        plan: ExecutionPlan | None,
        broken: PlanError | None,
        input: str,
        session: str,
    ) -> CycleResult:
        results: dict[str, dict[str, Any]] = {}
        failed: tuple[str, str] | None = None
        try:
            cycle.begin()
            if plan is None:
                assert broken is not None
                refused = f"the plan was refused before any step ran: {broken}"
                cycle.complete("failed", refused)
                return CycleResult(
                    "failed", cycle.run_id, cycle.path, {}, refused, broken.step_id, broken.rule
                )
            steps = plan.steps
            for index, step in enumerate(steps):
                next_id = steps[index + 1].id if index + 1 < len(steps) else None
                why = self._step(cycle, plan, step, index + 1, results, input, session, next_id)
                if why is not None:
                    failed = (step.id, why)
                    break
        except KeyboardInterrupt:
            cycle.close_open_step("interrupted")
            cycle.complete("stopped", "interrupted")
            raise
        except SwarmError as exc:  # the run's own files could not be written
            with contextlib.suppress(StorageError):  # a full disk may refuse these too
                cycle.close_open_step(f"{type(exc).__name__}: {exc}")
                cycle.complete("failed", f"{type(exc).__name__}: {exc}")
            return CycleResult("failed", cycle.run_id, cycle.path, results, str(exc))
        if failed is None:
            cycle.complete("succeeded", None)
            return CycleResult("succeeded", cycle.run_id, cycle.path, results)
        step_id, error = failed
        step_type = next(s.type for s in plan.steps if s.id == step_id)
        if KINDS[step_type].failure == "FailFast":
            message = f"FailFast: step '{step_id}' ({step_type}) failed: {error}"
            cycle.complete("failed", message)
            raise FailFast(message, step_id=step_id, step_type=step_type, run_id=cycle.run_id)
        message = f"step '{step_id}' ({step_type}) failed: {error}"
        cycle.complete("failed", message)
        return CycleResult("failed", cycle.run_id, cycle.path, results, message, step_id)

    def _step(
        self,
        cycle: CycleRecord,
        plan: ExecutionPlan,
        step: StepDefinition,
        index: int,
        results: dict[str, dict[str, Any]],
        input: str,
        session: str,
        next_id: str | None,
    ) -> str | None:
        """Run one step and record it; why it failed, or None."""
        kind = KINDS[step.type]
        started = cycle.start_step(
            step.id,
            kind.agent,
            kind.role,
            index,
            self.engine_id if step.type == "LLMCall" else "plan-handler",
        )
        calls = self._model_calls(cycle, plan, step, index)
        call = self._step_call(cycle, plan.metadata, step, results, input, session, calls)
        timeouts = plan.metadata.timeouts
        limit = getattr(timeouts, kind.limit) if timeouts and kind.limit else None
        result, error = self._handle(call, limit, kind.limit)
        for kind_name, payload in calls.events if not call.cancelled.is_set() else ():
            cycle.emit_in_step(kind_name, payload)
        record = step_record(
            step, kind, started, self.clock(), error, result, calls, next_id=next_id
        )
        cycle.finish_step(record, next_id)
        if error is None:
            results[step.id] = copy.deepcopy(dict(result))
        return error

    def _model_calls(
        self, cycle: CycleRecord, plan: ExecutionPlan, step: StepDefinition, index: int
    ) -> ModelCalls:
        """The model calls a step's handler may make: within the plan's budget, retried."""
        budgets, timeouts = plan.metadata.budgets, plan.metadata.timeouts
        return ModelCalls(
            engine_for=self.engine,
            context=lambda prompt, attempt: self._context(
                cycle, step, index, len(plan.steps), prompt, attempt, timeouts
            ),
            prompt_budget=budgets.promptTokens if budgets else None,
            max_attempts=self.max_attempts,
            sleep=self.sleep,
            max_retry_after_s=self.max_retry_after_s,
        )

    def _step_call(
        self,
        cycle: CycleRecord,
        metadata: PlanMetadata,
        step: StepDefinition,
        results: dict[str, dict[str, Any]],
        input: str,
        session: str,
        calls: ModelCalls,
    ) -> StepCall:
        """What a step's handler is given: copies and read-only views, never the originals."""
        return StepCall(
            step_id=step.id,
            step_type=step.type,
            payload=copy.deepcopy(step.payload),
            results=MappingProxyType(
                {key: MappingProxyType(copy.deepcopy(value)) for key, value in results.items()}
            ),
            input=input,
            session_ref=session,
            metadata=MappingProxyType(metadata.model_dump(mode="json", exclude_none=True)),
            run_id=cycle.run_id,
            repo_root=self.repo_root,
            clock=self.clock,
            memory=self.memory,
            complete=calls,
        )

    def _handle(
        self, call: StepCall, limit: int | None, limit_name: str | None
    ) -> tuple[Any, str | None]:
        """Call the step's handler: its result, and why the step failed or None."""
        result: Any = None
        error: str | None
        try:
            result = call_handler(self.handlers.get(call.step_type), call, limit, limit_name)
            error = _result_problem(call.step_type, result)
        except (HandlerError, HandlerTimeout, SwarmError) as exc:
            error = str(exc)
        except Exception as exc:  # a handler's bug fails its step, not the runtime
            error = f"{type(exc).__name__} in the {call.step_type} handler: {exc}"
        return result, error

    def _context(
        self,
        cycle: CycleRecord,
        step: StepDefinition,
        index: int,
        total: int,
        prompt: Prompt,
        attempt: int,
        timeouts: Any,
    ) -> StepContext:
        llm_ms = timeouts.llmMs if timeouts else None
        return StepContext(
            repo_root=self.repo_root,
            run_id=cycle.run_id,
            flow_key=CYCLE_FLOW,
            step_id=step.id,
            step_index=index,
            total_steps=total,
            spec=dict(cycle.spec),
            flow_title="execution plan",
            step_role=KINDS[step.type].role,
            step_agents=(KINDS[step.type].agent,),
            history=(),
            run_base=cycle.path / CYCLE_FLOW,
            attempt=attempt,
            prompt=prompt,
            timeout_s=llm_ms / 1000.0 if llm_ms else None,
            extra={"echo_prompt": True},
        )


def _result_problem(step_type: str, result: Any) -> str | None:
    from swarm_runtime.contracts.plan import result_problem

    if not isinstance(result, Mapping):
        return f"the {step_type} handler returned {type(result).__name__}, not an object"
    problem = result_problem(step_type, dict(result))
    return f"the {step_type} handler's result breaks its contract: {problem}" if problem else None

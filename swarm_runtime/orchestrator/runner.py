"""The stepwise orchestrator: runs flows one step at a time and records everything.

For each step execution it builds the prompt, calls the engine once, writes the transcript
and the receipt, emits ``step_start`` … ``step_end``/``step_error`` and ``route_decision``,
and routes. The sequencing invariants of SPEC §3.3 hold on every path out of a run: a
failing step, an engine that raises, a routing error and Ctrl-C all end in exactly one
``run_completed``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from swarm_runtime.engines.base import (
    HistoryItem,
    Prompt,
    StepContext,
    StepEngine,
    StepOutcome,
    StepResult,
    TokenUsage,
)
from swarm_runtime.engines.registry import EngineOptions, EngineRegistry, default_registry
from swarm_runtime.engines.scenario import Scenario
from swarm_runtime.errors import ConfigError, RoutingError, StorageError, SwarmUsageError
from swarm_runtime.flow.registry import FlowRegistry
from swarm_runtime.flow.spec import FlowSpec, StepSpec
from swarm_runtime.orchestrator.history import History, HistoryBudget
from swarm_runtime.orchestrator.prompt import request_text, system_prompt, user_prompt
from swarm_runtime.orchestrator.routing import Decision, decide, loop_key
from swarm_runtime.record import Record, field
from swarm_runtime.storage.layout import RunLayout, new_run_id
from swarm_runtime.storage.store import (
    EventLog,
    json_escape,
    preserve_previous,
    write_json_atomic,
    write_jsonl_atomic,
)
from swarm_runtime.timeutil import Clock, format_ts, interruptible_sleep, system_clock

__all__ = ["Orchestrator", "RunOutcome", "RunSpec"]

EventObserver = Callable[[dict[str, Any]], None]


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

    def as_dict(self, *, mode: str, engine: str) -> dict[str, Any]:
        """The document written to ``spec.json``."""
        return {
            "flows": list(self.flows),
            "params": self.params,
            "backend": self.backend,
            "initiator": self.initiator,
            "mode": mode,
            "engine": engine,
            "start_step": self.start_step,
            "end_step": self.end_step,
        }


class RunOutcome(Record):
    """How a run ended."""

    run_id: str
    status: str
    """succeeded | failed | stopped."""
    error: str | None
    path: Path
    summary: dict[str, Any]
    interrupted: bool = False
    warnings: tuple[str, ...] = ()
    """Things that went wrong beside the run, e.g. a progress display that failed."""


class _Totals:
    """Counters of a run or of one flow in it."""

    __slots__ = (
        "completion_tokens",
        "cost_usd",
        "duration_ms",
        "executed",
        "loops",
        "prompt_tokens",
        "steps_completed",
    )

    def __init__(self) -> None:
        self.steps_completed = self.executed = self.loops = 0
        self.prompt_tokens = self.completion_tokens = self.duration_ms = 0
        self.cost_usd = 0.0

    def as_flow_dict(self) -> dict[str, Any]:
        return {
            "steps_executed": self.executed,
            "loop_iterations": self.loops,
            "tokens": self.prompt_tokens + self.completion_tokens,
            "cost_usd": round(self.cost_usd, 6),
            "duration_ms": self.duration_ms,
        }


class _Interrupted(Exception):
    """Carries a KeyboardInterrupt out of a step so the run can be closed cleanly."""


class Orchestrator:
    """Runs flows from a :class:`FlowRegistry` with engines from an :class:`EngineRegistry`.

    The clock, the id factory, the sleep and the engines are passed in; nothing here reads
    the environment.
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
        self.refuse_values = tuple(v for v in refuse_values if v)
        """Credential values that must never be written (checked before every step's files)."""
        self.engine_config = dict(engine_config or {})
        """Settings for engine factories (api key, base URL, model…), resolved at the edge."""
        """Calls per step execution when the engine answers ``retryable`` (§7.3)."""
        self.jitter: Callable[[], float] = jitter or _random_fraction
        self.durable = durable
        self.history_budget = history_budget or HistoryBudget()
        self.repo_root = repo_root or Path.cwd()
        self.observer = observer
        self.result_observer = result_observer
        self.max_steps = max_steps
        """Step executions a run may make (default: 10 per step of its flows, at least 100)."""
        self._engine_cache: dict[str, StepEngine] = {}
        self._system_prompts: dict[tuple[str, str], tuple[str, str]] = {}
        self._stop_requested = False
        self._abort_requested = False
        self._in_engine = False

    def interrupt(self) -> bool:
        """Ask the run to stop; call it from a SIGINT handler or another thread.

        The first call stops the run before its next step. A second call also aborts the
        engine call under way: it returns True when one is, so a signal handler raises
        KeyboardInterrupt there. Nothing is interrupted mid-write, so files stay whole.
        """
        if self._stop_requested:
            self._abort_requested = True
        self._stop_requested = True
        return self._abort_requested and self._in_engine

    # -- public API ----------------------------------------------------------------------

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
        self._stop_requested = self._abort_requested = False
        plan = self._plan(spec)
        run = _Run(self, spec, plan)
        return run.execute()

    # -- helpers used by _Run ------------------------------------------------------------

    def _plan(self, spec: RunSpec) -> list[tuple[FlowSpec, str | None, str | None]]:
        """Load flows and resolve the slice before anything is written."""
        if not spec.flows:
            raise SwarmUsageError(f"a run needs at least one flow (none in {self.flows.flows_dir})")
        repeated = sorted({key for key in spec.flows if spec.flows.count(key) > 1})
        if repeated:
            raise SwarmUsageError(
                f"flow(s) {', '.join(repeated)} listed more than once; a run runs each flow once"
            )
        flows = [self.flows.get(key) for key in spec.flows]
        for flow_key, steps in self.engine_strategy.items():
            strategy_flow = self.flows.get(flow_key)  # an unknown flow is an error too
            for step_id in steps:
                if not strategy_flow.has_step(step_id):
                    raise ConfigError(
                        f"engine_strategy: flow '{flow_key}' has no step '{step_id}' "
                        f"(steps: {', '.join(s.id for s in strategy_flow.steps)})"
                    )
        start = _locate(spec.start_step, flows, "--from") if spec.start_step else None
        end = _locate(spec.end_step, flows, "--to") if spec.end_step else None
        first_flow = start[0] if start else 0
        last_flow = end[0] if end else len(flows) - 1
        if first_flow > last_flow or (
            start
            and end
            and start[0] == end[0]
            and flows[start[0]].index_of(start[1]) > flows[end[0]].index_of(end[1])
        ):
            raise SwarmUsageError(
                f"--from {spec.start_step} comes after --to {spec.end_step} in the run order"
            )
        if self.scenario is not None:
            self.scenario.check_steps((f.key, [s.id for s in f.steps]) for f in flows)
        plan = []
        for flow in flows:
            for step in flow.steps:
                self.engine_for(flow, step)  # unknown engine or mode: fail before any write
        for position in range(first_flow, last_flow + 1):
            plan.append(
                (
                    flows[position],
                    start[1] if start and position == start[0] else None,
                    end[1] if end and position == end[0] else None,
                )
            )
        return plan

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

    def system_prompt(self, flow: FlowSpec, step: StepSpec) -> tuple[str, str]:
        """A step's system prompt and its JSON-escaped form (fixed within a flow)."""
        key = (flow.key, step.id)
        cached = self._system_prompts.get(key)
        if cached is None:
            text = system_prompt(flow, step, persona=self.persona(step.primary_agent))
            cached = self._system_prompts[key] = (text, json_escape(text))
        return cached

    def persona(self, agent_key: str) -> str | None:
        """The agent's persona text from ``<flows_dir>/agents/<agent>.md``, if any."""
        return self.flows.persona(agent_key)


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


class _Run:
    """The state of one run while it executes."""

    def __init__(
        self,
        owner: Orchestrator,
        spec: RunSpec,
        plan: list[tuple[FlowSpec, str | None, str | None]],
    ) -> None:
        self.o = owner
        self.spec = spec
        self.plan = plan
        self.clock = owner.clock
        self.totals = _Totals()
        self.flow_totals: dict[str, _Totals] = {}
        self.seq = 0
        self.history = History(owner.history_budget)
        self.request = request_text(spec.params)
        self.user_json_head = json_escape(user_prompt(self.request, "x")[:-1])
        self.spec_dict = spec.as_dict(mode=owner.mode, engine=owner.engine_id)
        self.flow_bases: dict[str, Path] = {}
        self.executions: dict[tuple[str, str], int] = {}
        self.loop_counts: dict[tuple[str, str], int] = {}
        self.open_step: tuple[str, str, str, datetime, str] | None = None
        self.created_at = format_ts(self.clock())
        self.layout, self.log = self._create()
        self.status = "pending"
        self.error: str | None = None
        self.observer = owner.observer
        self.observer_error: str | None = None
        self.step_budget = owner.max_steps or _default_max_steps(plan)

    # -- files and events ----------------------------------------------------------------

    def _create(self) -> tuple[RunLayout, EventLog]:
        runs_dir = self.o.runs_dir
        if runs_dir.exists() and not runs_dir.is_dir():
            raise ConfigError(f"runs dir {runs_dir} exists and is not a directory")
        try:
            runs_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StorageError(f"cannot create runs dir {runs_dir}: {exc.strerror}") from exc
        for _ in range(100):
            layout = RunLayout(runs_dir, new_run_id(self.clock(), self.o.rand))
            try:
                os.mkdir(layout.root)
            except FileExistsError:
                continue  # another process took this id in the same second
            except OSError as exc:
                raise StorageError(f"cannot create {layout.root}: {exc.strerror}") from exc
            write_json_atomic(layout.spec, self.spec_dict, durable=self.o.durable, pretty=True)
            return layout, EventLog(layout.events, durable=self.o.durable)
        raise StorageError(f"could not find a free run id in {runs_dir} after 100 tries")

    @property
    def run_id(self) -> str:
        return self.layout.run_id

    def emit(
        self,
        kind: str,
        payload: dict[str, Any],
        *,
        flow_key: str | None = None,
        step_id: str | None = None,
        agent_key: str | None = None,
        ts: str | None = None,
    ) -> None:
        event = {
            "run_id": self.run_id,
            "seq": self.seq + 1,
            "ts": ts or format_ts(self.clock()),
            "kind": kind,
            "flow_key": flow_key,
            "step_id": step_id,
            "agent_key": agent_key,
            "payload": payload,
        }
        self.log.append(event)
        self.seq += 1  # only once the line is written: seq never skips
        observer = self.observer
        if observer is not None:
            try:
                observer(event)
            except Exception as exc:  # a broken display must not break the run's record
                self.observer = None
                self.observer_error = f"{type(exc).__name__}: {exc}"

    def summary(self, *, completed_at: str | None = None) -> dict[str, Any]:
        t = self.totals
        return {
            "run_id": self.run_id,
            "status": self.status,
            "flows": list(self.spec.flows),
            "backend": self.spec.backend,
            "mode": self.o.mode,
            "engine": self.o.engine_id,
            "created_at": self.created_at,
            "completed_at": completed_at,
            "error": self.error,
            "steps_completed": t.steps_completed,
            "total_steps_executed": t.executed,
            "loop_iterations": t.loops,
            "tokens": {
                "prompt": t.prompt_tokens,
                "completion": t.completion_tokens,
                "total": t.prompt_tokens + t.completion_tokens,
            },
            "cost_usd": round(t.cost_usd, 6),
            "flow_totals": {key: ft.as_flow_dict() for key, ft in self.flow_totals.items()},
        }

    def set_status(self, status: str, *, completed_at: str | None = None) -> None:
        self.status = status
        write_json_atomic(
            self.layout.meta,
            self.summary(completed_at=completed_at),
            durable=self.o.durable,
            pretty=True,
        )

    # -- the run -------------------------------------------------------------------------

    def execute(self) -> RunOutcome:
        interrupted = False
        try:
            self.set_status("pending")
            self.emit(
                "run_created",
                {
                    "flows": list(self.spec.flows),
                    "backend": self.spec.backend,
                    "initiator": self.spec.initiator,
                    "stepwise": True,
                },
            )
            self.set_status("running")
            self.emit("run_started", {"mode": "stepwise", "routing_enabled": True})
            try:
                for flow, start, end in self.plan:
                    if not self._run_flow(flow, start, end):
                        break
            except (KeyboardInterrupt, _Interrupted):
                interrupted = True
                self._close_open_step("interrupted")
                self.status, self.error = "stopped", "interrupted"
            except Exception as exc:  # storage or engine trouble: the run still completes
                self._close_open_step(f"{type(exc).__name__}: {exc}")
                self.status, self.error = "failed", f"{type(exc).__name__}: {exc}"
            final = self.status if self.status != "running" else "succeeded"
            try:
                self.emit(
                    "run_completed",
                    {
                        "status": final,
                        "error": self.error,
                        "steps_completed": self.totals.steps_completed,
                        "total_steps_executed": self.totals.executed,
                    },
                )
            except Exception as exc:
                # The log cannot be written (disk full, …): say so in meta.json at least.
                self.status, self.error = "failed", f"{type(exc).__name__}: {exc}"
                self.set_status("failed", completed_at=format_ts(self.clock()))
                raise
            completed = format_ts(self.clock())
            self.set_status(final, completed_at=completed)
        finally:
            self.log.close()
            for engine in self.o._engine_cache.values():
                engine.close()
            self.o._engine_cache.clear()
        return RunOutcome(
            run_id=self.run_id,
            status=self.status,
            error=self.error,
            path=self.layout.root,
            summary=self.summary(completed_at=completed),
            interrupted=interrupted,
            warnings=(f"progress display stopped: {self.observer_error}",)
            if self.observer_error
            else (),
        )

    def _close_open_step(self, error: str) -> None:
        if self.open_step is None:
            return
        flow_key, step_id, agent_key, started, engine_id = self.open_step
        self.open_step = None
        now = self.clock()
        self.emit(
            "step_error",
            {
                "status": "failed",
                "duration_ms": _ms_between(started, now),
                "error": error,
                "engine": engine_id,
            },
            flow_key=flow_key,
            step_id=step_id,
            agent_key=agent_key,
        )

    def _run_flow(self, flow: FlowSpec, start: str | None, end: str | None) -> bool:
        """Run one flow; False when the run failed and must not go on."""
        current: str | None = start or flow.steps[0].id
        began = self.clock()
        flow_totals = self.flow_totals.setdefault(flow.key, _Totals())
        while current is not None:
            if self.o._stop_requested:
                raise _Interrupted()
            if self.totals.executed >= self.step_budget:
                self.status = "failed"
                self.error = (
                    f"{flow.key}/{current}: the run reached its limit of {self.step_budget} "
                    "step executions; a route loops without end (a next or branch back to an "
                    "earlier step?) - fix the flow, or raise the limit with --max-steps"
                )
                return False
            step = flow.step(current)
            decision = self._run_step(flow, step, end)
            flow_totals.duration_ms = _ms_between(began, self.clock())
            if decision is None:
                return False
            current = decision.to_step
        return True

    def _run_step(self, flow: FlowSpec, step: StepSpec, end: str | None) -> Decision | None:
        engine = self.o.engine_for(flow, step)
        agent = step.primary_agent
        iteration = self.executions.get((flow.key, step.id), 0)
        self.executions[(flow.key, step.id)] = iteration + 1
        index = flow.index_of(step.id) + 1
        rendered = self.history.render()
        system, system_json = self.o.system_prompt(flow, step)
        prompt = Prompt(system, user_prompt(self.request, rendered.text))
        run_base = self.flow_bases.get(flow.key)
        if run_base is None:
            run_base = self.flow_bases[flow.key] = self.layout.flow_base(flow.key)
        ctx = StepContext(
            repo_root=self.o.repo_root,
            run_id=self.run_id,
            flow_key=flow.key,
            step_id=step.id,
            step_index=index,
            total_steps=len(flow.steps),
            spec=self.spec_dict,
            flow_title=flow.title,
            step_role=step.role,
            step_agents=step.agents,
            history=rendered.items,
            run_base=run_base,
            iteration=iteration,
            handoff_fields=step.handoff_fields(),
            prompt=prompt,
        )
        started = self.clock()
        started_ts = format_ts(started)
        flow_totals = self.flow_totals.setdefault(flow.key, _Totals())
        self.totals.executed += 1
        flow_totals.executed += 1
        self.emit(
            "step_start",
            {
                "role": step.role,
                "agents": list(step.agents),
                "step_index": index,
                "engine": engine.engine_id,
                "iteration": iteration,
            },
            flow_key=flow.key,
            step_id=step.id,
            agent_key=agent,
            ts=started_ts,
        )
        self.open_step = (flow.key, step.id, agent, started, engine.engine_id)
        max_attempts = step.max_attempts or self.o.max_attempts
        attempt = 0
        while True:
            attempt += 1
            error: str | None = None
            outcome: StepOutcome | None = None
            try:
                self.o._in_engine = True
                if self.o._abort_requested:  # asked while the step was being prepared
                    raise KeyboardInterrupt
                outcome = engine.run_step(ctx)
            except KeyboardInterrupt:
                raise _Interrupted() from None
            except Exception as exc:  # an engine bug must still end the step and the run
                error = f"engine '{engine.engine_id}' raised {type(exc).__name__}: {exc}"
            finally:
                self.o._in_engine = False
            for event in outcome.events if outcome else ():
                self.emit(
                    event.kind,
                    event.payload,
                    flow_key=flow.key,
                    step_id=step.id,
                    agent_key=agent,
                    ts=event.ts,
                )
            if outcome is None or outcome.result_code != "retryable" or attempt >= max_attempts:
                break
            self._wait_before_retry(flow, step, agent, outcome, attempt, max_attempts)
        completed = self.clock()
        if outcome is None:
            outcome = StepOutcome(
                result=StepResult(step_id=step.id, status="failed", error=error),
                mode=engine.mode,
            )
        if self.o.result_observer is not None:
            self.o.result_observer(flow.key, outcome.result)
        code = outcome.result_code
        if error is None:
            error = self._outcome_error(step, outcome)
        if error is None and step.budget is not None:
            error = _budget_error(
                step, outcome.tokens, _ms_between(started, completed), outcome.cost_usd
            )
        handoff = outcome.handoff
        receipt_path, transcript_path = self.layout.step_files(
            flow.key, step.id, agent, engine.engine_short
        )
        completed_ts = format_ts(completed)
        receipt: dict[str, Any] = {
            "engine": engine.engine_id,
            "mode": outcome.mode,
            "provider": outcome.provider,
            "model": outcome.model,
            "step_id": step.id,
            "flow_key": flow.key,
            "run_id": self.run_id,
            "agent_key": agent,
            "started_at": started_ts,
            "completed_at": completed_ts,
            "duration_ms": _ms_between(started, completed),
            "status": "succeeded",
            "tokens": outcome.tokens.as_dict(),
            "transcript_path": "llm/" + os.path.basename(transcript_path),
            "iteration": iteration,
            "result_code": outcome.result_code,
            "attempt": attempt,
            "max_attempts": max_attempts,
        }
        if handoff is not None:
            receipt["handoff"] = handoff
        if rendered.truncation:
            receipt["context_truncation"] = rendered.truncation
        if outcome.extra_receipt:
            receipt.update(outcome.extra_receipt)
        decision: Decision | None = None
        if error is None:
            executions = self.loop_counts.get((flow.key, loop_key(step)), 0) + 1
            try:
                decision = decide(
                    flow,
                    step,
                    handoff=handoff,
                    receipt=receipt,
                    executions=executions,
                    linear_only=code == "skipped",
                )
            except RoutingError as exc:
                error = str(exc)
            else:
                if end == step.id and decision.decision != "loop":
                    decision = Decision(
                        None,
                        "terminate",
                        f"end_step:{step.id}",
                        decision.source,
                        {
                            **decision.receipt_routing,
                            "decision": "terminate",
                            "reason": f"end_step:{step.id}",
                        },
                    )
                receipt["routing"] = decision.receipt_routing
        if error is not None:
            receipt["status"] = "failed"
            receipt["error"] = error
        if iteration:  # the step ran before in this run: keep its files as ~n
            preserve_previous(receipt_path)
            preserve_previous(transcript_path)
        if rendered.json_text is not None:
            user_json = self.user_json_head + rendered.json_text
        else:
            user_json = json_escape(prompt.user)
        lines: list[dict[str, Any] | str] = [
            # The same bytes encode_line would write, from escapes made once per part.
            f'{{"content": "{system_json}", "role": "system", "timestamp": "{started_ts}"}}\n',
            f'{{"content": "{user_json}", "role": "user", "timestamp": "{started_ts}"}}\n',
        ]
        lines.extend({"timestamp": completed_ts, **line} for line in outcome.transcript)
        if self.o.refuse_values:
            self._refuse_secrets(transcript_path, lines, receipt)
        write_jsonl_atomic(transcript_path, lines, durable=self.o.durable)
        write_json_atomic(receipt_path, receipt, durable=self.o.durable)
        duration = receipt["duration_ms"]
        for totals in (self.totals, flow_totals):
            totals.prompt_tokens += outcome.tokens.prompt
            totals.completion_tokens += outcome.tokens.completion
            totals.cost_usd += outcome.cost_usd or 0.0
        self.open_step = None
        if error is not None or decision is None:
            self.emit(
                "step_error",
                {
                    "status": "failed",
                    "duration_ms": duration,
                    "error": error,
                    "engine": engine.engine_id,
                },
                flow_key=flow.key,
                step_id=step.id,
                agent_key=agent,
            )
            self.status, self.error = "failed", f"{flow.key}/{step.id}: {error}"
            return None
        self.totals.steps_completed += 1
        self.emit(
            "step_end",
            {
                "status": "skipped" if code == "skipped" else "succeeded",
                "duration_ms": duration,
                "engine": engine.engine_id,
            },
            flow_key=flow.key,
            step_id=step.id,
            agent_key=agent,
        )
        self.history.add(HistoryItem(flow.key, step.id, agent, iteration, outcome.result.output))
        loop_state: dict[str, int] = {}
        if step.routing.kind == "microloop" and code != "skipped":
            key = loop_key(step)
            executions = self.loop_counts.get((flow.key, key), 0) + 1
            loop_state[key] = executions
            if decision.decision == "loop":
                self.loop_counts[(flow.key, key)] = executions
                self.totals.loops += 1
                flow_totals.loops += 1
            else:
                self.loop_counts.pop((flow.key, key), None)
        self.emit(
            "route_decision",
            {
                "from_step": step.id,
                "to_step": decision.to_step,
                "decision": decision.decision,
                "reason": decision.reason,
                "loop_state": loop_state,
                "routing_source": decision.source,
            },
            flow_key=flow.key,
            step_id=step.id,
            agent_key=agent,
        )
        return decision

    def _refuse_secrets(
        self, transcript_path: str, lines: list[dict[str, Any] | str], receipt: dict[str, Any]
    ) -> None:
        text = "".join(line if isinstance(line, str) else repr(line) for line in lines)
        text += repr(receipt)
        for value in self.o.refuse_values:
            if value in text:
                raise StorageError(
                    f"refusing to write {transcript_path} and its receipt: they hold the value "
                    f"of a credential ({value[:4]}…)"
                )

    def _wait_before_retry(
        self,
        flow: FlowSpec,
        step: StepSpec,
        agent: str,
        outcome: StepOutcome,
        attempt: int,
        max_attempts: int,
    ) -> None:
        """Log the retry, then sleep: ``retry_after_ms`` when given, else backoff (§7.3)."""
        if outcome.retry_after_ms is not None:
            delay = outcome.retry_after_ms / 1000.0
        else:
            base = min(30.0, 0.5 * 2 ** (attempt - 1))
            delay = base / 2 + base / 2 * self.o.jitter()  # "equal jitter"
        self.emit(
            "log",
            {
                "message": f"retrying {flow.key}/{step.id} in {delay:.3f} s "
                f"(attempt {attempt + 1} of {max_attempts})",
                "attempt": attempt,
                "max_attempts": max_attempts,
                "error": outcome.result.error,
                "retry_in_ms": round(delay * 1000),
            },
            flow_key=flow.key,
            step_id=step.id,
            agent_key=agent,
        )
        try:
            self.o._in_engine = True  # a second Ctrl-C aborts the wait like the call
            if self.o._abort_requested:
                raise KeyboardInterrupt
            self.o.sleep(delay)
        except KeyboardInterrupt:
            raise _Interrupted() from None
        finally:
            self.o._in_engine = False

    def _outcome_error(self, step: StepSpec, outcome: StepOutcome) -> str | None:
        code = outcome.result_code
        if outcome.result.step_id != step.id:
            return (
                f"engine returned a result for step '{outcome.result.step_id}' while running "
                f"'{step.id}'"
            )
        if code == "fatal":
            return outcome.result.error or "fatal error"
        if code == "retryable":
            attempts = step.max_attempts or self.o.max_attempts
            detail = outcome.result.error or "no detail"
            return f"still failing after {attempts} attempt(s): {detail}"
        if code == "blocked":
            detail = outcome.result.error or "no detail"
            return (
                f"step returned result_code 'blocked' ({detail}); pausing for external input "
                "is not supported in this version, so the step fails"
            )
        if outcome.result.status == "failed":
            return outcome.result.error or "the engine reported a failure without a message"
        return None


def _random_fraction() -> float:
    import random  # only when a retry happens: random costs start-up time

    return random.random()


def _default_max_steps(plan: list[tuple[FlowSpec, str | None, str | None]]) -> int:
    return max(100, 10 * sum(len(flow.steps) for flow, _, _ in plan))


def _ms_between(start: datetime, end: datetime) -> int:
    delta = end - start
    micro = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    return max(0, micro // 1000)


def _budget_error(
    step: StepSpec, tokens: TokenUsage, duration_ms: int, cost_usd: float | None
) -> str | None:
    budget = step.budget
    if budget is None:
        return None
    if budget.tokens is not None and tokens.total > budget.tokens:
        return f"token budget exceeded: used {tokens.total}, budget {budget.tokens}"
    if budget.cost_usd is not None and cost_usd is not None and cost_usd > budget.cost_usd:
        return f"cost budget exceeded: spent ${cost_usd:.6f}, budget ${budget.cost_usd:.6f}"
    if budget.duration_ms is not None and duration_ms > budget.duration_ms:
        return f"duration budget exceeded: took {duration_ms} ms, budget {budget.duration_ms} ms"
    return None

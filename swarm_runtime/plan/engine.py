"""The plan-handler engine: the kernel's engine of one plan step, which runs its handler.

The kernel calls it as it calls any engine, once per attempt (docs/plans.md), so a plan step has
the events and result codes of a flow step (docs/contract/events.md,
docs/contract/steps.md#result-codes). It hands the handler the step's payload as the plan wrote it
(a copy) and the results of the steps before it (read-only, read from the run: a resumed cycle has
them too), within the type's time limit. A handler that fails fails the step (``fatal``); a model
that answers ``retryable`` makes the step's answer ``retryable``, and the kernel runs the step
again after its one backoff.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from swarm_runtime.engines.base import Prompt, StepContext, StepEngine, StepOutcome
from swarm_runtime.errors import SwarmError
from swarm_runtime.plan.calls import HandlerTimeout, ModelCalls, RetryableAnswer, call_handler
from swarm_runtime.plan.cycle import LOCAL_ENGINE
from swarm_runtime.plan.handlers import HandlerError, StepCall
from swarm_runtime.plan.kinds import KINDS
from swarm_runtime.plan.outcome import results_before, retryable_outcome, step_outcome
from swarm_runtime.record import Record
from swarm_runtime.timeutil import Clock

if TYPE_CHECKING:
    from pathlib import Path

    from swarm_runtime.contracts.plan import ExecutionPlan, StepDefinition
    from swarm_runtime.plan.handlers import HandlerRegistry
    from swarm_runtime.plan.memory_store import MemoryStore


class PlanCycle(Record):
    """What every step of a plan's cycles works with, beside the kernel's context."""

    plan: ExecutionPlan
    handlers: HandlerRegistry
    memory: Callable[[], MemoryStore]
    """The plan store (opened on first use)."""
    repo_root: Path
    clock: Clock

    def step(self, step_id: str) -> StepDefinition:
        """The plan's step ``step_id``."""
        return next(step for step in self.plan.steps if step.id == step_id)


class PlanStepEngine(StepEngine):
    """Runs one plan step's handler; named as the model's engine when it is a model step."""

    def __init__(
        self,
        step: StepDefinition,
        cycle: PlanCycle,
        *,
        model: StepEngine | None,
        models: Callable[[str | None], StepEngine],
    ) -> None:
        self.step = step
        self.cycle = cycle
        self.kind = KINDS[step.type]
        self.models = models
        """The run's engines by id (a handler may name one; default: the run's)."""
        self.engine_id = model.engine_id if model is not None else LOCAL_ENGINE
        self.engine_short = model.engine_short if model is not None else "local"
        self.mode = model.mode if model is not None else "local"

    def request_body(self, ctx: StepContext) -> dict[str, Any]:
        """The step's type and payload: what its handler is given of the plan."""
        return {"engine": LOCAL_ENGINE, "type": self.step.type, "payload": self.step.payload}

    def run_step(self, ctx: StepContext) -> StepOutcome:
        """One attempt of the step: its handler, within the type's time limit."""
        metadata = self.cycle.plan.metadata
        budgets, timeouts = metadata.budgets, metadata.timeouts
        calls = ModelCalls(
            engine_for=self.models,
            context=lambda prompt: self._model_context(ctx, prompt),
            prompt_budget=budgets.promptTokens if budgets else None,
        )
        call = self._call(ctx, calls)
        limit = getattr(timeouts, self.kind.limit) if timeouts and self.kind.limit else None
        result: Any = None
        error: str | None
        try:
            result = call_handler(
                self.cycle.handlers.get(self.step.type), call, limit, self.kind.limit
            )
            error = _result_problem(self.step.type, result)
        except RetryableAnswer as exc:
            return retryable_outcome(self.step, self.kind.role, exc.outcome, calls)
        except (HandlerError, HandlerTimeout, SwarmError) as exc:
            error = str(exc)
        except Exception as exc:  # a handler's bug fails its step, not the runtime
            error = f"{type(exc).__name__} in the {self.step.type} handler: {exc}"
        told = None if call.cancelled.is_set() else calls  # a late worker's calls go unsaid
        return step_outcome(self.step, self.kind.role, error, result, told)

    def _call(self, ctx: StepContext, calls: ModelCalls) -> StepCall:
        """What the handler is given: copies and read-only views, never the originals."""
        cycle, step = self.cycle, self.step
        results = results_before(cycle.plan, step.id, ctx.run_base / "artifacts")
        params = ctx.spec.get("params") or {}
        return StepCall(
            step_id=step.id,
            step_type=step.type,
            payload=copy.deepcopy(step.payload),
            results=MappingProxyType(
                {key: MappingProxyType(value) for key, value in results.items()}
            ),
            input=str(params.get("input", "")),
            session_ref=str(params.get("session", "")),
            metadata=MappingProxyType(
                cycle.plan.metadata.model_dump(mode="json", exclude_none=True)
            ),
            run_id=ctx.run_id,
            repo_root=cycle.repo_root,
            clock=cycle.clock,
            memory=cycle.memory,
            complete=calls,
        )

    def _model_context(self, ctx: StepContext, prompt: Prompt) -> StepContext:
        """What the model is asked: the handler's prompt, within ``timeouts.llmMs``."""
        timeouts = self.cycle.plan.metadata.timeouts
        llm_ms = timeouts.llmMs if timeouts else None
        return StepContext(
            repo_root=self.cycle.repo_root,
            run_id=ctx.run_id,
            flow_key=ctx.flow_key,
            step_id=ctx.step_id,
            step_index=ctx.step_index,
            total_steps=ctx.total_steps,
            spec=ctx.spec,
            flow_title=ctx.flow_title,
            step_role=ctx.step_role,
            step_agents=ctx.step_agents,
            history=(),
            run_base=ctx.run_base,
            iteration=ctx.iteration,
            attempt=ctx.attempt,
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

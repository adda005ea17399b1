"""A plan cycle as the run kernel sees it: one flow, ``cycle``, whose steps are the plan's.

The kernel runs a cycle as it runs any flow (attempts and backoff, receipts, events,
checkpoints, budgets, the run lock, pause, stop and resume): :class:`PlanFlows` gives it
the flow, each plan step a linear step, and :class:`PlanEngines` the engine of each step,
a :class:`~swarm_runtime.plan.engine.PlanStepEngine` that runs the step's handler.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from swarm_runtime.errors import FlowDefinitionError, SwarmUsageError
from swarm_runtime.flow.registry import FlowRegistry
from swarm_runtime.flow.spec import FlowSpec, RoutingSpec, StepSpec, TeachingNotes
from swarm_runtime.orchestrator.plan import StepEngines
from swarm_runtime.plan.cycle import CYCLE_FLOW
from swarm_runtime.plan.engine import PlanCycle, PlanStepEngine
from swarm_runtime.plan.kinds import KINDS

if TYPE_CHECKING:
    from swarm_runtime.contracts.plan import ExecutionPlan
    from swarm_runtime.engines.base import StepEngine
    from swarm_runtime.orchestrator.run import Orchestrator

_NO_NOTES = TeachingNotes((), (), (), ())


def cycle_flow(plan: ExecutionPlan, where: Path) -> FlowSpec:
    """The plan as a flow: its steps in plan order, each linear to the next.

    A step that calls no model has one attempt: only a model's ``retryable`` answer is
    worth another.
    """
    return FlowSpec(
        key=CYCLE_FLOW,
        title="execution plan",
        description="a cycle of an execution plan (docs/plans.md)",
        steps=tuple(
            StepSpec(
                id=step.id,
                agents=(KINDS[step.type].agent,),
                role=KINDS[step.type].role,
                teaching_notes=_NO_NOTES,
                routing=RoutingSpec(),
                line=index,
                max_attempts=None if step.type == "LLMCall" else 1,
            )
            for index, step in enumerate(plan.steps, start=1)
        ),
        path=where,
    )


class PlanFlows(FlowRegistry):
    """The flows of a plan cycle's run: ``cycle`` alone, made from the plan, no files read."""

    def __init__(self, plan: ExecutionPlan, where: Path) -> None:
        # Nothing of a flows directory is read: the one flow is the plan's.
        self.flows_dir = Path(where)
        self.flow = cycle_flow(plan, self.flows_dir)
        self.system_prompts: dict[tuple[str, str], str] = {}

    @property
    def resolved_dir(self) -> Path:
        """Where the plan's paths are read from."""
        return self.flows_dir.resolve()

    def keys(self) -> list[str]:
        """``cycle``, the one flow."""
        return [CYCLE_FLOW]

    def order(self) -> list[str]:
        """``cycle``, the one flow."""
        return [CYCLE_FLOW]

    def utilities(self) -> list[FlowSpec]:
        """None: a plan injects no flow (docs/plans.md: no branches, no loops)."""
        return []

    def utility_flows(self) -> list[FlowSpec]:
        """None."""
        return []

    def get(self, key: str) -> FlowSpec:
        """The cycle flow."""
        if key != CYCLE_FLOW:
            raise SwarmUsageError(f"a plan cycle has one flow, '{CYCLE_FLOW}', not '{key}'")
        return self.flow

    def persona(self, agent_key: str) -> str | None:
        """None: a plan step's handler is its own prompt."""
        return None

    def problems(self) -> list[FlowDefinitionError]:
        """None: the plan was checked before it became a flow."""
        return []

    def read(self) -> list[FlowSpec]:
        """The cycle flow."""
        return [self.flow]

    def check(self, also: Sequence[FlowDefinitionError] = ()) -> None:
        """The plan was checked already; only ``also`` can refuse it."""
        if also:
            raise also[0]


class PlanEngines(StepEngines):
    """The engines of a cycle's steps: a plan-handler engine per step, over the model's."""

    def __init__(
        self,
        orchestrator: Orchestrator,
        cycle: PlanCycle,
        on_close: Callable[[], None] = lambda: None,
    ) -> None:
        super().__init__(orchestrator.engine, orchestrator.deps.engines, orchestrator.deps.sleep)
        self.cycle = cycle
        self.on_close = on_close
        """Called when the run's engines close (a resume's own store closes with them)."""
        self._steps: dict[str, PlanStepEngine] = {}

    @classmethod
    def install(
        cls,
        orchestrator: Orchestrator,
        cycle: PlanCycle,
        *,
        on_close: Callable[[], None] = lambda: None,
    ) -> None:
        """Run ``orchestrator``'s steps through the plan's handlers."""
        orchestrator.engines = cls(orchestrator, cycle, on_close)

    def engine_for(self, flow: FlowSpec, step: StepSpec) -> StepEngine:
        """The plan-handler engine of ``step``: a model step's is named as the model's."""
        built = self._steps.get(step.id)
        if built is None:
            definition = self.cycle.step(step.id)
            model = self.engine() if definition.type == "LLMCall" else None
            if model is not None and self.choice.fault_plan is not None:
                self.choice.fault_plan.check_mode(
                    flow.key, step.id, model.mode, getattr(model, "fault_kinds", None)
                )
            built = PlanStepEngine(definition, self.cycle, model=model, models=self.engine)
            self._steps[step.id] = built
        return built

    def close(self) -> None:
        """Close the model engines; the step engines hold nothing of their own."""
        self._steps = {}
        try:
            super().close()
        finally:
            self.on_close()

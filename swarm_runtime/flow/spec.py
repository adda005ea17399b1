"""The in-memory shape of a flow: immutable records, built only by the loader."""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from swarm_runtime.record import Record, field

RoutingKind = Literal["linear", "microloop", "branch", "navigator"]

DEFAULT_MAX_ITERATIONS = 5


class TeachingNotes(Record):
    """The four lists a step's prompt teaches from."""

    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    emphasizes: tuple[str, ...]
    constraints: tuple[str, ...]

    def all_notes(self) -> tuple[str, ...]:
        """Every note of the step, in section order."""
        return self.inputs + self.outputs + self.emphasizes + self.constraints


class Candidate(Record):
    """A move a navigator step may make: an edge of its flow, maybe conditional.

    See docs/flows.md#navigator.
    """

    id: str
    to: str
    """The step of this flow it goes to."""
    when: str | None = None
    """A condition (docs/flows.md#conditions); absent, the candidate is always in the set."""


class Detour(Record):
    """A detour a step may take: another flow, or one step of one, then back.

    See docs/flows.md#detours-and-utility-flows.
    """

    id: str
    flow: str
    """The flow it runs (for ``step: FLOW/STEP``, the flow of that step)."""
    step: str | None = None
    """The one step it runs (``step: FLOW/STEP``); None: the whole flow."""
    when: str | None = None
    """A condition (docs/flows.md#conditions); absent, the detour is always a candidate."""
    returns: str = "resume"
    """``resume``, ``halt`` or ``bounce_to:<step>`` (a step of the flow that left)."""

    @property
    def bounce_to(self) -> str | None:
        """The step a ``bounce_to:<step>`` return goes to."""
        kind, _, target = self.returns.partition(":")
        return target if kind == "bounce_to" else None


class RoutingSpec(Record):
    """How to pick the step after this one (docs/flows.md#routing)."""

    kind: RoutingKind = "linear"
    next: str | None = None
    loop_target: str | None = None
    loop_condition_field: str | None = None
    loop_success_values: tuple[str, ...] = ()
    max_iterations: int = DEFAULT_MAX_ITERATIONS
    branch_field: str = "status"
    branches: tuple[tuple[str, str], ...] = ()
    default: str | None = None
    candidates: tuple[Candidate, ...] = ()


class Budget(Record):
    """Limits of a step, a flow or a run (docs/budgets.md); exceeding one fails the step."""

    tokens: int | None = None
    cost_usd: float | None = None
    duration_ms: int | None = None


class JudgeSpec(Record):
    """A rubric a model grades a step's reply against, after each execution.

    See docs/judges.md#judges.
    """

    name: str
    """Names the judge in receipts, events and cassettes (``<step>-judge-<name>-<i>.yaml``)."""
    rubric: str
    """What the reply is graded against."""
    threshold: float
    """The lowest score, in [0, 1], that passes."""
    engine: str | None = None
    """The engine that grades (default: the step's)."""
    min_pass_rate: float | None = None
    """The share of its judgements in a test (over executions and repetitions) that must
    pass for the test to pass (None: every one)."""
    line: int = 0
    """The judge's line in its flow file."""


class StepSpec(Record):
    """One step of a flow."""

    id: str
    agents: tuple[str, ...]
    role: str
    teaching_notes: TeachingNotes
    routing: RoutingSpec
    line: int
    engine: str | None = None
    max_attempts: int | None = None
    budget: Budget | None = None
    tools: tuple[str, ...] | None = None
    """The tools the step's model may call (docs/tools.md): the run's Python and MCP tools, or a
    CLI engine's own (none when absent)."""
    max_tool_calls: int | None = None
    """How many tool calls one execution may make (None: the flow's, else runtime.yaml's)."""
    timeout_s: float | None = None
    """How long a CLI engine's process may run for one call (the engine's default when absent)."""
    detours: tuple[Detour, ...] = ()
    """Other flows (or steps) the step may detour into (docs/flows.md#detours-and-utility-flows)."""
    judges: tuple[JudgeSpec, ...] = ()
    """Rubrics its reply is graded against after each execution (docs/judges.md#judges)."""
    field_lines: dict[str, int] = field(default_factory=dict)
    """The YAML line of each field that names another step, for error messages."""

    def line_of(self, field_name: str) -> int:
        """The line of a field, or of the step when the field was not recorded."""
        return self.field_lines.get(field_name, self.line)

    @property
    def primary_agent(self) -> str:
        """The agent that names the step's receipt and transcript."""
        return self.agents[0]


class FlowSpec(Record, dict=True):
    """A validated flow."""

    key: str
    title: str
    description: str
    steps: tuple[StepSpec, ...]
    path: Path
    charter: dict[str, Any] | None = None
    utility: bool = False
    """A utility flow (docs/flows.md#detours-and-utility-flows): never run from the flow order, only
    injected."""
    injection_trigger: str | None = None
    """When a utility flow is injected: a condition over the step that just ran
    (docs/flows.md#conditions)."""
    on_complete: str = "return"
    """What a utility flow does when it ends: ``return`` (like ``resume``) or ``halt``."""
    budget: Budget | None = None
    """The flow's ``budget:``, summed over all its executions in a run (docs/budgets.md)."""
    max_tool_calls: int | None = None
    """Tool calls one execution of any of its steps may make, where the step says none."""

    @cached_property
    def _index(self) -> dict[str, int]:
        return {step.id: i for i, step in enumerate(self.steps)}

    def index_of(self, step_id: str) -> int:
        """0-based position of a step; KeyError if it is not in the flow."""
        return self._index[step_id]

    def step(self, step_id: str) -> StepSpec:
        """The step with this id; KeyError if it is not in the flow."""
        return self.steps[self._index[step_id]]

    def has_step(self, step_id: str) -> bool:
        """Whether the flow has a step with this id."""
        return step_id in self._index

"""The event kinds of navigation, the flow stack and facts, one class each.

How a navigator chose a step's move stands between the step's end and its route_decision;
what the move brought (a flow entered or left, facts) comes right after the route_decision.

See docs/flows.md#navigator, docs/flows.md#detours-and-utility-flows and docs/flows.md#facts.
"""

from __future__ import annotations

from typing import Annotated, Literal

from msgspec import UNSET, Meta, UnsetType

from swarm_runtime.documents.base import Document
from swarm_runtime.documents.payload import Payload, Stands
from swarm_runtime.documents.run_events import NonNegative

Confidence = Annotated[float, Meta(ge=0, le=1)]

MAX_FACT_IDS = 100
"""How many ids ``facts_updated`` lists of each kind; its counts say how many there were."""


class Candidate(Document):
    """A move the navigator was offered."""

    id: str
    """The move's id (an edge's target step, a detour's id)."""
    kind: Literal["edge", "detour", "utility"]
    """What sort of move."""
    to: str | None
    """An edge's step (null: the flow ends); a detour's ``FLOW/STEP``."""


class Condition(Document):
    """A condition, and what it gave."""

    expr: str
    """The CEL expression."""
    value: bool
    """Whether it held."""


class RoutingDecision(Payload):
    """The navigator was asked to choose a step's move (docs/flows.md#navigator)."""

    kind = "routing_decision"
    stands = Stands.ROUTING
    step: str
    """The step whose move it chose."""
    candidates: Annotated[list[Candidate], Meta(min_length=2)]
    """What it was offered."""
    chosen: str | None
    """The id of the move it chose (null: none)."""
    routing_source: Literal["navigator", "navigator:detour"]
    """Who chose: the runtime writes ``navigator`` (even when a detour is chosen)."""
    rationale: str | None
    """Why, in the navigator's words (cut to 2 000 characters)."""
    confidence: Confidence | None
    """How sure it was, 0 to 1."""
    evaluated_conditions: list[Condition]
    """The candidates' conditions and what each gave."""
    tie_breaker_used: bool
    """Whether a tie was broken."""


class RoutingOffroad(Payload):
    """A move off the golden path: a loop back, a skip forward, a detour or an injected flow."""

    kind = "routing_offroad"
    stands = Stands.ROUTING
    golden_path_step: str | None
    """Where the golden path went."""
    actual_step: str
    """Where the run goes."""
    route_type: Literal["DETOUR", "INJECTION", "SKIP", "LOOP"]
    """What sort of move."""
    rationale: str | None
    """Why."""
    return_address: str | None
    """Where an injected flow returns to (``FLOW/STEP``)."""
    confidence: Confidence | None
    """How sure the navigator was."""
    evaluated_conditions: list[str]
    """The conditions that held."""
    tie_breaker_used: bool
    """Whether a tie was broken."""


class GraphExtended(Payload):
    """The navigator proposed an edge outside its set: recorded, never followed."""

    kind = "graph_extended"
    stands = Stands.ROUTING
    from_step: str
    """The step it was asked about."""
    to_step: str
    """The step it proposed."""
    rationale: str | None
    """Why."""


class StackOverflowPrevented(Payload):
    """An injection past the stack's depth, or into a flow already on it, was not made."""

    kind = "stack_overflow_prevented"
    stands = Stands.ROUTING
    paused_flow: str
    """The flow that would have paused."""
    paused_step: str
    """The step it would have paused at."""
    injected_flow: str
    """The flow that was not entered."""
    max_depth: Annotated[int, Meta(ge=1)]
    """The deepest the stack may go."""


class StackPush(Payload):
    """A flow paused at a step, another one entered (docs/flows.md#detours-and-utility-flows)."""

    kind = "stack_push"
    stands = Stands.AFTER_ROUTE
    paused_flow: str
    """The flow that paused."""
    paused_step: str
    """The step it paused at."""
    injected_flow: str
    """The flow entered."""
    current_depth: Annotated[int, Meta(ge=2)]
    """The stack's depth after the push."""


class FlowInjected(Payload):
    """The flow a stack_push entered, the step that took it, why, and where back to."""

    kind = "flow_injected"
    stands = Stands.AFTER_ROUTE
    flow: str
    """The flow entered."""
    by_step: str
    """The step whose move entered it."""
    trigger: str
    """The condition, or ``detour:<id>``."""
    return_address: str | None
    """Where the run goes back to when it ends."""


class NodeInjected(Payload):
    """One step of another flow, entered by a stack_push, run after a step."""

    kind = "node_injected"
    stands = Stands.AFTER_ROUTE
    step: str
    """The step entered (``FLOW/STEP``)."""
    into_flow: str
    """The flow it runs in."""
    after_step: str
    """The step it runs after."""


class StackPop(Payload):
    """An injected flow left, the paused one resumed."""

    kind = "stack_pop"
    stands = Stands.AFTER_ROUTE
    resumed_flow: str
    """The flow that goes on."""
    resumed_step: str | None
    """The step it goes on at (null: the paused flow ends)."""
    injected_flow: str
    """The flow left."""
    current_depth: Annotated[int, Meta(ge=1)]
    """The stack's depth after the pop."""


class FactsUpdated(Payload, kw_only=True):
    """The facts a step's reply added and updated (docs/flows.md#facts).

    The lists hold at most the first 100 ids of each; the counts say how many there were.
    """

    kind = "facts_updated"
    stands = Stands.AFTER_ROUTE
    added: Annotated[list[str], Meta(max_length=MAX_FACT_IDS)]
    """The ids the reply added (the first 100)."""
    updated: Annotated[list[str], Meta(max_length=MAX_FACT_IDS)]
    """The ids the reply declared again, superseding their text (the first 100)."""
    added_count: NonNegative | UnsetType = UNSET
    """How many facts the reply added (absent in runs written before it was counted)."""
    updated_count: NonNegative | UnsetType = UNSET
    """How many facts the reply updated (absent in runs written before it was counted)."""
    total: NonNegative
    """How many facts the run holds now."""

    @classmethod
    def counted(cls, added: list[str], updated: list[str], total: int) -> FactsUpdated:
        """Counts of both, and the first :data:`MAX_FACT_IDS` ids of each."""
        return cls(
            added=added[:MAX_FACT_IDS],
            updated=updated[:MAX_FACT_IDS],
            added_count=len(added),
            updated_count=len(updated),
            total=total,
        )


class _Fact(Payload):
    id: Annotated[str, Meta(pattern=r"^(REQ|SOL|TRC|ASM|DEC)-[0-9]+$")]
    """The fact's id."""
    text: str
    """What it says (cut to 2 000 characters)."""


class AssumptionRecorded(_Fact):
    """A step's reply declared an assumption."""

    kind = "assumption_recorded"
    stands = Stands.AFTER_ROUTE


class DecisionRecorded(_Fact):
    """A step's reply declared a decision."""

    kind = "decision_recorded"
    stands = Stands.AFTER_ROUTE

"""The payloads of ``events.jsonl`` events (SPEC §3.3): one model per kind's ``payload``.

:mod:`swarm_runtime.contracts.events` wraps each in the event of its kind. A payload is a
model read by attribute (``payload.status``) or, as the JSON line reads, by item
(``payload["status"]``); a field the kind does not have is a ``KeyError`` naming the kind
and the fields it has.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from swarm_runtime.contracts.base import Contract, OpenContract

KINDS_OF: dict[object, list[str]] = {}
"""Each payload model's event kinds, filled in as :mod:`.events` declares the kinds."""


class Payload(Contract):
    """A payload with a fixed set of fields, read by attribute or by item."""

    def __getitem__(self, name: str) -> Any:
        if name in type(self).model_fields:
            return getattr(self, name)
        extra = self.model_extra or {}
        if name in extra:
            return extra[name]
        fields = ", ".join([*type(self).model_fields, *extra]) or "none"
        raise KeyError(
            f"a {self._what()} payload has no field {name!r}; its fields: {fields}"
            + (" (this kind may carry others)" if self.model_extra is not None else "")
        )

    def __contains__(self, name: object) -> bool:
        return name in type(self).model_fields or name in (self.model_extra or {})

    def get(self, name: str, default: Any = None) -> Any:
        """The field ``name``, or ``default`` when the payload has none."""
        try:
            return self[name]
        except KeyError:
            return default

    @classmethod
    def _what(cls) -> str:
        """The kinds whose payload this is (``step_end``), else the model's name."""
        return "/".join(KINDS_OF.get(cls, ())) or cls.__name__


class OpenPayload(Payload):
    """A payload that keeps fields beyond its own (``log``, the control kinds)."""

    model_config = OpenContract.model_config


class RunCreatedPayload(Payload):
    """``run_created``."""

    flows: list[str]
    backend: str
    initiator: str
    stepwise: Literal[True]


class RunStartedPayload(Payload):
    """``run_started``."""

    mode: Literal["stepwise"]
    routing_enabled: bool


class StepStartPayload(Payload):
    """``step_start``."""

    role: str
    agents: list[str]
    step_index: int = Field(ge=1)
    engine: str
    iteration: int = Field(default=0, ge=0)


class ToolStartPayload(Payload):
    """``tool_start``."""

    tool: str
    input: Any = None


class ToolEndPayload(Payload):
    """``tool_end``."""

    tool: str
    success: bool
    output: Any = None


class LogPayload(OpenPayload):
    """``log``: a message and whatever context goes with it."""

    message: str


class StepEndPayload(Payload):
    """``step_end``."""

    status: Literal["succeeded", "skipped"]
    duration_ms: int = Field(ge=0)
    engine: str


class StepErrorPayload(Payload):
    """``step_error``."""

    status: Literal["failed"]
    duration_ms: int = Field(ge=0)
    error: str
    engine: str


class RouteDecisionPayload(Payload):
    """``route_decision``."""

    from_step: str
    to_step: str | None
    decision: Literal["loop", "advance", "terminate", "pending"]
    reason: str
    loop_state: dict[str, int]
    routing_source: Literal[
        "fast_path",
        "deterministic",
        "navigator",
        "navigator:detour",
        "envelope_fallback",
        "escalate",
    ]


class CandidateEntry(Payload):
    """A move the navigator was offered."""

    id: str
    kind: Literal["edge", "detour", "utility"]
    to: str | None
    """An edge's step (null: the flow ends); a detour's ``FLOW/STEP``."""


class ConditionEntry(Payload):
    """A condition, and what it gave."""

    expr: str
    value: bool


class RoutingDecisionPayload(Payload):
    """``routing_decision``: the navigator was asked (SPEC §4.5)."""

    step: str
    candidates: list[CandidateEntry] = Field(min_length=2)
    chosen: str | None
    routing_source: Literal["navigator", "navigator:detour"]
    rationale: str | None
    confidence: float | None = Field(ge=0, le=1)
    evaluated_conditions: list[ConditionEntry]
    tie_breaker_used: bool


class RoutingOffroadPayload(Payload):
    """``routing_offroad``: a move off the golden path (the seed's payload)."""

    golden_path_step: str | None
    actual_step: str
    route_type: Literal["DETOUR", "INJECTION", "SKIP", "LOOP"]
    rationale: str | None
    return_address: str | None
    confidence: float | None = Field(ge=0, le=1)
    evaluated_conditions: list[str]
    tie_breaker_used: bool


class GraphExtendedPayload(Payload):
    """``graph_extended``: an edge the navigator proposed, recorded and never followed."""

    from_step: str
    to_step: str
    rationale: str | None


class StackPushPayload(Payload):
    """``stack_push``: a flow paused at a step, another entered (SPEC §4.6)."""

    paused_flow: str
    paused_step: str
    injected_flow: str
    current_depth: int = Field(ge=2)


class StackPopPayload(Payload):
    """``stack_pop``: an injected flow left; ``resumed_step`` null when the paused flow ends."""

    resumed_flow: str
    resumed_step: str | None
    injected_flow: str
    current_depth: int = Field(ge=1)


class FlowInjectedPayload(Payload):
    """``flow_injected``: the flow entered, the step that took it, why, and where back to."""

    flow: str
    by_step: str
    trigger: str
    return_address: str | None


class NodeInjectedPayload(Payload):
    """``node_injected``: one step of another flow run after a step."""

    step: str
    into_flow: str
    after_step: str


class StackOverflowPayload(Payload):
    """``stack_overflow_prevented``: an injection past ``max_depth`` or a re-entry, not made."""

    paused_flow: str
    paused_step: str
    injected_flow: str
    max_depth: int = Field(ge=1)


class FactsUpdatedPayload(Payload):
    """``facts_updated``: the facts a step's reply added and updated (SPEC §4.7).

    The lists hold at most the first 100 ids of each; the counts say how many there were.
    """

    added: list[str] = Field(max_length=100)
    """The ids the reply added (the first 100)."""
    updated: list[str] = Field(max_length=100)
    """The ids the reply declared again, superseding their text (the first 100)."""
    added_count: int | None = Field(default=None, ge=0)
    """How many facts the reply added (absent in runs written before it was counted)."""
    updated_count: int | None = Field(default=None, ge=0)
    """How many facts the reply updated (absent in runs written before it was counted)."""
    total: int = Field(ge=0)
    """How many facts the run holds now."""


class FactPayload(Payload):
    """``assumption_recorded`` / ``decision_recorded``."""

    id: str = Field(pattern=r"^(REQ|SOL|TRC|ASM|DEC)-[0-9]+$")
    text: str


class ControlPayload(OpenPayload):
    """``run_pausing`` … ``run_stopped``: a reason and context."""

    reason: str


class RunCompletedPayload(Payload):
    """``run_completed``."""

    status: Literal["succeeded", "failed", "stopped"]
    error: str | None
    steps_completed: int = Field(ge=0)
    total_steps_executed: int = Field(ge=0)


class ReservedPayload(OpenPayload):
    """Payload of a reserved kind (navigator, stack, facts): not emitted yet."""

"""Events of ``events.jsonl`` (SPEC §3.3): one model per kind, read through a union on ``kind``.

Each event carries the payload of its kind, from :mod:`swarm_runtime.contracts.event_payloads`
(whose models are named here too, so an event and its payload come from one import).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, Field, TypeAdapter

from swarm_runtime.contracts.base import Contract, Timestamp
from swarm_runtime.contracts.event_payloads import (
    KINDS_OF,
    ControlPayload,
    FactPayload,
    FactsUpdatedPayload,
    FlowInjectedPayload,
    GraphExtendedPayload,
    LogPayload,
    NodeInjectedPayload,
    ReservedPayload,
    RouteDecisionPayload,
    RoutingDecisionPayload,
    RoutingOffroadPayload,
    RunCompletedPayload,
    RunCreatedPayload,
    RunStartedPayload,
    StackOverflowPayload,
    StackPopPayload,
    StackPushPayload,
    StepEndPayload,
    StepErrorPayload,
    StepStartPayload,
    ToolEndPayload,
    ToolStartPayload,
)


class _EventBase(Contract):
    run_id: str
    seq: int = Field(ge=1)
    """1, 2, 3 … per run, no gaps, no repeats."""
    ts: Timestamp
    flow_key: str | None
    step_id: str | None
    agent_key: str | None


class RunCreatedEvent(_EventBase):
    """A ``run_created`` event."""

    kind: Literal["run_created"]
    payload: RunCreatedPayload


class RunStartedEvent(_EventBase):
    """A ``run_started`` event."""

    kind: Literal["run_started"]
    payload: RunStartedPayload


class StepStartEvent(_EventBase):
    """A ``step_start`` event."""

    kind: Literal["step_start"]
    payload: StepStartPayload


class ToolStartEvent(_EventBase):
    """A ``tool_start`` event."""

    kind: Literal["tool_start"]
    payload: ToolStartPayload


class ToolEndEvent(_EventBase):
    """A ``tool_end`` event."""

    kind: Literal["tool_end"]
    payload: ToolEndPayload


class LogEvent(_EventBase):
    """A ``log`` event."""

    kind: Literal["log"]
    payload: LogPayload


class StepEndEvent(_EventBase):
    """A ``step_end`` event."""

    kind: Literal["step_end"]
    payload: StepEndPayload


class StepErrorEvent(_EventBase):
    """A ``step_error`` event."""

    kind: Literal["step_error"]
    payload: StepErrorPayload


class RouteDecisionEvent(_EventBase):
    """A ``route_decision`` event."""

    kind: Literal["route_decision"]
    payload: RouteDecisionPayload


class RunPausingEvent(_EventBase):
    """A ``run_pausing`` event."""

    kind: Literal["run_pausing"]
    payload: ControlPayload


class RunPausedEvent(_EventBase):
    """A ``run_paused`` event."""

    kind: Literal["run_paused"]
    payload: ControlPayload


class RunResumedEvent(_EventBase):
    """A ``run_resumed`` event."""

    kind: Literal["run_resumed"]
    payload: ControlPayload


class RunStoppingEvent(_EventBase):
    """A ``run_stopping`` event."""

    kind: Literal["run_stopping"]
    payload: ControlPayload


class RunStoppedEvent(_EventBase):
    """A ``run_stopped`` event."""

    kind: Literal["run_stopped"]
    payload: ControlPayload


class RunCompletedEvent(_EventBase):
    """A ``run_completed`` event."""

    kind: Literal["run_completed"]
    payload: RunCompletedPayload


class RoutingDecisionEvent(_EventBase):
    """A ``routing_decision`` event: the navigator was asked."""

    kind: Literal["routing_decision"]
    payload: RoutingDecisionPayload


class RoutingOffroadEvent(_EventBase):
    """A ``routing_offroad`` event: a move off the golden path."""

    kind: Literal["routing_offroad"]
    payload: RoutingOffroadPayload


class FlowInjectedEvent(_EventBase):
    """A ``flow_injected`` event: a detour or utility flow entered (SPEC §4.6)."""

    kind: Literal["flow_injected"]
    payload: FlowInjectedPayload


class NodeInjectedEvent(_EventBase):
    """A ``node_injected`` event: one step of another flow entered (SPEC §4.6)."""

    kind: Literal["node_injected"]
    payload: NodeInjectedPayload


class GraphExtendedEvent(_EventBase):
    """A ``graph_extended`` event: the navigator proposed an edge outside its set."""

    kind: Literal["graph_extended"]
    payload: GraphExtendedPayload


class StackPushEvent(_EventBase):
    """A ``stack_push`` event (SPEC §4.6)."""

    kind: Literal["stack_push"]
    payload: StackPushPayload


class StackPopEvent(_EventBase):
    """A ``stack_pop`` event (SPEC §4.6)."""

    kind: Literal["stack_pop"]
    payload: StackPopPayload


class StackOverflowPreventedEvent(_EventBase):
    """A ``stack_overflow_prevented`` event: an injection not made (SPEC §4.6)."""

    kind: Literal["stack_overflow_prevented"]
    payload: StackOverflowPayload


class FactsUpdatedEvent(_EventBase):
    """A ``facts_updated`` event (SPEC §4.7)."""

    kind: Literal["facts_updated"]
    payload: FactsUpdatedPayload


class AssumptionRecordedEvent(_EventBase):
    """A ``assumption_recorded`` event (SPEC §4.7)."""

    kind: Literal["assumption_recorded"]
    payload: FactPayload


class DecisionRecordedEvent(_EventBase):
    """A ``decision_recorded`` event (SPEC §4.7)."""

    kind: Literal["decision_recorded"]
    payload: FactPayload


Event = Annotated[
    RunCreatedEvent
    | RunStartedEvent
    | StepStartEvent
    | ToolStartEvent
    | ToolEndEvent
    | LogEvent
    | StepEndEvent
    | StepErrorEvent
    | RouteDecisionEvent
    | RunPausingEvent
    | RunPausedEvent
    | RunResumedEvent
    | RunStoppingEvent
    | RunStoppedEvent
    | RunCompletedEvent
    | RoutingDecisionEvent
    | RoutingOffroadEvent
    | FlowInjectedEvent
    | NodeInjectedEvent
    | GraphExtendedEvent
    | StackPushEvent
    | StackPopEvent
    | StackOverflowPreventedEvent
    | FactsUpdatedEvent
    | AssumptionRecordedEvent
    | DecisionRecordedEvent,
    Field(discriminator="kind"),
]
"""Any event, told apart by ``kind``."""

EVENT_MODELS: dict[str, type[_EventBase]] = {
    get_args(model.model_fields["kind"].annotation)[0]: model
    for model in get_args(get_args(Event)[0])
}
"""Every event kind -> its model, in the union's order: the one list of kinds."""
for _kind, _model in EVENT_MODELS.items():  # what a payload's KeyError names it by
    KINDS_OF.setdefault(_model.model_fields["payload"].annotation, []).append(_kind)
RESERVED_KINDS: tuple[str, ...] = tuple(
    kind
    for kind, model in EVENT_MODELS.items()
    if model.model_fields["payload"].annotation is ReservedPayload
)
"""Kinds the contract names for routing, stacks and facts (SPEC §4.5-4.7), not yet written."""
EVENT_KINDS: tuple[str, ...] = tuple(kind for kind in EVENT_MODELS if kind not in RESERVED_KINDS)
"""Kinds a run writes today."""


def payload_fields(kind: str) -> tuple[dict[str, bool], bool]:
    """An event kind's payload fields (name -> required), and whether it takes others too.

    KeyError for no such kind.
    """
    payload = EVENT_MODELS[kind].model_fields["payload"].annotation
    assert isinstance(payload, type) and issubclass(payload, BaseModel)
    fields = {name: info.is_required() for name, info in payload.model_fields.items()}
    return fields, payload.model_config.get("extra") == "allow"


def kind_table() -> dict[str, dict[str, Any]]:
    """Every event kind as readers show it, from :data:`EVENT_MODELS`.

    Per kind: its payload fields in order, the required ones, whether others may come too,
    and whether runs write it yet. ``swarm schema events`` prints it, and Flow Studio lays
    its timeline out with it.
    """
    table: dict[str, dict[str, Any]] = {}
    for kind in EVENT_MODELS:
        fields, open_ended = payload_fields(kind)
        table[kind] = {
            "fields": list(fields),
            "required": [name for name, required in fields.items() if required],
            "open": open_ended,
            "written": kind not in RESERVED_KINDS,
        }
    return table


_adapter: TypeAdapter[Event] | None = None


def event_adapter() -> TypeAdapter[Event]:
    """The (cached) validator of the event union."""
    global _adapter
    if _adapter is None:
        _adapter = TypeAdapter(Event)
    return _adapter


def parse_event(value: object) -> Event:
    """Validate one decoded event line; raise pydantic.ValidationError when it is invalid."""
    return event_adapter().validate_python(value)

"""An event kind, declared once: its payload's fields, its name and where it may stand.

Every kind of ``events.jsonl`` (docs/contract/events.md#event-kinds, docs/flows.md#navigator,
docs/flows.md#detours-and-utility-flows, docs/flows.md#facts) is one class, as inspect_ai declares
one class per event: a :class:`Payload` whose fields carry their types, constraints and a docstring
line each, whose ``kind`` is its name and whose ``stands`` says where in a run's log it may come
(:class:`Stands`). Declaring the class registers the kind (:data:`KINDS`) and makes its event type
(``payload.event``: the envelope of docs/contract/events.md#event-kinds with ``kind`` as its tag).
From that one declaration the run writes its events (the recorder takes a payload object, so mypy
checks every writer), readers read them (``RunRecord.events``, Flow Studio, ``swarm runs
validate``), ``swarm schema`` prints them, and the sequence checker, the checkpoint check of a
resume and mode parity place them.

Why ``msgspec`` structs and not ``TypedDict`` payloads validated through pydantic's
``TypeAdapter`` (``bench/event_declarations.py`` measures both, over every kind): a struct
is read by attribute (``event.payload.status``) as a reader expects, where a TypedDict
reads only by item; building and encoding an event costs about the same either way
(msgspec encodes both); reading one back is several times faster, and the module imports
without pydantic, whose import and union validator cost more than a small run takes.
Both give a JSON Schema (msgspec's lacks field descriptions; they are added from the
docstrings here). What msgspec does not do: it stops at a document's first error, where
pydantic lists all.
"""

from __future__ import annotations

import enum
from typing import Annotated, Any, ClassVar, cast

import msgspec
from msgspec import Meta

from swarm_runtime.documents.base import Document, Problem, Timestamp, timestamp_problems


class Stands(enum.Enum):
    """Where an event of a kind may stand in a run's log.

    See docs/contract/events.md#where-events-may-stand, docs/flows.md#navigator,
    docs/flows.md#detours-and-utility-flows and docs/flows.md#facts.
    """

    FIRST = "first"
    """The run's first event: nothing comes before it."""
    START = "start"
    """Starts an attempt's steps: after the first event (or a resume), before any step."""
    RESUME = "resume"
    """Opens a further attempt: after a pause, a stop (its last event) or a crash."""
    PAUSE = "pause"
    """Between step executions, or inside one that waits for input (it stays open across
    the pause); a checkpoint may carry it ahead of the log."""
    STOP = "stop"
    """Between step executions, on the way to the attempt's last event."""
    LAST = "last"
    """The attempt's last event, exactly one per attempt."""
    STEP_START = "step_start"
    """Opens a step execution, between executions, once the attempt has started."""
    IN_STEP = "in_step"
    """Inside the open step execution, and of that step."""
    TOOL_START = "tool_start"
    """Inside the open step execution: a tool call begins."""
    TOOL_END = "tool_end"
    """Inside the open step execution: the tool call that began ends."""
    STEP_END = "step_end"
    """Ends the open step execution; its route_decision must follow."""
    STEP_ERROR = "step_error"
    """Ends the open step execution, which is not routed."""
    ROUTING = "routing"
    """After a step's end, before its route_decision, and of that step: how it was routed."""
    ROUTE = "route"
    """After a step's end (and its routing events): where the run goes next."""
    AFTER_ROUTE = "after_route"
    """Right after a route_decision (or another such event), before the next step starts:
    what the move brought (facts, the flow stack)."""


KINDS: dict[str, type[Payload]] = {}
"""Every declared event kind -> its payload class, in declaration order: the one list."""


class Payload(Document):
    """The payload of one event kind; a subclass that names ``kind`` declares the kind.

    A subclass sets ``kind`` and ``stands`` and declares the payload's fields; an open
    kind (``log``: ``{message, …}`` in docs/contract/events.md#event-kinds) is declared with
    ``forbid_unknown_fields=False``, so a reader takes fields beyond its own.
    """

    kind: ClassVar[str]
    """The event kind whose payload this is (``step_end``)."""
    stands: ClassVar[Stands]
    """Where an event of this kind may stand in the log."""
    event: ClassVar[type[Event]]
    """The event of this kind: the envelope, with ``kind`` as its tag (made with the class)."""

    def __init_subclass__(cls, **options: Any) -> None:
        super().__init_subclass__(**options)
        kind = cls.__dict__.get("kind")
        if kind is None:
            return  # a base that several kinds share
        if not isinstance(cls.__dict__.get("stands"), Stands):
            raise TypeError(f"event kind {kind!r} ({cls.__name__}) declares no 'stands'")
        if kind in KINDS:
            raise TypeError(f"event kind {kind!r} is declared twice ({KINDS[kind].__name__})")
        event = msgspec.defstruct(
            f"{cls.__name__}Event",
            [("payload", cls)],
            bases=(Event,),
            tag=kind,
            kw_only=True,
            module=cls.__module__,
        )
        event.__doc__ = f"A ``{kind}`` event: {(cls.__doc__ or '').strip().splitlines()[0]}"
        cls.event = cast(type[Event], event)
        KINDS[kind] = cls

    @classmethod
    def _what(cls) -> str:
        return f"{cls.kind} payload" if "kind" in cls.__dict__ else cls.__name__


class Event(Document, tag_field="kind"):
    """One line of ``events.jsonl``; its ``kind`` is its payload's.

    See docs/contract/events.md#event-kinds.
    """

    run_id: str
    """The run the event belongs to."""
    seq: Annotated[int, Meta(ge=1)]
    """1, 2, 3 … per run, no gaps, no repeats (also across resumes)."""
    ts: Timestamp
    """When it happened."""
    flow_key: str | None
    """The flow of the step it concerns (null for a run-level event)."""
    step_id: str | None
    """The step it concerns (null for a run-level event)."""
    agent_key: str | None
    """The step's primary agent (null for a run-level event)."""
    payload: Payload
    """What its kind carries."""

    @property
    def kind(self) -> str:
        """The event's kind (``step_end``)."""
        return self.payload.kind

    def problems(self) -> list[Problem]:
        """Its timestamp."""
        return timestamp_problems((), ("ts", self.ts))

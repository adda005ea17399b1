"""Every event kind of ``events.jsonl``, read and described from its one declaration.

Importing this module declares every kind (:mod:`.run_events`, :mod:`.route_events`);
:func:`read_event` reads a decoded line as the event of its kind, :func:`kind_table` lays
the kinds out for ``swarm schema events`` and Flow Studio, :func:`events_schema` is their
JSON Schema. Nothing else lists the kinds: :data:`KINDS` is filled as they are declared.
"""

from __future__ import annotations

from functools import cache
from typing import Any, Union

import msgspec.structs

from swarm_runtime.documents import route_events, run_events  # noqa: F401 (declares the kinds)
from swarm_runtime.documents.base import json_schema, read
from swarm_runtime.documents.payload import KINDS as KINDS
from swarm_runtime.documents.payload import Event, Payload, Stands


def event_union() -> Any:
    """Every kind's event type, as one union told apart by ``kind``."""
    return _union(tuple(KINDS.values()))


@cache
def _union(payloads: tuple[type[Payload], ...]) -> Any:
    return Union[tuple(payload.event for payload in payloads)]  # noqa: UP007 (made at run time)


def read_event(value: object) -> Event:
    """A decoded event line as the event of its kind; :class:`~.base.Invalid` if it is not."""
    event: Event = read(value, event_union())
    return event


def stands_of(kind: object) -> Stands | None:
    """Where an event of ``kind`` may stand; None for a kind nobody declared."""
    payload = KINDS.get(kind) if isinstance(kind, str) else None
    return payload.stands if payload is not None else None


def payload_fields(kind: str) -> tuple[dict[str, bool], bool]:
    """A kind's payload fields (name -> required), and whether it takes others too.

    KeyError for no such kind.
    """
    payload = KINDS[kind]
    fields = {field.name: field.required for field in msgspec.structs.fields(payload)}
    return fields, not payload.__struct_config__.forbid_unknown_fields


def kind_table() -> dict[str, dict[str, Any]]:
    """Every event kind as readers show it, from its declaration.

    Per kind: what it is, where it may stand in the log, its payload fields in order, the
    required ones, and whether others may come too. ``swarm schema events`` prints it, and
    Flow Studio lays its timeline out with it.
    """
    table: dict[str, dict[str, Any]] = {}
    for kind, payload in KINDS.items():
        fields, open_ended = payload_fields(kind)
        table[kind] = {
            "doc": (payload.__doc__ or "").strip().splitlines()[0],
            "stands": payload.stands.value,
            "fields": list(fields),
            "required": [name for name, required in fields.items() if required],
            "open": open_ended,
        }
    return table


def events_schema() -> dict[str, Any]:
    """The JSON Schema of an event line: one of the kinds, told apart by ``kind``."""
    return json_schema(event_union())

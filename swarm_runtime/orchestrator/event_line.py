"""One event's line of ``events.jsonl``, laid out field by field.

The bytes are those ``encode_line`` gives; only the payload goes through the encoder,
since every event has the same eight fields and the log takes one line per event.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from swarm_runtime.storage.store import encode_line, quoted

if TYPE_CHECKING:
    from swarm_runtime.documents import EventDoc

_EVENT_FIELDS = frozenset(
    ("agent_key", "flow_key", "kind", "payload", "run_id", "seq", "step_id", "ts")
)


def event_line(event: EventDoc) -> str:
    """``encode_line(event)``, without sorting and encoding the eight fields every time.

    ``quoted`` refuses what is not a string with a TypeError, as a wrong type does below.
    """
    try:
        if event.keys() != _EVENT_FIELDS or type(event["seq"]) is not int:
            raise TypeError
        agent, flow, step = event["agent_key"], event["flow_key"], event["step_id"]
        return (
            f'{{"agent_key": {"null" if agent is None else quoted(agent)}, '
            f'"flow_key": {"null" if flow is None else quoted(flow)}, '
            f'"kind": {quoted(event["kind"])}, "payload": {encode_line(event["payload"])[:-1]}, '
            f'"run_id": {quoted(event["run_id"])}, "seq": {event["seq"]}, '
            f'"step_id": {"null" if step is None else quoted(step)}, '
            f'"ts": {quoted(event["ts"])}}}\n'
        )
    except TypeError:  # not an event as the recorder makes them: the encoder says how it reads
        return encode_line(event)

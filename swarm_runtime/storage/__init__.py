"""Run directories on disk: layout, atomic writes, the event log."""

from __future__ import annotations

from swarm_runtime.storage.layout import RunLayout, new_run_id
from swarm_runtime.storage.store import (
    EventLog,
    EventLogReadResult,
    TornLine,
    read_event_log,
    write_json_atomic,
)

__all__ = [
    "EventLog",
    "EventLogReadResult",
    "RunLayout",
    "TornLine",
    "new_run_id",
    "read_event_log",
    "write_json_atomic",
]

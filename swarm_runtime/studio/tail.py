"""Following a run's ``events.jsonl`` as it grows: whole lines only, each event once.

An :class:`EventTail` remembers how far it has read. :meth:`EventTail.poll` reads what was
appended since, keeps a line without its newline for the next poll (a writer may be
halfway through it), and returns the events whose ``seq`` is past the last one given out,
so a reconnecting browser that sends ``Last-Event-ID`` gets each event once. A log that
shrank (a run dir replaced) is read again from the start.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from swarm_runtime.inputs import load_json

__all__ = ["EventTail"]

_CHUNK = 1 << 20


class EventTail:
    """The events of one log after ``since_seq``, read incrementally."""

    def __init__(self, path: Path, since_seq: int = 0) -> None:
        self.path = path
        self.last_seq = since_seq
        self._offset = 0
        self._partial = b""

    def poll(self, *, max_bytes: int = 64 * _CHUNK) -> list[dict[str, Any]]:
        """Events appended since the last poll (none when the log is not there yet)."""
        try:
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            return []
        try:
            size = os.fstat(fd).st_size
            if size < self._offset:  # replaced by a shorter log: read it again
                self._offset, self._partial = 0, b""
            os.lseek(fd, self._offset, os.SEEK_SET)
            data = os.read(fd, min(max(size - self._offset, 0), max_bytes))
        finally:
            os.close(fd)
        self._offset += len(data)
        lines = (self._partial + data).split(b"\n")
        self._partial = lines.pop()
        events: list[dict[str, Any]] = []
        for line in lines:
            event = _event(line)
            if event is not None and event["seq"] > self.last_seq:
                events.append(event)
                self.last_seq = event["seq"]
        return events

    def read_all(self) -> list[dict[str, Any]]:
        """Every event there is now after ``since_seq`` (a torn last line left out)."""
        events: list[dict[str, Any]] = []
        while True:
            batch = self.poll()
            events.extend(batch)
            if not batch and not self._has_more():
                return events

    def _has_more(self) -> bool:
        try:
            return os.stat(self.path).st_size > self._offset
        except OSError:
            return False


def _event(line: bytes) -> dict[str, Any] | None:
    if not line.strip():
        return None
    try:
        value = load_json(line)
    except ValueError:
        return None  # only the last line may be torn, and that one is held back
    if not isinstance(value, dict):
        return None
    seq = value.get("seq")
    return value if isinstance(seq, int) and not isinstance(seq, bool) else None

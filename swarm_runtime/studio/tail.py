"""Following a run's ``events.jsonl`` as it grows: whole lines only, each event once.

An :class:`EventTail` remembers how far it has read. :meth:`EventTail.poll` reads what was
appended since, keeps a line without its newline for the next poll (a writer may be
halfway through it), and returns the events whose ``seq`` is past the last one given out,
so a reconnecting browser that sends ``Last-Event-ID`` gets each event once. A log that
shrank (a run dir replaced) is read again from the start.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from swarm_runtime.inputs.json_input import load_json

_CHUNK = 1 << 20


class EventTail:
    """The events of one log after ``since_seq``, read incrementally."""

    def __init__(self, path: Path, since_seq: int = 0) -> None:
        self.path = path
        self.last_seq = since_seq
        self.last_kind = ""
        """The kind of the last whole event in the log, given out or not (``run_completed``
        there means the run is over, even for a client that had seen it already)."""
        self._offset = 0
        self._partial = b""
        self._pending = False

    @property
    def pending(self) -> bool:
        """Whether the last poll left part of the log unread (it had more than max_bytes)."""
        return self._pending

    def poll(self, *, max_bytes: int = 64 * _CHUNK) -> list[dict[str, Any]]:
        """Events appended since the last poll (none when the log is not there yet).

        Only a regular file is read (a symlink or a FIFO in its place is no log), at most
        ``max_bytes`` at a time (:meth:`read_all` reads on while there is more).
        """
        data = self._read(max_bytes)
        self._offset += len(data)
        lines = (self._partial + data).split(b"\n")
        self._partial = lines.pop()
        events: list[dict[str, Any]] = []
        for line in lines:
            event = _event(line)
            if event is None:
                continue
            self.last_kind = str(event.get("kind"))
            if event["seq"] > self.last_seq:
                events.append(event)
                self.last_seq = event["seq"]
        return events

    def _read(self, max_bytes: int) -> bytes:
        self._pending = False
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        try:
            fd = os.open(self.path, flags)
        except OSError:
            return b""
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                return b""
            if info.st_size < self._offset:  # replaced by a shorter log: read it again
                self._offset, self._partial = 0, b""
            wanted = max(info.st_size - self._offset, 0)
            os.lseek(fd, self._offset, os.SEEK_SET)
            data = os.read(fd, min(wanted, max_bytes))
            self._pending = wanted > len(data) and bool(data)
            return data
        finally:
            os.close(fd)

    def read_all(self) -> list[dict[str, Any]]:
        """Every event there is now after ``since_seq`` (a torn last line left out)."""
        events = self.poll()
        while self._pending:
            events.extend(self.poll())
        return events


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

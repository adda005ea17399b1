"""Writing and reading run files: atomic JSON documents and the append-only event log.

JSON documents are written to a temporary file in the same directory and moved into place
with ``os.replace``, so a reader never sees half a document. Event lines are written whole
with one ``write`` each and flushed; ``durable`` adds an fsync. A reader tolerates a torn
last line of ``events.jsonl`` (it reports and skips it), never a torn line in the middle.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from swarm_runtime.errors import StorageError

__all__ = [
    "EventLog",
    "EventLogReadResult",
    "TornLine",
    "dump_json",
    "preserve_previous",
    "read_event_log",
    "write_json_atomic",
    "write_jsonl_atomic",
]

_tmp_counter = itertools.count()


def dump_json(document: Any) -> str:
    """The canonical JSON text of a run document: sorted keys, two-space indent, newline."""
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _write_atomic(path: Path, text: str, *, durable: bool) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{next(_tmp_counter)}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise StorageError(f"could not write {path}: {exc}") from exc


def write_json_atomic(path: Path, document: Any, *, durable: bool = False) -> None:
    """Write ``document`` as JSON to ``path`` so that readers see all of it or none."""
    _write_atomic(path, dump_json(document), durable=durable)


def write_jsonl_atomic(path: Path, lines: list[dict[str, Any]], *, durable: bool = False) -> None:
    """Write a whole JSON-lines file atomically (used for transcripts)."""
    text = "".join(json.dumps(line, ensure_ascii=False, sort_keys=True) + "\n" for line in lines)
    _write_atomic(path, text, durable=durable)


def preserve_previous(path: Path) -> Path | None:
    """If ``path`` exists, rename it to ``<stem>~<n><suffix>`` with the next free n.

    Called before a step's receipt or transcript is written again, so earlier executions
    are kept in execution order (``~1`` is the first).
    """
    if not path.exists():
        return None
    n = 1
    while True:
        candidate = path.with_name(f"{path.stem}~{n}{path.suffix}")
        if not candidate.exists():
            os.replace(path, candidate)
            return candidate
        n += 1


class EventLog:
    """The append side of ``events.jsonl``: one whole line per ``write``, flushed."""

    def __init__(self, path: Path, *, durable: bool = False) -> None:
        self.path = path
        self.durable = durable
        self._handle: IO[str] | None = open(path, "a", encoding="utf-8")  # noqa: SIM115

    def append(self, event: dict[str, Any]) -> None:
        """Write one event as one line."""
        if self._handle is None:
            raise StorageError(f"event log {self.path} is closed")
        line = json.dumps(event, ensure_ascii=False, sort_keys=True) + "\n"
        self._handle.write(line)
        self._handle.flush()
        if self.durable:
            os.fsync(self._handle.fileno())

    def close(self) -> None:
        """Close the file; further appends raise."""
        if self._handle is not None:
            self._handle.close()
            self._handle = None


@dataclass(frozen=True)
class TornLine:
    """A last line of ``events.jsonl`` that was cut off mid-write."""

    line: int
    text: str

    def describe(self, path: Path) -> str:
        """A one-line report of the torn line."""
        preview = self.text if len(self.text) <= 60 else self.text[:57] + "..."
        return f"{path}:{self.line}: torn last line ignored ({len(self.text)} chars: {preview!r})"


@dataclass(frozen=True)
class EventLogReadResult:
    """Events read from a log, with the torn last line if there was one."""

    events: list[dict[str, Any]] = field(default_factory=list)
    torn: TornLine | None = None


def read_event_log(path: Path) -> EventLogReadResult:
    """Read ``events.jsonl``; a torn last line is reported, a bad middle line raises."""
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise StorageError(f"{path}: no event log (is this a run directory?)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise StorageError(f"{path}: cannot read event log: {exc}") from exc
    lines = raw.split("\n")
    complete_end = raw.endswith("\n")
    events: list[dict[str, Any]] = []
    torn: TornLine | None = None
    body = lines[:-1]  # the part after the last newline is '' or a torn tail
    tail = lines[-1]
    for number, text in enumerate(body, start=1):
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise StorageError(
                f"{path}:{number}: line is not valid JSON ({exc.msg}); only the last line "
                "of an event log may be torn"
            ) from None
        if not isinstance(value, dict):
            raise StorageError(f"{path}:{number}: an event must be a JSON object")
        events.append(value)
    if not complete_end and tail:
        torn = TornLine(line=len(body) + 1, text=tail)
    return EventLogReadResult(events=events, torn=torn)

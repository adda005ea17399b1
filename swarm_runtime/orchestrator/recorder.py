"""The only writer of a run's files: run dir, spec, events with their ``seq``, meta, steps.

Every document and every event line is scanned for the credential values of the
environment before it is written, in every mode, so no secret ever lands in a run file,
not even for an instant: a refusal (:class:`~swarm_runtime.errors.CredentialLeak`) names
the file and the variable and shows only a masked value.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from swarm_runtime.credentials import Credentials
from swarm_runtime.digest import sha256
from swarm_runtime.documents.payload import Event, Payload
from swarm_runtime.documents.receipt import PointerArtifact, Receipt
from swarm_runtime.documents.run import RunSpecDocument, RunSummary
from swarm_runtime.engines.base import HistoryItem
from swarm_runtime.errors import StorageError
from swarm_runtime.orchestrator.bounded import MAX_EVENT_LINE, bounded_event
from swarm_runtime.orchestrator.dir_size import DirSize, byte_size
from swarm_runtime.orchestrator.rundir import claim_run_dir, remove_run_dir
from swarm_runtime.orchestrator.state import RunState
from swarm_runtime.storage.layout import RunLayout
from swarm_runtime.storage.lock import RunLock
from swarm_runtime.storage.store import (
    EventLog,
    dump_json,
    encode_line,
    preserve_previous,
    write_text_atomic,
)
from swarm_runtime.timeutil import Clock, format_ts

if TYPE_CHECKING:
    from swarm_runtime.plugins import RunListeners

ARTIFACT_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
"""An artifact's file name: no directories, no leading dot."""

TranscriptLine = dict[str, Any] | str
"""A transcript line: a mapping, or a string that is already one encoded line."""


class RunRecorder:
    """Creates a run directory and writes everything in it, in order."""

    def __init__(
        self,
        layout: RunLayout,
        state: RunState,
        *,
        lock: RunLock,
        clock: Clock,
        durable: bool,
        credentials: Credentials,
        listeners: RunListeners | None,
    ) -> None:
        self.layout = layout
        self.state = state
        self.clock = clock
        self.durable = durable
        self.credentials = credentials
        self.listeners = listeners
        """Hear every event once its line is written (:mod:`swarm_runtime.plugins`)."""
        self.lock = lock
        """The run's lock, a lease, taken by create() or reopen() before this."""
        self.log = EventLog(layout.events, durable=durable)
        self._history: EventLog | None = None
        self._history_items = 0
        self._history_hash = sha256()
        self._checkpoint_path = str(layout.checkpoint)
        self.dir_size = DirSize((self._checkpoint_path, str(layout.meta)))
        """What the run dir holds; past its ``limit``, a write is refused before it is made."""
        self._events_path = str(layout.events)
        self._history_path = str(layout.history)
        self._journals: dict[str, EventLog] = {}

    @classmethod
    def create(
        cls,
        runs_dir: Path,
        spec: RunSpecDocument,
        state: RunState,
        *,
        clock: Clock,
        rand: Callable[[int], str] | None,
        durable: bool,
        credentials: Credentials,
        listeners: RunListeners | None,
    ) -> RunRecorder:
        """Make a fresh run directory (a new id) and write ``spec.json`` into it."""
        spec_text = dump_json(spec, pretty=True)
        credentials.check(spec_text, f"spec.json of a run in {runs_dir}")  # before the run dir

        def write_spec(layout: RunLayout) -> None:
            write_text_atomic(layout.spec, spec_text, durable=durable)  # checked above

        layout, lock = claim_run_dir(runs_dir, clock=clock, rand=rand, first_file=write_spec)
        recorder = cls(
            layout,
            state,
            lock=lock,
            clock=clock,
            durable=durable,
            credentials=credentials,
            listeners=listeners,
        )
        recorder.dir_size.wrote(str(layout.spec), byte_size(spec_text))
        return recorder

    @classmethod
    def reopen(
        cls,
        layout: RunLayout,
        state: RunState,
        *,
        clock: Clock,
        durable: bool,
        credentials: Credentials,
        listeners: RunListeners | None,
    ) -> RunRecorder:
        """Take over an existing run directory to resume it (its lock first)."""
        lock = RunLock(layout.root)
        lock.acquire(format_ts(clock()), take_over_stale=True)
        recorder = cls(
            layout,
            state,
            lock=lock,
            clock=clock,
            durable=durable,
            credentials=credentials,
            listeners=listeners,
        )
        recorder.dir_size.count_existing(layout.root)
        return recorder

    @property
    def run_id(self) -> str:
        """The id of the run being written."""
        return self.layout.run_id

    def event(
        self,
        payload: Payload,
        *,
        flow_key: str | None = None,
        step_id: str | None = None,
        agent_key: str | None = None,
        ts: str | None = None,
        ahead: int = 0,
    ) -> Event:
        """The event of ``payload`` to append next (``ahead`` events after the next), unwritten."""
        return payload.event(
            run_id=self.layout.run_id,
            seq=self.state.seq + 1 + ahead,
            ts=ts or format_ts(self.clock()),
            flow_key=flow_key,
            step_id=step_id,
            agent_key=agent_key,
            payload=payload,
        )

    def emit(
        self,
        payload: Payload,
        *,
        flow_key: str | None = None,
        step_id: str | None = None,
        agent_key: str | None = None,
        ts: str | None = None,
    ) -> None:
        """Append the event of ``payload``; ``seq`` moves on only once its line is written."""
        self.append(
            self.event(payload, flow_key=flow_key, step_id=step_id, agent_key=agent_key, ts=ts)
        )

    def append_all(self, events: Iterable[Event]) -> None:
        """Append events made by :meth:`event`, in order."""
        for event in events:
            self.append(event)

    def encode(self, event: Event) -> str:
        """The line :meth:`append` writes for ``event``, checked for credentials.

        Encoded once, it can go into a checkpoint's pending events and then the log.
        """
        line = encode_line(event)
        if len(line) > MAX_EVENT_LINE:  # text from outside, cut visibly to fit a line
            line = bounded_event(event, line, encode_line)
        if self.credentials:  # the message is made only when there is something to find
            self.credentials.check(line, f"a {event.kind} event to {self._events_path}")
        return line

    def append(self, event: Event, line: str | None = None) -> None:
        """Append one event made by :meth:`event`; its ``seq`` must be the next one.

        ``line``: the event as :meth:`encode` gave it, when it was encoded already.
        """
        self.append_encoded([event], [self.encode(event) if line is None else line])

    def append_encoded(self, events: list[Event], lines: list[str]) -> None:
        """Append events made by :meth:`event` with their lines from :meth:`encode`.

        They are written with one write: all of them, or (the log cut back) none.
        """
        state = self.state
        for offset, event in enumerate(events, start=1):
            if event.seq != state.seq + offset:
                raise StorageError(
                    f"event {event.kind} has seq {event.seq}, expected {state.seq + offset}"
                )
        text = lines[0] if len(lines) == 1 else "".join(lines)
        self.lock.check()  # a lease taken over: the run is another process's now
        size = byte_size(text)
        self.dir_size.make_room(self._events_path, size)
        self.log.append_line(text)
        self.dir_size.wrote(self._events_path, size)
        state.seq += len(events)
        if self.listeners is not None:  # each on its own: one that raises is only reported
            for event in events:
                self.listeners.event(msgspec.to_builtins(event), self.layout.root)

    def write_meta(self, summary: RunSummary) -> None:
        """Rewrite ``meta.json`` atomically."""
        self._write(self.layout.meta, dump_json(summary, pretty=True))

    def append_history(self, item: HistoryItem) -> None:
        """Journal a completed step's output, so a resumed run's prompts see it."""
        line = encode_line(
            {
                "agent_key": item.agent_key,
                "flow_key": item.flow_key,
                "iteration": item.iteration,
                "output": item.output,
                "step_id": item.step_id,
            }
        )
        if self._history is None:
            self._history = EventLog(self._history_path, durable=self.durable)
        self.credentials.check(line, self._history_path)
        size = byte_size(line)
        self.dir_size.make_room(self._history_path, size)
        self._history.append_line(line)
        self.dir_size.wrote(self._history_path, size)
        self._history_items += 1
        self._history_hash.update(line.encode("utf-8"))

    def append_journal(self, name: str, entries: list[dict[str, Any]]) -> None:
        """Append a step's lines to a journal, before its checkpoint counts them."""
        path = str(self.layout.journal(name))
        text = "".join(encode_line(entry) for entry in entries)
        self.credentials.check(text, path)
        size = byte_size(text)
        self.dir_size.make_room(path, size)
        journal = self._journals.get(name)
        if journal is None:
            journal = self._journals[name] = EventLog(path, durable=self.durable)
        journal.append_line(text)
        self.dir_size.wrote(path, size)
        self.state.journals[name] = self.state.journals.get(name, 0) + len(entries)

    def continue_history(self, lines: list[str]) -> None:
        """Count journal lines already on disk (a resume) in the history digest."""
        for line in lines:
            self._history_items += 1
            self._history_hash.update(line.encode("utf-8"))

    @property
    def history_mark(self) -> tuple[int, str]:
        """How many history items are journalled, and the sha256 of their lines."""
        return self._history_items, self._history_hash.hexdigest()

    def write_artifacts(
        self, flow_key: str, step_id: str, iteration: int, artifacts: tuple[dict[str, Any], ...]
    ) -> list[PointerArtifact]:
        """Write a step's artifacts under ``<flow>/artifacts/``; their pointers (SPEC §7.4).

        An artifact is ``{name, content, content_type}``; a name already written by an
        earlier execution of the step is kept as ``~n`` first, as receipts are.
        """
        refs: list[PointerArtifact] = []
        if not artifacts:
            return refs
        directory = self.layout.artifacts(flow_key)
        self.layout.make_dir(directory)
        for artifact in artifacts:
            name = str(artifact.get("name", ""))
            if not ARTIFACT_NAME_RE.fullmatch(name):
                raise StorageError(
                    f"{flow_key}/{step_id}: artifact name {name!r} is not allowed "
                    f"(it must match {ARTIFACT_NAME_RE.pattern})"
                )
            content = str(artifact.get("content", ""))
            path = directory / name
            self.credentials.check(content, str(path))
            if iteration:
                preserve_previous(path, first=iteration)
            data = content.encode("utf-8")
            self._write(path, content, checked=True)
            refs.append(
                PointerArtifact(
                    name=name,
                    # Relative to the run dir: a run dir moved, copied or archived verifies.
                    uri=path.relative_to(self.layout.root).as_posix(),
                    content_type=str(artifact.get("content_type") or "text/plain"),
                    size_bytes=len(data),
                    sha256=_digest(data),
                )
            )
        return refs

    def write_checkpoint(self, document: dict[str, Any] | str) -> None:
        """Rewrite ``checkpoint.json`` atomically (compact: it is rewritten every step).

        ``document``: the checkpoint (:meth:`Checkpoint.capture`), or its text.
        """
        text = document if isinstance(document, str) else dump_json(document)
        self._write(self._checkpoint_path, text)

    def write_step(
        self,
        receipt_path: str,
        transcript_path: str,
        receipt: Receipt,
        lines: list[TranscriptLine],
        *,
        iteration: int,
    ) -> None:
        """Write a step execution's transcript and receipt, keeping earlier ones as ``~n``."""
        transcript = "".join(line if isinstance(line, str) else encode_line(line) for line in lines)
        receipt_text = dump_json(receipt)
        # Both are checked before either is written: a refusal leaves neither behind.
        self.credentials.check(transcript, transcript_path)
        self.credentials.check(receipt_text, receipt_path)
        if iteration:  # the step ran before in this run: keep its files as ~n
            preserve_previous(receipt_path, first=iteration)
            preserve_previous(transcript_path, first=iteration)
        self._write(transcript_path, transcript, checked=True)
        self._write(receipt_path, receipt_text, checked=True)

    def write_transcript(self, path: str, lines: list[TranscriptLine]) -> None:
        """A transcript of its own (a navigator call's), checked for credentials."""
        self._write(path, "".join(encode_line(line) for line in lines))

    def _write(self, path: str | Path, text: str, *, checked: bool = False) -> None:
        """Every run document is written here: scanned for credentials, then atomically."""
        if not checked:
            self.credentials.check(text, str(path))
        self.lock.check()
        where, size = str(path), byte_size(text)
        self.dir_size.make_room(where, size)
        write_text_atomic(path, text, durable=self.durable)
        self.dir_size.wrote(where, size)

    @property
    def size(self) -> int:
        """How many bytes the run dir holds (rewritten documents counted once)."""
        return self.dir_size.total

    def discard(self) -> None:
        """Remove a run dir that never got its first event (nothing in it is a run yet)."""
        self.log.close()
        self.lock.release()
        remove_run_dir(self.layout.root)

    def close(self) -> None:
        """Close the event log and the journals, and give the run lock up."""
        self.log.close()
        for journal in (self._history, *self._journals.values()):
            if journal is not None:
                journal.close()
        self.lock.release()


def _digest(data: bytes) -> str:
    hasher = sha256()
    hasher.update(data)
    return str(hasher.hexdigest())

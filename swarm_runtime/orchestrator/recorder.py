"""The only writer of a run's files: run dir, spec, events with their ``seq``, meta, steps.

Every document is scanned for credential values before it is written (when the run was
given any to refuse), so no secret ever lands in a run file, not even for an instant.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from swarm_runtime.documents import EventDoc, ReceiptDoc, RunSpecDoc, RunSummaryDoc
from swarm_runtime.errors import ConfigError, CredentialLeak, StorageError
from swarm_runtime.ids import new_run_id
from swarm_runtime.orchestrator.state import RunState
from swarm_runtime.storage.layout import RunLayout
from swarm_runtime.storage.store import (
    EventLog,
    dump_json,
    encode_line,
    json_escape,
    preserve_previous,
    write_text_atomic,
)
from swarm_runtime.timeutil import Clock, format_ts

__all__ = ["EventObserver", "RunRecorder", "TranscriptLine"]

EventObserver = Callable[[dict[str, Any]], None]
TranscriptLine = dict[str, Any] | str
"""A transcript line: a mapping, or a string that is already one encoded line."""


class RunRecorder:
    """Creates a run directory and writes everything in it, in order."""

    def __init__(
        self,
        layout: RunLayout,
        state: RunState,
        *,
        clock: Clock,
        durable: bool,
        refuse_values: tuple[str, ...],
        observer: EventObserver | None,
    ) -> None:
        self.layout = layout
        self.state = state
        self.clock = clock
        self.durable = durable
        self.refuse_values = refuse_values
        self.observer = observer
        self.observer_error: str | None = None
        self.log = EventLog(layout.events, durable=durable)

    @classmethod
    def create(
        cls,
        runs_dir: Path,
        spec: RunSpecDoc,
        state: RunState,
        *,
        clock: Clock,
        rand: Callable[[int], str] | None,
        durable: bool,
        refuse_values: tuple[str, ...],
        observer: EventObserver | None,
    ) -> RunRecorder:
        """Make a fresh run directory (a new id) and write ``spec.json`` into it."""
        spec_text = dump_json(spec, pretty=True)
        _refuse(spec_text, "spec.json", refuse_values)  # before the run dir exists
        if runs_dir.exists() and not runs_dir.is_dir():
            raise ConfigError(f"runs dir {runs_dir} exists and is not a directory")
        try:
            runs_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(
                f"cannot create runs dir {runs_dir}: {exc.strerror or exc}; choose another "
                "with --runs-dir or SWARM_RUNS_DIR"
            ) from None
        for _ in range(100):
            layout = RunLayout(runs_dir, new_run_id(clock(), rand))
            try:
                os.mkdir(layout.root)
            except FileExistsError:
                continue  # another process took this id in the same second
            except OSError as exc:
                raise ConfigError(
                    f"cannot create a run dir in {runs_dir}: {exc.strerror or exc}"
                ) from None
            write_text_atomic(layout.spec, spec_text, durable=durable)
            return cls(
                layout,
                state,
                clock=clock,
                durable=durable,
                refuse_values=refuse_values,
                observer=observer,
            )
        raise StorageError(f"could not find a free run id in {runs_dir} after 100 tries")

    @property
    def run_id(self) -> str:
        """The id of the run being written."""
        return self.layout.run_id

    def emit(
        self,
        kind: str,
        payload: dict[str, Any],
        *,
        flow_key: str | None = None,
        step_id: str | None = None,
        agent_key: str | None = None,
        ts: str | None = None,
    ) -> None:
        """Append one event; ``seq`` moves on only once its line is written."""
        state = self.state
        event: EventDoc = {
            "run_id": self.layout.run_id,
            "seq": state.seq + 1,
            "ts": ts or format_ts(self.clock()),
            "kind": kind,
            "flow_key": flow_key,
            "step_id": step_id,
            "agent_key": agent_key,
            "payload": payload,
        }
        line = encode_line(event)
        if self.refuse_values:
            _refuse(line, f"an event ({kind}) of {self.layout.events}", self.refuse_values)
        self.log.append_line(line)
        state.seq += 1
        observer = self.observer
        if observer is not None:
            try:
                observer(dict(event))
            except Exception as exc:  # a broken display must not break the run's record
                self.observer = None
                self.observer_error = f"{type(exc).__name__}: {exc}"

    def write_meta(self, summary: RunSummaryDoc) -> None:
        """Rewrite ``meta.json`` atomically."""
        text = dump_json(summary, pretty=True)
        if self.refuse_values:
            _refuse(text, str(self.layout.meta), self.refuse_values)
        write_text_atomic(self.layout.meta, text, durable=self.durable)

    def write_step(
        self,
        receipt_path: str,
        transcript_path: str,
        receipt: ReceiptDoc,
        lines: list[TranscriptLine],
        *,
        iteration: int,
    ) -> None:
        """Write a step execution's transcript and receipt, keeping earlier ones as ``~n``."""
        transcript = "".join(line if isinstance(line, str) else encode_line(line) for line in lines)
        receipt_text = dump_json(receipt)
        if self.refuse_values:
            _refuse(
                transcript + receipt_text,
                f"{transcript_path} and its receipt",
                self.refuse_values,
            )
        if iteration:  # the step ran before in this run: keep its files as ~n
            preserve_previous(receipt_path, first=iteration)
            preserve_previous(transcript_path, first=iteration)
        write_text_atomic(transcript_path, transcript, durable=self.durable)
        write_text_atomic(receipt_path, receipt_text, durable=self.durable)

    def close(self) -> None:
        """Close the event log."""
        self.log.close()


def _refuse(text: str, what: str, values: tuple[str, ...]) -> None:
    for value in values:
        if value in text or json_escape(value) in text:
            raise CredentialLeak(
                f"refusing to write {what}: it holds the value of a credential "
                f"({value[:4]}…); keep secrets out of params, prompts and replies"
            )

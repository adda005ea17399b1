"""The only writer of a run's files: run dir, spec, events with their ``seq``, meta, steps.

Every document and every event line is scanned for the credential values of the
environment before it is written, in every mode, so no secret ever lands in a run file,
not even for an instant: a refusal (:class:`~swarm_runtime.errors.CredentialLeak`) names
the file and the variable and shows only a masked value.

How big a run dir is, counted as it is written, and the limit no write may take it past.

The recorder asks :meth:`DirSize.make_room` before every write: a write that would take the
run dir past its limit (``--max-run-mb``) is refused before any byte of it is written, so a
run never overshoots by a step. The refusal ends the run; the few lines that close it (the
open step's ``step_error``, ``run_completed``, ``meta.json``) are written past the limit, which
is then no longer enforced: they are bounded (an event line by
:data:`MAX_EVENT_LINE`), so the run dir ends at most a
few KiB past it.

A new run directory: the runs dir made ready, a free run id claimed under its lock.

The run's files are the recorder's to write; here only the directory is made, and taken
away again when it never became a run.

What a line of ``events.jsonl`` may hold: text from outside is cut, visibly.

A navigator's rationale, its choice, the edge it proposes, a fact's text, an engine's
error or a tool's input come from a model or an engine and may be any size. Each is cut
where it is made (:func:`~.state.cut`, with a marker that says how much went, as
docs/flows.md#truncation marks a prompt), and :func:`bounded_event` is the last guard of every event
line: one longer than :data:`MAX_EVENT_LINE` characters has its strings and lists cut, visibly,
until it fits.

The verdict on an engine's answer: does it fail the step, and how long to wait to retry.

By result code (docs/contract/steps.md#result-codes): ``fatal`` and ``blocked`` fail the step,
``retryable`` is retried within the execution (``retry-after`` or equal-jitter backoff) until its
attempts run out; a server that asks for a longer wait than ``max_retry_after_s`` is not waited for.
Budgets (a step that breaks one fails however the engine answered) are
:class:`~.state.BudgetCheck`'s.

The engine call of one step execution, made again while the engine answers ``retryable``.

Every attempt's events are recorded (docs/contract/steps.md#result-codes) as they come; between
attempts a ``log`` event says when the next one starts, and the run sleeps the engine's
``retry_after_ms`` when it gave one (up to ``max_retry_after_s``: a longer one ends the call at
once), else an equal-jitter backoff. An engine that raises ends the call.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Iterable, Mapping
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from swarm_runtime.config import MAX_RETRY_AFTER_S
from swarm_runtime.credentials import Credentials
from swarm_runtime.digest import sha256
from swarm_runtime.documents.payload import Event, Payload
from swarm_runtime.documents.receipt import PointerArtifact, Receipt
from swarm_runtime.documents.run import RunSpecDocument, RunSummary
from swarm_runtime.documents.run_events import Log
from swarm_runtime.engines.base import (
    HistoryItem,
    Prompt,
    StepContext,
    StepEngine,
    StepOutcome,
    StepResult,
    TokenUsage,
)
from swarm_runtime.errors import ConfigError, ReplayDivergence, StorageError
from swarm_runtime.flow.spec import FlowSpec, StepSpec
from swarm_runtime.ids import new_run_id
from swarm_runtime.orchestrator.checkpoint import RunControl
from swarm_runtime.orchestrator.context import Call
from swarm_runtime.orchestrator.state import RunState, cut
from swarm_runtime.record import replace
from swarm_runtime.storage.layout import RunLayout
from swarm_runtime.storage.lock import RunLock
from swarm_runtime.storage.store import (
    EventLog,
    dump_json,
    dump_json_bytes,
    encode_line,
    encode_line_bytes,
    preserve_previous,
    write_text_atomic,
)
from swarm_runtime.timeutil import Clock, format_ts, ms_between


def byte_size(text: str) -> int:
    """How many bytes ``text`` takes as UTF-8 (no copy for ASCII, the usual case)."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


class DirSize:
    """The bytes a run dir holds: files that grow, plus documents rewritten in place."""

    def __init__(self, rewritten: tuple[str, ...]) -> None:
        self.rewritten = rewritten
        """Documents rewritten in place (meta, checkpoint): counted at their last size."""
        self.grown = 0
        """Bytes written to files that stay (events, journals, step files, artifacts)."""
        self.documents: dict[str, int] = {}
        self._documents_total = 0
        """The sum of ``documents``, kept as they are written."""
        self.limit: int | None = None
        """The most bytes the run dir may hold (None: no limit, or no longer enforced)."""

    @property
    def total(self) -> int:
        """The bytes written so far."""
        return self.grown + self._documents_total

    def make_room(self, where: str, size: int) -> None:
        """Refuse (StorageError) a write of ``size`` bytes to ``where`` past the limit."""
        if self.limit is None:
            return
        after = self.total + size - self.documents.get(where, 0)
        if after <= self.limit:
            return
        limit, self.limit = self.limit, None  # what closes the run is written past it
        raise StorageError(
            f"writing {Path(where).name} ({size} bytes) would take the run dir to "
            f"{after} bytes, past its limit of {limit >> 20} MiB ({limit} bytes); the run "
            "ends before it - raise the limit with --max-run-mb (or max_run_mb in "
            "runtime.yaml), or look for a loop whose prompts keep growing"
        )

    def wrote(self, where: str, size: int) -> None:
        """Count a write of ``size`` bytes to ``where``."""
        if where in self.rewritten:
            self._documents_total += size - self.documents.get(where, 0)
            self.documents[where] = size
        else:
            self.grown += size

    def count_existing(self, root: Path) -> None:
        """Start from what a run dir being resumed holds already."""
        total = 0
        for directory, _, files in os.walk(root):
            for name in files:
                with contextlib.suppress(OSError):
                    total += os.lstat(os.path.join(directory, name)).st_size
        self.grown = total


def claim_run_dir(
    runs_dir: Path,
    *,
    clock: Clock,
    rand: Callable[[int], str] | None,
    first_file: Callable[[RunLayout], None],
) -> tuple[RunLayout, RunLock]:
    """A fresh run directory under ``runs_dir`` (a new id), locked, with ``first_file`` written.

    ``first_file`` writes what makes the directory a run (its ``spec.json``); when the lock
    or that write fails, the directory is removed again and the error raised.
    """
    _make_runs_dir(runs_dir)
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
        lock = RunLock(layout.root)
        try:
            lock.acquire(format_ts(clock()))
            first_file(layout)
        except BaseException:
            lock.release()  # a run dir without its spec is no run: leave nothing
            remove_run_dir(layout.root)
            raise
        return layout, lock
    raise StorageError(f"could not find a free run id in {runs_dir} after 100 tries")


def _make_runs_dir(runs_dir: Path) -> None:
    """Make ``runs_dir`` (and its parents), or say why it cannot be and what to do."""
    if runs_dir.exists() and not runs_dir.is_dir():
        raise ConfigError(f"runs dir {runs_dir} exists and is not a directory")
    if runs_dir.is_symlink() and not runs_dir.exists():
        raise ConfigError(
            f"runs dir {runs_dir} is a symlink to {os.readlink(runs_dir)}, which does not "
            "exist; create its target or choose another with --runs-dir or SWARM_RUNS_DIR"
        )
    try:
        runs_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(
            f"cannot create runs dir {runs_dir}: {exc.strerror or exc}; choose another "
            "with --runs-dir or SWARM_RUNS_DIR"
        ) from None


def remove_run_dir(path: Path) -> None:
    """Remove a run dir that is no run (``shutil`` is imported only then: it is slow to)."""
    import shutil

    shutil.rmtree(path, ignore_errors=True)


MAX_EVENT_LINE = 32_768
"""The longest line of ``events.jsonl``, in characters."""
_PASSES = ((4_000, 100, 12), (500, 20, 6), (80, 5, 3), (0, 0, 1))
"""What each pass of :func:`bounded_event` keeps: characters of a string, items of a list
(keys of a mapping: at least 16, so a payload's own keys all stay), levels of nesting."""
_KEYS = 16


def bounded_event(event: Event, line: str, encode: Callable[[Any], str]) -> str:
    """The line of ``event``, cut to fit :data:`MAX_EVENT_LINE` when ``line`` is longer.

    ``encode`` turns an event into its line. Strings are cut, then lists (a marker item
    says how many items went), harder on each pass; what the kernel writes itself (ids,
    kinds, numbers) is short and stays.
    """
    document: dict[str, Any] = msgspec.to_builtins(event)
    for chars, items, depth in _PASSES:
        if len(line) <= MAX_EVENT_LINE:
            break
        document = {**document, "payload": _cut_value(document["payload"], chars, items, depth)}
        line = encode(document)
    return line


def _cut_value(value: Any, chars: int, items: int, depth: int) -> Any:
    """``value`` with its strings, lists and mappings cut; ``depth``: levels left below it."""
    if isinstance(value, str):
        return cut(value, chars)
    if isinstance(value, dict | list | tuple) and depth <= 0:
        return f"[TRUNCATED: a {type(value).__name__} of {len(value)} items]"
    if isinstance(value, dict):
        keys = max(items, _KEYS)
        kept = {
            cut(str(key), max(chars, 80)): _cut_value(item, chars, items, depth - 1)
            for key, item in islice(value.items(), keys)
        }
        if len(value) > keys:
            kept["[TRUNCATED]"] = f"{len(value) - keys} of {len(value)} keys cut"
        return kept
    if isinstance(value, list | tuple):
        listed = [_cut_value(item, chars, items, depth - 1) for item in value[:items]]
        if len(value) > items:
            listed.append(f"[TRUNCATED: {len(value) - items} of {len(value)} items cut]")
        return listed
    return value


if TYPE_CHECKING:
    from swarm_runtime.plugins import RunListeners

ARTIFACT_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
"""An artifact's file name: no directories, no leading dot."""

TranscriptLine = dict[str, Any] | str | bytes
"""A transcript line: a mapping, or a string (or its bytes) that is already one encoded line."""


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
        listeners = self.listeners
        if listeners is not None and listeners.hear_events:  # each on its own: one that
            for event in events:  # raises is only reported
                listeners.event(msgspec.to_builtins(event), self.layout.root)

    def write_meta(self, summary: RunSummary) -> None:
        """Rewrite ``meta.json`` atomically."""
        self._write(self.layout.meta, dump_json(summary, pretty=True))

    def append_history(self, item: HistoryItem) -> None:
        """Journal a completed step's output, so a resumed run's prompts see it."""
        line = encode_line_bytes(
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
        if self.credentials:
            self.credentials.check(line.decode("utf-8"), self._history_path)
        size = len(line)
        self.dir_size.make_room(self._history_path, size)
        self._history.append_line(line)
        self.dir_size.wrote(self._history_path, size)
        self._history_items += 1
        self._history_hash.update(line)

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
        """Write a step's artifacts under ``<flow>/artifacts/``; their pointers.

        An artifact is ``{name, content, content_type}``; a name already written by an
        earlier execution of the step is kept as ``~n`` first, as receipts are.

        See docs/contract/steps.md#artifacts.
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
        text = document if isinstance(document, str) else dump_json_bytes(document)
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
        transcript = b"".join(
            line
            if isinstance(line, bytes)
            else line.encode("utf-8")
            if isinstance(line, str)
            else encode_line_bytes(line)
            for line in lines
        )
        receipt_text = dump_json_bytes(receipt)
        # Both are checked before either is written: a refusal leaves neither behind.
        if self.credentials:
            self.credentials.check(transcript.decode("utf-8"), transcript_path)
            self.credentials.check(receipt_text.decode("utf-8"), receipt_path)
        if iteration:  # the step ran before in this run: keep its files as ~n
            preserve_previous(receipt_path, first=iteration)
            preserve_previous(transcript_path, first=iteration)
        self._write(transcript_path, transcript, checked=True)
        self._write(receipt_path, receipt_text, checked=True)

    def write_transcript(self, path: str, lines: list[TranscriptLine]) -> None:
        """A transcript of its own (a navigator call's), checked for credentials."""
        self._write(path, "".join(encode_line(line) for line in lines))

    def _write(self, path: str | Path, text: str | bytes, *, checked: bool = False) -> None:
        """Every run document is written here: scanned for credentials, then atomically."""
        if not checked and self.credentials:
            self.credentials.check(text if isinstance(text, str) else text.decode(), str(path))
        self.lock.check()
        where, size = str(path), len(text) if isinstance(text, bytes) else byte_size(text)
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


BACKOFF_BASE_S = 0.5
"""The first retry waits about this long (docs/contract/steps.md#result-codes: 0.5 s × 2ⁿ)."""
BACKOFF_CAP_S = 30.0
"""No backoff waits longer."""


def backoff_delay(attempt: int, retry_after_ms: int | None, jitter: float) -> float:
    """Seconds to wait after failed ``attempt``: ``retry-after`` if given, else equal jitter."""
    if retry_after_ms is not None:
        return retry_after_ms / 1000.0
    base: float = min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2.0 ** (attempt - 1))
    return base / 2 + base / 2 * jitter


def retry_after_refused(outcome: StepOutcome, attempt: int, max_retry_after_s: float) -> str | None:
    """Why a ``retryable`` answer is not retried: its ``retry-after`` is too long; or None."""
    asked = outcome.retry_after_ms
    if asked is None or asked <= max_retry_after_s * 1000:
        return None
    return (
        f"not retried after attempt {attempt}: the server asked to wait {asked / 1000:.15g} s "
        f"(retry-after), longer than max_retry_after_s = {max_retry_after_s:g} s "
        "(runtime.yaml max_retry_after_s or SWARM_MAX_RETRY_AFTER_S raises it): "
        f"{outcome.result.error or 'no detail'}"
    )


def outcome_error(step: StepSpec, outcome: StepOutcome, max_attempts: int) -> str | None:
    """Why the engine's answer fails the step (docs/contract/steps.md#result-codes), or None."""
    code = outcome.result_code
    result = outcome.result
    if result.step_id != step.id:
        return f"engine returned a result for step '{result.step_id}' while running '{step.id}'"
    detail = result.error or "no detail"
    if code == "fatal":
        return result.error or "fatal error"
    if code == "retryable":
        return f"still failing after {max_attempts} attempt(s): {detail}"
    if code == "blocked":
        return (
            f"step returned result_code 'blocked' ({detail}); pausing for external input "
            "is not supported in this version, so the step fails"
        )
    if result.status == "failed":
        return result.error or "the engine reported a failure without a message"
    return None


class EngineCaller:
    """Calls the engine of a step execution, with its retries, and records its events."""

    def __init__(
        self,
        *,
        recorder: RunRecorder,
        control: RunControl,
        clock: Clock,
        sleep: Callable[[float], None],
        jitter: Callable[[], float],
        max_attempts: int,
        max_retry_after_s: float = MAX_RETRY_AFTER_S,
    ) -> None:
        self.recorder = recorder
        self.control = control
        self.clock = clock
        self.sleep = sleep
        self.jitter = jitter
        self.max_attempts = max_attempts
        """Attempts per execution for a step that sets none itself."""
        self.max_retry_after_s = max_retry_after_s

    def call(self, engine: StepEngine, ctx: StepContext, flow: FlowSpec, step: StepSpec) -> Call:
        """The engine call, retried within the execution while it answers ``retryable``."""
        max_attempts = step.max_attempts or self.max_attempts
        attempt = llm_ms = waited_ms = 0
        earlier, earlier_cost = TokenUsage(), 0.0
        clock = self.clock
        while True:
            attempt += 1
            error: str | None = None
            unsent = False
            outcome: StepOutcome | None = None
            if attempt > 1:
                ctx = replace(ctx, attempt=attempt)
            began = clock()
            with self.control.engine_call():
                try:
                    outcome = engine.run_step(ctx)
                except Exception as exc:  # an engine bug must still end the step and the run
                    error = f"engine '{engine.engine_id}' raised {type(exc).__name__}: {exc}"
                    unsent = isinstance(exc, ReplayDivergence)
            llm_ms += ms_between(began, clock())
            for event in outcome.events if outcome else ():
                self.recorder.emit(
                    event.payload,
                    flow_key=flow.key,
                    step_id=step.id,
                    agent_key=step.primary_agent,
                    ts=event.ts,
                )
            if outcome is None:
                failed = StepOutcome(
                    result=StepResult(step_id=step.id, status="failed", error=error),
                    result_code="fatal",  # an engine's bug: no retry mends it
                    mode=engine.mode,
                    request_sha256=_request_digest(engine, ctx),
                    # A replay miss sent nothing: it cost nothing, not an unknown amount.
                    cost_usd=0.0 if unsent else None,
                )
                return Call(
                    failed, error, attempt, max_attempts, llm_ms, waited_ms, earlier, earlier_cost
                )
            if outcome.request_sha256 is None:
                outcome = replace(outcome, request_sha256=_request_digest(engine, ctx))
            retry = outcome.result_code == "retryable" and attempt < max_attempts
            error = retry_after_refused(outcome, attempt, self.max_retry_after_s) if retry else None
            if not retry or error:
                return Call(
                    outcome, error, attempt, max_attempts, llm_ms, waited_ms, earlier, earlier_cost
                )
            spent = outcome.tokens
            if spent.total:  # a retried answer's tokens still count (docs/budgets.md)
                earlier = TokenUsage(
                    earlier.prompt + spent.prompt, earlier.completion + spent.completion
                )
            earlier_cost += outcome.cost_usd or 0.0
            began = clock()
            self._wait_before_retry(flow, step, outcome, attempt, max_attempts)
            waited_ms += ms_between(began, clock())

    def _wait_before_retry(
        self, flow: FlowSpec, step: StepSpec, outcome: StepOutcome, attempt: int, max_attempts: int
    ) -> None:
        """Log the retry, then sleep: ``retry_after_ms`` when given, else backoff.

        See docs/contract/steps.md#result-codes.
        """
        delay = backoff_delay(attempt, outcome.retry_after_ms, self.jitter())
        self.recorder.emit(
            Log(
                message=f"retrying {flow.key}/{step.id} in {delay:.3f} s "
                f"(attempt {attempt + 1} of {max_attempts})",
                attempt=attempt,
                max_attempts=max_attempts,
                error=outcome.result.error,
                retry_in_ms=round(delay * 1000),
            ),
            flow_key=flow.key,
            step_id=step.id,
            agent_key=step.primary_agent,
        )
        with self.control.engine_call():  # a second Ctrl-C aborts the wait like the call
            self.sleep(delay)


def _request_digest(engine: StepEngine, ctx: StepContext) -> str | None:
    """The engine's request digest for ``ctx``; None when it cannot say (its bug, not ours)."""
    try:
        return engine.request_sha256(ctx)
    except Exception:  # an engine bug must still end the step with its receipt
        return None


def call_lines(
    prompt: Prompt, transcript: Iterable[Mapping[str, Any]], started: str, completed: str
) -> list[TranscriptLine]:
    """The transcript of a call the kernel makes after a step (a navigator's, a judge's)."""
    lines: list[TranscriptLine] = [
        {"content": prompt.system, "role": "system", "timestamp": started},
        {"content": prompt.user, "role": "user", "timestamp": started},
    ]
    lines.extend({"timestamp": completed, **line} for line in transcript)
    return lines

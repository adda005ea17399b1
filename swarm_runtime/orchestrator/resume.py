"""Reopening a run to resume it: after a pause, a stop, a block or a crash (SPEC §8.2).

Whatever instant a run was killed at, its directory is brought back to a state the run
loop can go on from: leftover temporary files are removed, a torn last line of the event
log is cut off, the events a checkpoint carries that the log lacks are appended, and a
step a crash left open is found (the run closes it with ``step_error{error:
"interrupted"}``), with any receipt or transcript it wrote moved to ``<flow>/interrupted/``
so the step's re-run files keep their places. Counters come from ``checkpoint.json``,
history from the first items of ``history.jsonl`` (checked against the checkpoint's
digest); a run killed before its first checkpoint starts again from its first step.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from swarm_runtime.credentials import Credentials
from swarm_runtime.digest import sha256
from swarm_runtime.documents.events import read_event
from swarm_runtime.documents.run_events import RunResumed
from swarm_runtime.engines.base import HistoryItem
from swarm_runtime.errors import RunControlError, StorageError
from swarm_runtime.flow.spec import FlowSpec
from swarm_runtime.ids import RUN_ID_RE
from swarm_runtime.inputs.files import read_bytes_limited, read_run_text
from swarm_runtime.inputs.json_input import load_json
from swarm_runtime.inputs.limits import MAX_RUN_FILE_BYTES
from swarm_runtime.orchestrator.checkpoint import (
    MAX_CHECKPOINT_BYTES,
    BlockedStep,
    Checkpoint,
    Position,
)
from swarm_runtime.orchestrator.checkpoint_check import check_checkpoint
from swarm_runtime.orchestrator.history import HistoryBudget
from swarm_runtime.orchestrator.interrupted import find_open_step, interrupted_error, move_orphans
from swarm_runtime.orchestrator.plan import FlowSlice, RunSpec
from swarm_runtime.orchestrator.recorder import RunRecorder
from swarm_runtime.orchestrator.stack import DEFAULT_MAX_DEPTH
from swarm_runtime.orchestrator.state import RunState
from swarm_runtime.record import Record, field
from swarm_runtime.storage.layout import JOURNALS, RunLayout
from swarm_runtime.storage.queued import clear_handed_over
from swarm_runtime.storage.status import wait_for_pauser
from swarm_runtime.storage.store import read_event_log
from swarm_runtime.timeutil import Clock

if TYPE_CHECKING:
    from swarm_runtime.plugins import RunListeners


class Reopened(Record):
    """A run directory made ready to go on, and where it goes on from."""

    spec: RunSpec
    recorder: RunRecorder
    state: RunState
    position: Position
    previous: str
    """How the run had ended: paused, stopped, blocked or crashed; ``queued`` for a run
    made for a worker that has not begun (it opens as a new run)."""
    created_at: str | None = None
    blocked: BlockedStep | None = None
    external_input: str | None = None
    closing: list[dict[str, Any]] = field(default_factory=list)
    """Events that close what the crash left open (``step_error`` of the open step)."""
    needs_created: bool = False
    needs_started: bool = False
    repairs: list[str] = field(default_factory=list)
    """What was mended in the directory (a torn line, temporary files, moved files)."""
    finished: dict[str, Any] | None = None
    """The ``run_completed`` of a run killed after it (before its final ``meta.json``):
    there is nothing to run, only the bookkeeping to finish."""

    def resumed_payload(self) -> RunResumed:
        """The payload of ``run_resumed``."""
        return RunResumed(
            reason=f"resumed after {'a crash' if self.previous == 'crashed' else self.previous}",
            previous_status=self.previous,
            flow_index=self.position.flow_index,
            step_id=self.position.step_id,
            external_input=self.external_input is not None,
            repairs=list(self.repairs),
        )


def read_json(path: Path) -> Any:
    """A JSON file's value, or None when it is missing or unreadable."""
    try:
        return load_json(read_run_text(path))
    except (OSError, ValueError):
        return None


def read_run_spec(run_dir: Path) -> tuple[RunSpec, dict[str, Any]]:
    """The RunSpec of a run, and its ``spec.json`` (mode, engine, origin) as written."""
    doc = read_json(run_dir / "spec.json")
    if not isinstance(doc, dict):
        raise RunControlError(
            f"{run_dir / 'spec.json'}: missing or unreadable; this is not a run directory "
            "that can be resumed"
        )
    try:
        spec = RunSpec.from_document(doc)
    except (KeyError, TypeError, ValueError) as exc:
        raise RunControlError(f"{run_dir / 'spec.json'}: not a run spec ({exc})") from None
    return spec, doc


def reopen_run(
    run_dir: Path,
    *,
    plan: Sequence[FlowSlice],
    budget: HistoryBudget,
    clock: Clock,
    durable: bool,
    credentials: Credentials,
    listeners: RunListeners | None,
    external_input: str | None,
    injectable: Sequence[FlowSpec] = (),
    max_depth: int = DEFAULT_MAX_DEPTH,
    sleep: Callable[[float], None] = time.sleep,
    notice: Callable[[str], None] | None = None,
) -> Reopened:
    """Lock ``run_dir`` and mend it for the run loop; RunControlError if it cannot go on.

    ``plan`` is the run's flows as they are now, ``injectable`` the flows its steps may
    enter and ``max_depth`` how deep (SPEC §4.6): the checkpoint must agree with them. A run
    that has just paused is waited for (``sleep``) while the process that paused it lets go,
    said to ``notice``.
    """
    run_dir = Path(os.path.abspath(run_dir))
    if not RUN_ID_RE.fullmatch(run_dir.name) or not run_dir.is_dir():
        raise RunControlError(f"{run_dir} is not a run directory (run-YYYYMMDD-HHMMSS-xxxxxx)")
    spec, _ = read_run_spec(run_dir)
    _refuse_finished(run_dir, read_json(run_dir / "meta.json"))  # before taking the lock
    wait_for_pauser(run_dir, sleep=sleep, notice=notice or (lambda _message: None))
    state = RunState(budget)
    layout = RunLayout(run_dir.parent, run_dir.name)
    recorder = RunRecorder.reopen(
        layout,
        state,
        clock=clock,
        durable=durable,
        credentials=credentials,
        listeners=listeners,
    )
    try:
        # Read again under the lock: another resumer may have finished the run meanwhile.
        meta = read_json(run_dir / "meta.json")
        _refuse_finished(run_dir, meta)
        status = meta.get("status") if isinstance(meta, dict) else None
        flows = (plan, injectable, max_depth)
        return _mend(layout, spec, flows, recorder, state, status, meta, external_input)
    except BaseException:
        recorder.close()
        raise


def _refuse_finished(run_dir: Path, meta: Any) -> None:
    status = meta.get("status") if isinstance(meta, dict) else None
    if status in ("succeeded", "failed"):
        detail = f" ({meta.get('error')})" if isinstance(meta, dict) and meta.get("error") else ""
        raise RunControlError(
            f"run {run_dir.name} {status}{detail}; only a paused, stopped or crashed run "
            "can be resumed - start a new run instead"
        )


def _mend(
    layout: RunLayout,
    spec: RunSpec,
    flows: tuple[Sequence[FlowSlice], Sequence[FlowSpec], int],
    recorder: RunRecorder,
    state: RunState,
    status: Any,
    meta: Any,
    external_input: str | None,
) -> Reopened:
    repairs = _remove_temporary_files(layout.root)
    queued = clear_handed_over(layout.root)  # under the lock: a worker's task runs it once
    events, checkpoint = _mend_log(layout, flows, recorder, state, repairs)
    _restore_history(layout, recorder, state, checkpoint)
    _restore_journals(layout, state, checkpoint)
    blocked = checkpoint.blocked if checkpoint is not None else None
    _check_input(layout.run_id, blocked, external_input)
    finished = _finished(events)
    if finished is not None:
        return Reopened(
            spec=spec,
            recorder=recorder,
            state=state,
            position=Position(0),
            previous="crashed",
            created_at=meta.get("created_at") if isinstance(meta, dict) else None,
            finished=finished,
            repairs=repairs,
        )
    open_step = find_open_step(events)
    closing: list[dict[str, Any]] = []
    if open_step is not None and blocked is None:
        closing.append(interrupted_error(open_step, events[-1]))
        repairs.extend(move_orphans(layout, open_step, state))
    if status not in ("paused", "stopped") and events and events[-1].get("kind") == "run_paused":
        status = "paused"  # killed after its run_paused, before meta.json said so
    previous = "crashed" if status not in ("paused", "stopped") else str(status)
    if queued and not events:
        previous = "queued"  # handed to a worker and begun by it: a new run, not a resume
    if blocked is not None:
        previous = "blocked"
    return Reopened(
        spec=spec,
        recorder=recorder,
        state=state,
        position=checkpoint.position if checkpoint is not None else Position(0),
        previous=previous,
        created_at=meta.get("created_at") if isinstance(meta, dict) else None,
        blocked=blocked,
        external_input=external_input,
        closing=closing,
        needs_created=not events,
        needs_started=not any(e.get("kind") == "run_started" for e in events),
        repairs=repairs,
    )


def _mend_log(
    layout: RunLayout,
    flows: tuple[Sequence[FlowSlice], Sequence[FlowSpec], int],
    recorder: RunRecorder,
    state: RunState,
    repairs: list[str],
) -> tuple[list[dict[str, Any]], Checkpoint | None]:
    """The event log made whole again, and the checkpoint it was checked against.

    A torn last line is cut off; the counters come from the checkpoint, and the events it
    carries that the log lacks are appended. What was mended is added to ``repairs``.
    """
    log = read_event_log(layout.events) if layout.events.exists() else None
    events = log.events if log is not None else []
    if log is not None and log.torn is not None:
        _cut_torn_tail(layout.events, len(log.torn.text.encode("utf-8")))
        repairs.append(f"cut a torn last line of events.jsonl ({len(log.torn.text)} chars)")
    checkpoint = _read_checkpoint(layout)
    state.seq = int(events[-1].get("seq", 0)) if events else 0
    if checkpoint is not None:
        plan, injectable, max_depth = flows
        check_checkpoint(
            checkpoint,
            plan,
            events,
            where=str(layout.checkpoint),
            injectable=injectable,
            max_depth=max_depth,
        )
        checkpoint.restore(state, events)
        state.seq = int(events[-1].get("seq", 0)) if events else 0
        for event in checkpoint.pending_events:  # written to the checkpoint, not the log
            if event["seq"] > state.seq:
                recorder.append(read_event(event))  # its kind's, as check_checkpoint found it
                events.append(event)
                repairs.append(f"appended {event['kind']} (seq {event['seq']}) from the checkpoint")
    return events, checkpoint


def _check_input(run_id: str, blocked: BlockedStep | None, external_input: str | None) -> None:
    """``--input`` is for a run blocked on a step, and such a run cannot go on without it."""
    if blocked is not None and external_input is None:
        raise RunControlError(
            f"run {run_id} is blocked at {blocked.flow_key}/{blocked.step_id}: "
            f"{blocked.reason}; resume it with --input TEXT (what the step waits for)"
        )
    if blocked is None and external_input is not None:
        raise RunControlError(
            f"run {run_id} is not blocked on a step; --input is only for a run "
            "paused by a blocked step"
        )


def _read_checkpoint(layout: RunLayout) -> Checkpoint | None:
    path = layout.checkpoint
    try:
        raw = read_run_text(path, MAX_CHECKPOINT_BYTES)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise StorageError(f"{path}: cannot read the checkpoint: {exc}") from None
    try:
        doc = load_json(raw)
    except ValueError as exc:
        raise StorageError(f"{path}: not JSON ({exc}); the run cannot be resumed") from None
    checkpoint = Checkpoint.parse(doc, str(path))
    if checkpoint.run_id != layout.run_id:
        raise RunControlError(
            f"{path}: the checkpoint is of run {checkpoint.run_id}, not {layout.run_id}; the "
            "run was left as it is"
        )
    return checkpoint


def _journal(path: Path, wanted: int, what: str) -> list[bytes]:
    """The first ``wanted`` lines of a journal, newlines kept; the lines after are cut."""
    try:
        data = read_bytes_limited(path, MAX_RUN_FILE_BYTES, nofollow=True)
    except FileNotFoundError:
        data = b""
    except (OSError, ValueError) as exc:
        raise StorageError(f"{path}: cannot read {what}: {exc}") from None
    lines = data.split(b"\n")[:-1]  # a last line without a newline was cut off
    if len(lines) < wanted:
        raise StorageError(
            f"{path}: {len(lines)} item(s), the checkpoint counts {wanted}; "
            "the run cannot be resumed"
        )
    kept = [line + b"\n" for line in lines[:wanted]]
    if sum(map(len, kept)) != len(data):
        with open(path, "r+b") as handle:
            handle.truncate(sum(map(len, kept)))
    return kept


def _restore_journals(layout: RunLayout, state: RunState, checkpoint: Checkpoint | None) -> None:
    """The journal lines the checkpoint counts; later lines (a killed step's) are cut."""
    counts = checkpoint.journals if checkpoint is not None else {}
    for name in JOURNALS:
        path = layout.journal(name)
        kept = _journal(path, counts.get(name, 0), f"the {name} journal")
        if name != "facts":
            continue
        try:
            entries = [json.loads(line) for line in kept]
            state.facts.restore([e for e in entries if isinstance(e["id"], str)])
        except (ValueError, KeyError, TypeError) as exc:
            raise StorageError(
                f"{path}: not a facts journal this version wrote ({exc}); the run cannot be resumed"
            ) from None


def _restore_history(
    layout: RunLayout, recorder: RunRecorder, state: RunState, checkpoint: Checkpoint | None
) -> None:
    """The history items the checkpoint counts, from the journal; later lines are cut."""
    wanted = checkpoint.history_items if checkpoint is not None else 0
    kept = _journal(layout.history, wanted, "the history journal")
    hasher = sha256()
    hasher.update(b"".join(kept))
    if checkpoint is not None and hasher.hexdigest() != checkpoint.history_sha256:
        raise StorageError(
            f"{layout.history}: its first {wanted} item(s) do not match the checkpoint's "
            "digest (was the file edited?); the run cannot be resumed"
        )
    texts = [line.decode("utf-8") for line in kept]
    recorder.continue_history(texts)
    for text in texts:
        item = json.loads(text)
        state.history.add(
            HistoryItem(
                item["flow_key"],
                item["step_id"],
                item["agent_key"],
                int(item["iteration"]),
                item["output"],
            )
        )


def _finished(events: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The last event when it is a ``run_completed`` that a resume cannot go on from."""
    last = events[-1] if events else None
    if last is None or last.get("kind") != "run_completed":
        return None
    payload = last.get("payload")
    if isinstance(payload, dict) and payload.get("status") != "stopped":
        return last
    return None


def _remove_temporary_files(root: Path) -> list[str]:
    removed = []
    for path in root.rglob("*.tmp"):
        with contextlib.suppress(OSError):
            path.unlink()
            removed.append(f"removed {path.relative_to(root)}")
    return removed


def _cut_torn_tail(path: Path, tail_bytes: int) -> None:
    size = path.stat().st_size
    with open(path, "r+b") as handle:
        handle.truncate(size - tail_bytes)

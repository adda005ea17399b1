"""Reopening a run to resume it: after a pause, a stop, a block or a crash.

Whatever instant a run was killed at, its directory is brought back to a state the run
loop can go on from: leftover temporary files are removed, a torn last line of the event
log is cut off, the events a checkpoint carries that the log lacks are appended, and a
step a crash left open is found (the run closes it with ``step_error{error:
"interrupted"}``), with any receipt or transcript it wrote moved to ``<flow>/interrupted/``
so the step's re-run files keep their places. Counters come from ``checkpoint.json``,
history from the first items of ``history.jsonl`` (checked against the checkpoint's
digest); a run killed before its first checkpoint starts again from its first step.

See docs/run-control.md#pause-stop-and-resume.

The step execution a crash left open: found, closed, its files moved aside
(docs/run-control.md#pause-stop-and-resume).

A resumed run closes it with ``step_error{error: "interrupted"}``; a receipt or transcript
it wrote goes to ``<flow>/interrupted/``, so the files of the step's re-run keep their
places.

Whether a checkpoint agrees with the run's flows and event log, before a resume trusts it.

A checkpoint is a file on disk: a flow edited since (a step renamed or removed), a damaged
or forged file must not steer a resume into a step that is not there, past the run's last
flow, back to its start, or into events the log never had. Each disagreement is refused in
one line, before anything is written, so the run stays resumable once the cause is mended.
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
from swarm_runtime.documents.base import Invalid
from swarm_runtime.documents.events import KINDS, read_event, stands_of
from swarm_runtime.documents.payload import Stands
from swarm_runtime.documents.route_events import FlowInjected, NodeInjected, StackPop, StackPush
from swarm_runtime.documents.run_events import RunResumed, StepError
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
from swarm_runtime.orchestrator.context import HistoryBudget
from swarm_runtime.orchestrator.plan import FlowSlice, RunSpec
from swarm_runtime.orchestrator.recorder import RunRecorder
from swarm_runtime.orchestrator.routing import on_stack, push_refusal
from swarm_runtime.orchestrator.state import DEFAULT_MAX_DEPTH, RunState
from swarm_runtime.record import Record, field
from swarm_runtime.storage.layout import JOURNALS, RunLayout
from swarm_runtime.storage.queued import clear_handed_over
from swarm_runtime.storage.status import wait_for_pauser
from swarm_runtime.storage.store import read_event_log
from swarm_runtime.timeutil import Clock, ms_between, parse_ts


def find_open_step(events: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The ``step_start`` that has no end in the log, if any."""
    open_step: dict[str, Any] | None = None
    for event in events:
        stands = stands_of(event.get("kind"))
        if stands is Stands.STEP_START:
            open_step = event
        elif stands in (Stands.STEP_END, Stands.STEP_ERROR):
            open_step = None
    return open_step


def interrupted_error(start: dict[str, Any], last: dict[str, Any]) -> dict[str, Any]:
    """The ``step_error`` that closes a step a crash cut short.

    Its duration runs to the last event the dead process wrote.
    """
    try:
        duration = ms_between(parse_ts(str(start["ts"])), parse_ts(str(last["ts"])))
    except (KeyError, ValueError):
        duration = 0
    payload = start.get("payload") or {}
    engine = payload.get("engine") if isinstance(payload, dict) else None
    return {
        "payload": StepError(
            status="failed",
            duration_ms=duration,
            error="interrupted",
            engine=engine if isinstance(engine, str) else "unknown",
        ),
        "flow_key": start.get("flow_key"),
        "step_id": start.get("step_id"),
        "agent_key": start.get("agent_key"),
    }


def move_orphans(layout: RunLayout, start: dict[str, Any], state: RunState) -> list[str]:
    """Move files the interrupted execution wrote out of the way of its re-run."""
    flow_key, step_id = str(start.get("flow_key")), str(start.get("step_id"))
    base = layout.flow_base(flow_key)
    name = f"{step_id}-{start.get('agent_key')}"
    done = state.executions.get((flow_key, step_id), 0)
    moved: list[str] = []
    candidates = [base / "receipts" / f"{name}.json"]
    candidates += sorted((base / "llm").glob(f"{name}-*.jsonl")) if (base / "llm").is_dir() else []
    for path in candidates:
        stem = path.name[: -len(path.suffix)]
        earlier = path.with_name(f"{stem}~{done}{path.suffix}")
        if "~" in stem or not path.exists() or (done and not earlier.exists()):
            continue  # the latest file is an earlier execution's, not the interrupted one's
        target = base / "interrupted" / f"{stem}~seq{start.get('seq')}{path.suffix}"
        target.parent.mkdir(exist_ok=True)
        os.replace(path, target)
        moved.append(f"moved {path.relative_to(layout.root)} to {target.relative_to(layout.root)}")
    return moved


PENDING = frozenset(
    {
        Stands.STEP_END,
        Stands.STEP_ERROR,
        Stands.ROUTING,
        Stands.ROUTE,
        Stands.AFTER_ROUTE,
        Stands.PAUSE,
    }
)
"""Where the events a checkpoint may carry for the log stand: those of the step it was
written after (its end, its routing, what the move brought), or a waiting step's pause."""


def check_checkpoint(
    checkpoint: Checkpoint,
    plan: Sequence[FlowSlice],
    events: Sequence[dict[str, Any]],
    *,
    where: str,
    injectable: Sequence[FlowSpec] = (),
    max_depth: int = DEFAULT_MAX_DEPTH,
) -> None:
    """Raise RunControlError (one line, naming ``where``) when the checkpoint disagrees.

    ``injectable``: the flows the run's steps may enter besides its plan
    (docs/flows.md#detours-and-utility-flows); ``max_depth``: the run's deepest stack. Each frame
    must be a push the run could make.
    """
    problem = _problem(checkpoint, plan, events, (injectable, max_depth))
    if problem is not None:
        raise RunControlError(
            f"{where}: {problem}; nothing was changed - mend the cause (restore the flow, "
            "or pass --flows-dir) and resume again"
        )


def _problem(
    checkpoint: Checkpoint,
    plan: Sequence[FlowSlice],
    events: Sequence[dict[str, Any]],
    entered: tuple[Sequence[FlowSpec], int],
) -> str | None:
    injectable, max_depth = entered
    flows = {flow.key: {step.id for step in flow.steps} for flow in injectable}
    flows.update({part.flow.key: {step.id for step in part.flow.steps} for part in plan})
    position = checkpoint.position
    if position.flow_index > len(plan):
        return f"position.flow_index is {position.flow_index}, but the run has {len(plan)} flow(s)"
    running = None
    if position.flow_index < len(plan):
        running = plan[position.flow_index].flow.key
    stack_problem = _stack_problem(checkpoint, running, flows, max_depth)
    stack_problem = stack_problem or _logged_stack_problem(checkpoint, events)
    if stack_problem is not None:
        return stack_problem
    if checkpoint.stack:
        running = checkpoint.stack[-1].injected_flow
    if position.step_id is not None:
        if running is None:
            return f"position names step {position.step_id!r} after the run's last flow"
        if position.step_id not in flows[running]:
            return _unknown_step("position.step_id", running, position.step_id, flows)
    for (flow_key, loop), _ in checkpoint.loops.items():
        problem = _known("loops", flow_key, loop.partition(":")[0], flows)
        if problem:
            return problem
    for flow_key in checkpoint.flow_totals:
        if flow_key not in flows:
            return f"flow_totals names flow {flow_key!r}, which this run does not run"
    blocked = checkpoint.blocked
    if blocked is not None and (
        running is None or (blocked.flow_key, blocked.step_id) != (running, position.step_id)
    ):
        return "the blocked step is not where the checkpoint's position says the run stands"
    return _pending_problem(checkpoint, flows, events)


def _pending_problem(
    checkpoint: Checkpoint, flows: dict[str, set[str]], events: Sequence[dict[str, Any]]
) -> str | None:
    """The pending events: the step's own, numbered on from the log, agreeing with it."""
    pending = checkpoint.pending_events
    first = checkpoint.next_seq - len(pending)
    logged = int(events[-1].get("seq", 0)) if events else 0
    if first - 1 > logged:
        return (
            f"next_seq {checkpoint.next_seq} counts events up to seq {first - 1}, but the "
            f"event log ends at seq {logged}"
        )
    by_seq = {event.get("seq"): event for event in events}
    for offset, event in enumerate(pending):
        seq = event.get("seq")
        name = f"pending_events[{offset}]"
        if stands_of(event.get("kind")) not in PENDING:
            allowed = sorted(kind for kind, payload in KINDS.items() if payload.stands in PENDING)
            return (
                f"{name} is a {event.get('kind')!r} event; a checkpoint carries only "
                f"{', '.join(allowed)}"
            )
        if seq != first + offset or isinstance(seq, bool):
            return f"{name} has seq {seq!r}, not {first + offset}"
        try:
            read_event(event)
        except Invalid as exc:
            return f"{name} is not the {event.get('kind')} event its kind declares: {exc}"
        if event.get("run_id") != checkpoint.run_id:
            return f"{name} is of run {event.get('run_id')!r}"
        step = (event.get("flow_key"), event.get("step_id"))
        problem = _known(name, str(step[0]), str(step[1]), flows)
        if problem:
            return problem
        logged_event = by_seq.get(seq)
        if logged_event is not None and (
            logged_event.get("kind"),
            logged_event.get("flow_key"),
            logged_event.get("step_id"),
        ) != (event.get("kind"), *step):
            return f"{name} (seq {seq}) differs from the event log's event of that seq"
    return None


def _stack_problem(
    checkpoint: Checkpoint, running: str | None, flows: dict[str, set[str]], max_depth: int
) -> str | None:
    """Whether each frame of the stack is a push the run could have made.

    Its bottom is paused in the position's flow, its flows and steps are known, and the
    kernel's own rule (:func:`~swarm_runtime.orchestrator.state.push_refusal`) allows it.
    """
    below = running
    frames = checkpoint.stack
    for number, frame in enumerate(frames):
        name = f"stack[{number}]"
        if frame.paused_flow != below:
            return f"{name} pauses flow {frame.paused_flow!r}, but the flow below it is {below!r}"
        problem = _known(f"{name}.paused_step", frame.paused_flow, frame.paused_step, flows)
        if frame.resume_to is not None:
            problem = problem or _known(
                f"{name}.resume_to", frame.paused_flow, frame.resume_to, flows
            )
        if frame.injected_flow not in flows:
            problem = problem or f"{name} enters flow {frame.injected_flow!r}, which no step may"
        elif frame.only_step is not None:
            problem = problem or _known(
                f"{name}.only_step", frame.injected_flow, frame.only_step, flows
            )
        refusal = push_refusal(
            on_stack(frames[:number], frame.paused_flow), frame.injected_flow, max_depth
        )
        if refusal is not None:
            problem = problem or (
                f"{name} enters flow {frame.injected_flow!r} from "
                f"{frame.paused_flow}/{frame.paused_step}, which no run may: {refusal}"
            )
        if problem:
            return problem
        below = frame.injected_flow
    return None


def _logged_stack(checkpoint: Checkpoint, events: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The frames the log's stack events leave at the checkpoint, each with what they say.

    The log's events before the checkpoint's own, then those it carries: ``stack_push``
    pushes a frame, ``flow_injected`` says its way back, ``node_injected`` its one step,
    ``stack_pop`` pops it.
    """
    first = checkpoint.next_seq - len(checkpoint.pending_events)
    before = [e for e in events if isinstance(e.get("seq"), int) and e["seq"] < first]
    frames: list[dict[str, Any]] = []
    for event in [*before, *checkpoint.pending_events]:
        kind, payload = event.get("kind"), event.get("payload")
        if not isinstance(payload, dict):
            continue
        if kind == StackPush.kind:
            frames.append({name: payload.get(name) for name in PUSHED} | {"only_step": None})
        elif kind == FlowInjected.kind and frames:
            back = payload.get("return_address")
            frames[-1]["resume_to"] = back.partition("/")[2] if isinstance(back, str) else None
        elif kind == NodeInjected.kind and frames:
            frames[-1]["only_step"] = str(payload.get("step")).partition("/")[2]
        elif kind == StackPop.kind and frames:
            frames.pop()
    return frames


PUSHED = ("paused_flow", "paused_step", "injected_flow")
"""What a ``stack_push`` event says of its frame."""


def _logged_stack_problem(checkpoint: Checkpoint, events: Sequence[dict[str, Any]]) -> str | None:
    """Whether the stack is the one the run pushed, as its event log says.

    See docs/flows.md#detours-and-utility-flows.
    """
    logged = _logged_stack(checkpoint, events)
    if len(logged) != len(checkpoint.stack):
        return (
            f"stack has {len(checkpoint.stack)} frame(s), but the event log's stack_push and "
            f"stack_pop events leave {len(logged)}"
        )
    for number, (frame, said) in enumerate(zip(checkpoint.stack, logged, strict=True)):
        for name, value in said.items():
            held = getattr(frame, name)
            if held != value:
                event = StackPush.kind if name in PUSHED else FlowInjected.kind
                event = NodeInjected.kind if name == "only_step" else event
                return (
                    f"stack[{number}].{name} is {held!r}, but the event log's {event} "
                    f"says {value!r}"
                )
    return None


def _known(field: str, flow_key: str, step_id: str, flows: dict[str, set[str]]) -> str | None:
    if flow_key not in flows:
        return f"{field} names flow {flow_key!r}, which this run does not run"
    if step_id not in flows[flow_key]:
        return _unknown_step(field, flow_key, step_id, flows)
    return None


def _unknown_step(field: str, flow_key: str, step_id: str, flows: dict[str, set[str]]) -> str:
    steps = ", ".join(sorted(flows[flow_key]))
    return f"{field} names step {step_id!r} of flow {flow_key!r}, which it does not have ({steps})"


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
    enter and ``max_depth`` how deep (docs/flows.md#detours-and-utility-flows): the checkpoint must
    agree with them. A run that has just paused is waited for (``sleep``) while the process that
    paused it lets go, said to ``notice``.
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

"""``checkpoint.json``: the state of a run after its last completed step.

A checkpoint is written atomically after every completed step, *before* that step's
``step_end`` and ``route_decision`` are appended: it carries those two events, so a kill
between the checkpoint and the log leaves nothing a resume cannot finish. It holds where
the run goes next, the open loops' counters, the totals (of the run and of each flow),
the next ``seq``, and the number and digest of the history items (``history.jsonl``) the
prompts of the next steps are built from. A step that answered ``blocked`` is saved the
same way, with the step still open.

Its size does not grow with the flow or the run: how often each step has run is not in
it, but counted from the ``step_start`` events the log holds up to the checkpoint
(:func:`executions_in`), once, when the run is resumed.

See docs/contract/checkpoint.md.

Run control: pause, stop and abort requests, and the engine call they may interrupt.

Requests come from another thread (the run service), from another process (``swarm
pause|stop`` write ``control.json`` into the run dir, read at every step boundary) or from
Ctrl-C. Pause and stop take effect at the next step boundary; an abort (a second Ctrl-C,
SIGTERM, ``cancel``) also cuts short the engine call or retry wait under way. Nothing is
interrupted mid-write, so the run's files stay whole.
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from swarm_runtime.errors import RunControlError
from swarm_runtime.inputs.files import read_run_text
from swarm_runtime.inputs.json_input import load_json
from swarm_runtime.orchestrator.state import MAX_FRAMES, Frame, LoopCounters, RunState, Totals
from swarm_runtime.record import Record, field
from swarm_runtime.storage.layout import JOURNALS
from swarm_runtime.versions import SCHEMA_VERSION

MAX_CHECKPOINT_BYTES = 64 << 20
"""The largest ``checkpoint.json`` a resume reads: one step's events and the counters of a
run make a few KiB."""


class Position(Record):
    """Where a run goes on: a flow of its plan, and a step of it (None: the slice's first)."""

    flow_index: int
    step_id: str | None = None


class BlockedStep(Record):
    """A step that answered ``blocked``: open, waiting for external input."""

    flow_key: str
    step_id: str
    agent_key: str
    iteration: int
    reason: str
    engine: str
    started_at: str

    def as_document(self) -> dict[str, Any]:
        """The ``blocked`` object of a checkpoint."""
        return {
            "flow_key": self.flow_key,
            "step_id": self.step_id,
            "agent_key": self.agent_key,
            "iteration": self.iteration,
            "reason": self.reason,
            "engine": self.engine,
            "started_at": self.started_at,
        }


def totals_document(totals: Totals) -> dict[str, Any]:
    """Every counter of a :class:`Totals` (its ``__slots__``)."""
    return {
        "completion_tokens": totals.completion_tokens,
        "cost_usd": totals.cost_usd,
        "duration_ms": totals.duration_ms,
        "executed": totals.executed,
        "loops": totals.loops,
        "prompt_tokens": totals.prompt_tokens,
        "steps_completed": totals.steps_completed,
        "steps_without_cost": totals.steps_without_cost,
    }


def restore_totals(doc: Any) -> Totals:
    """A :class:`Totals` from :func:`totals_document`'s output."""
    totals = Totals()
    for name in Totals.__slots__:
        value = doc[name]
        if name == "cost_usd":
            value = float(value)
        elif not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"totals.{name} must be an integer")
        setattr(totals, name, value)
    return totals


class Checkpoint(Record):
    """A parsed ``checkpoint.json``."""

    run_id: str
    next_seq: int
    position: Position
    loops: dict[tuple[str, str], int]
    totals: dict[str, Any]
    flow_totals: dict[str, dict[str, Any]]
    history_items: int
    history_sha256: str
    pending_events: list[dict[str, Any]] = field(default_factory=list)
    blocked: BlockedStep | None = None
    journals: dict[str, int] = field(default_factory=dict)
    """The lines of each journal (``facts.jsonl``, ``graph_proposals.jsonl``) the run had
    written."""
    stack: list[Frame] = field(default_factory=list)
    """The flows paused by injections (docs/flows.md#detours-and-utility-flows); the position is in
    the top one's flow."""

    @classmethod
    def capture(
        cls,
        state: RunState,
        run_id: str,
        position: Position,
        *,
        history: tuple[int, str],
        pending: Sequence[Any],
        blocked: BlockedStep | None = None,
    ) -> dict[str, Any]:
        """The document of a checkpoint of ``state``, with ``pending`` events to append."""
        return {
            "schema_version": SCHEMA_VERSION,
            "run_id": run_id,
            "next_seq": state.seq + 1 + len(pending),
            "position": {"flow_index": position.flow_index, "step_id": position.step_id},
            "loops": state.loops.as_dict(),
            "totals": totals_document(state.totals),
            "flow_totals": {key: totals_document(t) for key, t in state.flow_totals.items()},
            "history": {"items": history[0], "sha256": history[1]},
            "pending_events": list(pending),
            "blocked": blocked.as_document() if blocked is not None else None,
            # Only once a journal has a line: a run without any keeps its old checkpoint.
            **({"journals": dict(state.journals)} if state.journals else {}),
            # Only inside an injected flow, for the same reason.
            **({"stack": [frame.as_document() for frame in state.stack]} if state.stack else {}),
        }

    @classmethod
    def parse(cls, doc: Any, where: str) -> Checkpoint:
        """Read a checkpoint document, strictly typed; RunControlError naming ``where``.

        Counts are whole numbers >= 0 (never text, fractions or booleans); nothing is
        coerced, so a damaged file is refused rather than read as something else.
        """
        try:
            if not isinstance(doc, dict):
                raise ValueError(f"is a {type(doc).__name__}, not an object")
            position = _mapping(doc, "position")
            blocked = doc.get("blocked")
            history = _mapping(doc, "history")
            pending = doc.get("pending_events") or []
            if not isinstance(pending, list) or not all(isinstance(e, dict) for e in pending):
                raise ValueError("pending_events must be a list of events")
            return cls(
                run_id=_text(doc, "run_id"),
                next_seq=_count(doc, "next_seq", minimum=1),
                position=Position(
                    _count(position, "flow_index", "position."),
                    _text(position, "step_id", "position.", optional=True),
                ),
                loops=_counts(doc, "loops"),
                totals=_totals(doc["totals"], "totals"),
                flow_totals={
                    str(k): _totals(v, f"flow_totals[{k!r}]")
                    for k, v in _mapping(doc, "flow_totals").items()
                },
                history_items=_count(history, "items", "history."),
                history_sha256=_text(history, "sha256", "history."),
                pending_events=[dict(e) for e in pending],
                blocked=_blocked(blocked) if blocked else None,
                journals=_journal_counts(doc.get("journals") or {}),
                stack=_stack(doc.get("stack") or []),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            reason = f"{exc.args[0]} is missing" if isinstance(exc, KeyError) else str(exc)
            raise RunControlError(
                f"{where}: not a checkpoint this version can trust ({reason}); the run was "
                "left as it is"
            ) from None

    @property
    def base_seq(self) -> int:
        """The last event the checkpoint counts, its pending events aside."""
        return self.next_seq - 1 - len(self.pending_events)

    def restore(self, state: RunState, events: Sequence[dict[str, Any]]) -> None:
        """Put the counters of this checkpoint into a fresh ``state`` (history aside).

        ``events``: the log, for how often each step ran up to the checkpoint.
        """
        state.seq = self.base_seq
        state.executions = executions_in(events, self.base_seq)
        state.loops = LoopCounters(self.loops)
        state.totals = restore_totals(self.totals)
        state.flow_totals = {key: restore_totals(doc) for key, doc in self.flow_totals.items()}
        state.journals = dict(self.journals)
        state.stack = list(self.stack)


def executions_in(events: Sequence[dict[str, Any]], until_seq: int) -> dict[tuple[str, str], int]:
    """How often each ``(flow, step)`` ran in the events up to ``until_seq``.

    One more than the iteration of its last ``step_start``: an execution a crash or a stop
    cut short is run again under its own iteration (a resume goes on from the checkpoint
    before it), so the two ``step_start`` of that one execution count once, as they did
    in the process that ran it again.
    """
    counts: dict[tuple[str, str], int] = {}
    starts: dict[tuple[str, str], int] = {}
    for event in events:
        seq = event.get("seq")
        if not isinstance(seq, int) or seq > until_seq:
            break
        if event.get("kind") == "step_start":
            key = (str(event.get("flow_key")), str(event.get("step_id")))
            starts[key] = started = starts.get(key, 0) + 1
            payload = event.get("payload")
            iteration = payload.get("iteration") if isinstance(payload, dict) else None
            if not isinstance(iteration, int) or isinstance(iteration, bool):
                iteration = started - 1  # a log that does not say: each start is one
            counts[key] = max(counts.get(key, 0), min(iteration + 1, started))
    return counts


def _stack(doc: Any) -> list[Frame]:
    if not isinstance(doc, list):
        raise ValueError("stack must be a list of frames")
    if len(doc) > MAX_FRAMES:  # before reading them: no run's stack is that deep
        raise ValueError(f"stack has {len(doc)} frames; a run's stack holds at most {MAX_FRAMES}")
    return [Frame.parse(item) for item in doc]


def _journal_counts(doc: Any) -> dict[str, int]:
    if not isinstance(doc, dict) or not set(doc) <= set(JOURNALS):
        raise ValueError(f"journals must map {', '.join(JOURNALS)} to line counts")
    return {name: _count(doc, name, "journals.") for name in doc}


def _mapping(doc: dict[str, Any], name: str) -> dict[str, Any]:
    value = doc[name]
    if not isinstance(value, dict):
        raise ValueError(f"{name} must be an object")
    return value


def _count(doc: dict[str, Any], name: str, prefix: str = "", *, minimum: int = 0) -> int:
    value = doc[name]
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"{prefix}{name} is {value!r}; it must be a whole number >= {minimum}")
    return value


def _text(doc: dict[str, Any], name: str, prefix: str = "", *, optional: bool = False) -> Any:
    value = doc[name]
    if not (isinstance(value, str) or (optional and value is None)):
        raise ValueError(f"{prefix}{name} is {value!r}; it must be text")
    return value


def _counts(doc: dict[str, Any], name: str) -> dict[tuple[str, str], int]:
    counts = _mapping(doc, name)
    return {_pair(key): _count(counts, key, f"{name}.") for key in counts}


def _totals(value: Any, name: str) -> dict[str, Any]:
    """A totals object: its counters whole numbers >= 0, its cost a finite number >= 0."""
    if not isinstance(value, dict):
        raise ValueError(f"{name} must be an object")
    for counter in Totals.__slots__:
        if counter == "cost_usd":
            cost = value[counter]
            if (
                not isinstance(cost, int | float)
                or isinstance(cost, bool)
                or not (math.isfinite(cost) and cost >= 0)
            ):
                raise ValueError(f"{name}.cost_usd is {cost!r}; it must be a number >= 0")
        else:
            _count(value, counter, f"{name}.")
    return dict(value)


def _blocked(doc: Any) -> BlockedStep:
    if not isinstance(doc, dict):
        raise ValueError("blocked must be an object")
    texts = ("flow_key", "step_id", "agent_key", "reason", "engine", "started_at")
    return BlockedStep(
        **{name: _text(doc, name, "blocked.") for name in texts},
        iteration=_count(doc, "iteration", "blocked."),
    )


def _pair(key: str) -> tuple[str, str]:
    flow, sep, rest = str(key).partition("/")
    if not sep or not flow or not rest:
        raise ValueError(f"key {key!r} is not FLOW/STEP")
    return flow, rest


CONTROL_REQUESTS = ("pause", "stop")


class Interrupted(Exception):
    """Carries a pause, stop or abort out of a step, so the run can be closed cleanly."""

    def __init__(self, *, aborted: bool, pause: bool = False, reason: str = "") -> None:
        what = "aborted" if aborted else "paused" if pause else "stopped"
        super().__init__(f"{what} at a step boundary" if not aborted else what)
        self.aborted = aborted
        self.pause = pause and not aborted
        self.reason = reason or ("interrupted" if aborted else f"{what} on request")


class Blocked(Exception):
    """A step answered ``blocked``: the run pauses with the step open.

    See docs/contract/steps.md#result-codes.
    """

    def __init__(self, step: BlockedStep) -> None:
        super().__init__(f"{step.flow_key}/{step.step_id} is blocked: {step.reason}")
        self.step = step


def write_request(control_file: Path, request: str, reason: str) -> None:
    """Ask the process running a run to pause or stop (``swarm pause|stop``)."""
    from swarm_runtime.storage.store import write_json_atomic

    document = {"request": request, "reason": reason, "pid": os.getpid()}
    write_json_atomic(control_file, document)


def ask_running_process(run_dir: Path, request: str, reason: str) -> str:
    """Ask the process that runs ``run_dir`` to pause or stop; who it is (``pid … on …``).

    RunControlError when no live process runs it (``swarm resume`` is then the way on).
    """
    from swarm_runtime.errors import RunControlError
    from swarm_runtime.storage.lock import read_holder
    from swarm_runtime.storage.status import observed_status

    status = observed_status(run_dir)
    holder = read_holder(run_dir)
    if status not in ("pending", "running") or holder is None:
        hint = (
            f"; 'swarm resume {run_dir.name}' continues it"
            if status in ("paused", "stopped", "crashed")
            else ""
        )
        raise RunControlError(
            f"run {run_dir.name} is {status}, not running: there is nothing to {request}" + hint
        )
    write_request(run_dir / "control.json", request, reason)
    return holder.describe()


class RunControl:
    """The request flags of one run, and whether an engine call is open."""

    __slots__ = (
        "abort_requested",
        "control_file",
        "in_engine",
        "pause_requested",
        "reason",
        "stop_requested",
    )

    def __init__(self) -> None:
        self.control_file: Path | None = None
        """``control.json`` of the run, read at each boundary (None: no other process)."""
        self.reset()

    def reset(self) -> None:
        """Clear the flags before a new run."""
        self.stop_requested = self.abort_requested = self.in_engine = False
        self.pause_requested = False
        self.reason = ""

    def interrupt(self, reason: str = "interrupted (Ctrl-C)") -> bool:
        """Ctrl-C: ask the run to stop; a second call asks it to abort.

        Returns True when an engine call (or retry wait) is under way and should be
        aborted, so a signal handler raises KeyboardInterrupt there.
        """
        if self.stop_requested:
            self.abort_requested = True
        self.stop_requested = True
        self.reason = self.reason or reason
        return self.abort_requested and self.in_engine

    def request(self, request: str, reason: str = "") -> None:
        """``pause``, ``stop`` or ``cancel`` (stop and abort the step under way)."""
        if request == "pause":
            self.pause_requested = True
        elif request == "stop":
            self.stop_requested = True
        elif request == "cancel":
            self.stop_requested = self.abort_requested = True
        else:
            raise ValueError(f"unknown run control request {request!r}")
        self.reason = reason or f"{request} requested"

    def check_boundary(self) -> None:
        """At a step boundary: raise :class:`Interrupted` when a stop or pause was asked."""
        if self.control_file is not None:
            self._read_control_file(self.control_file)
        if self.stop_requested:
            raise Interrupted(aborted=self.abort_requested, reason=self.reason)
        if self.pause_requested:
            raise Interrupted(aborted=False, pause=True, reason=self.reason)

    def _read_control_file(self, path: Path) -> None:
        if not os.access(path, os.F_OK):  # the usual case: one syscall, no exception
            return
        try:
            raw = read_run_text(path, 1 << 16)
        except (OSError, ValueError):
            return  # gone already, or unreadable for now: the next boundary tries again
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)  # a request is acted on once
        try:
            document = load_json(raw)
            request = str(document["request"])
            reason = str(document.get("reason") or "")
        except (ValueError, KeyError, TypeError):
            return  # half-written by hand or garbage: ignore it, it is gone
        if request in CONTROL_REQUESTS:
            self.request(request, reason or f"{request} requested by another process")

    def engine_call(self) -> _EngineCall:
        """Around an engine call or a retry wait: the part an abort may cut short."""
        return _EngineCall(self)


class _EngineCall:
    """The context of :meth:`RunControl.engine_call` (a class: it is entered every step)."""

    __slots__ = ("control",)

    def __init__(self, control: RunControl) -> None:
        self.control = control

    def __enter__(self) -> None:
        control = self.control
        control.in_engine = True
        if control.abort_requested:  # asked while the step was being prepared
            control.in_engine = False
            raise Interrupted(aborted=True, reason=control.reason)

    def __exit__(self, kind: type[BaseException] | None, error: object, trace: object) -> None:
        control = self.control
        control.in_engine = False
        if kind is not None and issubclass(kind, KeyboardInterrupt):
            raise Interrupted(aborted=True, reason=control.reason) from None

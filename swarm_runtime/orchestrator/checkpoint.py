"""``checkpoint.json``: the state of a run after its last completed step (SPEC §8.2).

A checkpoint is written atomically after every completed step, *before* that step's
``step_end`` and ``route_decision`` are appended: it carries those two events, so a kill
between the checkpoint and the log leaves nothing a resume cannot finish. It holds where
the run goes next, the loop counters, per-step execution counts, the totals, the next
``seq``, and the number and digest of the history items (``history.jsonl``) the prompts
of the next steps are built from. A step that answered ``blocked`` is saved the same
way, with the step still open.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Sequence
from typing import Any

from swarm_runtime.errors import RunControlError
from swarm_runtime.orchestrator.loops import LoopCounters
from swarm_runtime.orchestrator.state import RunState, Totals
from swarm_runtime.record import Record, field
from swarm_runtime.storage.store import dump_json, json_escape, quoted
from swarm_runtime.versions import SCHEMA_VERSION

__all__ = [
    "BlockedStep",
    "Checkpoint",
    "CheckpointText",
    "Position",
    "restore_totals",
    "totals_document",
    "totals_json",
]


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


def totals_json(totals: Totals) -> str:
    """``dump_json(totals_document(totals))`` without its newline, laid out directly."""
    cost = totals.cost_usd
    if type(cost) is not float or cost - cost != 0:  # not a finite float: the encoder's
        return dump_json(totals_document(totals))[:-1]
    return (
        f'{{"completion_tokens": {totals.completion_tokens:d}, "cost_usd": {cost!r}, '
        f'"duration_ms": {totals.duration_ms:d}, "executed": {totals.executed:d}, '
        f'"loops": {totals.loops:d}, "prompt_tokens": {totals.prompt_tokens:d}, '
        f'"steps_completed": {totals.steps_completed:d}, '
        f'"steps_without_cost": {totals.steps_without_cost:d}}}'
    )


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
    executions: dict[tuple[str, str], int]
    loops: dict[tuple[str, str], int]
    totals: dict[str, Any]
    flow_totals: dict[str, dict[str, Any]]
    history_items: int
    history_sha256: str
    pending_events: list[dict[str, Any]] = field(default_factory=list)
    blocked: BlockedStep | None = None

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
            "executions": {f"{f}/{s}": n for (f, s), n in state.executions.items()},
            "loops": state.loops.as_dict(),
            "totals": totals_document(state.totals),
            "flow_totals": {key: totals_document(t) for key, t in state.flow_totals.items()},
            "history": {"items": history[0], "sha256": history[1]},
            "pending_events": list(pending),
            "blocked": blocked.as_document() if blocked is not None else None,
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
                executions=_counts(doc, "executions"),
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
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            reason = f"{exc.args[0]} is missing" if isinstance(exc, KeyError) else str(exc)
            raise RunControlError(
                f"{where}: not a checkpoint this version can trust ({reason}); the run was "
                "left as it is"
            ) from None

    def restore(self, state: RunState) -> None:
        """Put the counters of this checkpoint into a fresh ``state`` (history aside)."""
        state.seq = self.next_seq - 1 - len(self.pending_events)
        state.executions = dict(self.executions)
        state.loops = LoopCounters(self.loops)
        state.totals = restore_totals(self.totals)
        state.flow_totals = {key: restore_totals(doc) for key, doc in self.flow_totals.items()}


class CheckpointText:
    """The text of a run's checkpoints, made from the parts that changed since the last one.

    A checkpoint is written after every step and its execution counts and flow totals
    grow with the run, while a step changes one count and one flow's totals: re-encoding
    them all is most of what writing a checkpoint costs. :meth:`text` gives exactly the
    bytes ``dump_json(Checkpoint.capture(...))`` would, re-encoding only what changed, and
    takes the pending events as the lines already encoded for ``events.jsonl``.
    """

    def __init__(self) -> None:
        self._counts: dict[tuple[str, str], int] = {}
        self._names: list[str] = []
        """The ``flow/step`` keys, sorted as the encoder sorts them."""
        self._ordered: list[str] = []
        """``"flow/step": n`` of each key, in the same order."""
        self._source: dict[tuple[str, str], int] | None = None
        self._executions = "{}"
        self._flow_pieces: list[str] = []
        self._flow_place: dict[str, int] = {}
        self._flows_source: dict[str, Totals] | None = None
        self._schema = dump_json(SCHEMA_VERSION)[:-1]

    def _executions_text(self, state: RunState) -> str:
        counts, executions = self._counts, state.executions
        changed, state.executions_changed = state.executions_changed, []
        new = sum(key not in counts for key in changed)
        if executions is not self._source or len(counts) + new != len(executions):
            self._source = executions  # counts set whole (a resume): start over
            counts.clear()
            self._names, self._ordered = [], []
            changed = sorted(executions)
        if not changed:
            return self._executions
        names, ordered = self._names, self._ordered
        for key in changed:
            n = counts[key] = executions[key]
            name = f"{key[0]}/{key[1]}"
            piece = f"{quoted(name)}: {n}"
            at = bisect_left(names, name)  # the encoder's order: sorted keys
            if at < len(names) and names[at] == name:
                ordered[at] = piece
            else:
                names.insert(at, name)
                ordered.insert(at, piece)
        self._executions = "{" + ", ".join(ordered) + "}"
        return self._executions

    def _flows_text(self, flow_totals: dict[str, Totals], current: str | None) -> str:
        # Between two checkpoints only the running flow's totals change.
        if flow_totals is not self._flows_source or len(self._flow_place) != len(flow_totals):
            self._flows_source = flow_totals
            names = sorted(flow_totals)
            self._flow_place = {name: index for index, name in enumerate(names)}
            self._flow_pieces = [self._flow_piece(name, flow_totals[name]) for name in names]
        elif current is not None and current in self._flow_place:
            piece = self._flow_piece(current, flow_totals[current])
            self._flow_pieces[self._flow_place[current]] = piece
        return "{" + ", ".join(self._flow_pieces) + "}"

    @staticmethod
    def _flow_piece(key: str, totals: Totals) -> str:
        return f"{quoted(key)}: {totals_json(totals)}"

    def text(
        self,
        state: RunState,
        run_id: str,
        position: Position,
        *,
        history: tuple[int, str],
        pending: Sequence[str],
        flow: str | None,
    ) -> str:
        """``checkpoint.json`` after a step of ``flow``; ``pending``: its encoded events.

        The same bytes as ``dump_json(Checkpoint.capture(...))``, given that between two
        calls only ``flow``'s totals changed (as between two steps of a run).
        """
        loops = state.loops.as_dict()
        step_id = position.step_id
        events = ", ".join([line[:-1] for line in pending])  # each ends in its newline
        return (
            f'{{"blocked": null, "executions": {self._executions_text(state)}, '
            f'"flow_totals": {self._flows_text(state.flow_totals, flow)}, '
            f'"history": {{"items": {int(history[0])}, "sha256": "{json_escape(history[1])}"}}, '
            f'"loops": {dump_json(loops)[:-1] if loops else "{}"}, '
            f'"next_seq": {state.seq + 1 + len(pending)}, "pending_events": [{events}], '
            f'"position": {{"flow_index": {int(position.flow_index)}, "step_id": '
            f"{'null' if step_id is None else quoted(step_id)}}}, "
            f'"run_id": {quoted(run_id)}, "schema_version": {self._schema}, '
            f'"totals": {totals_json(state.totals)}}}\n'
        )


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

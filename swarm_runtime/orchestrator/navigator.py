"""Navigator routing (SPEC §4.5): the move after a step whose candidate set has a choice.

The kernel builds the candidate set: the move the step's routing makes (for ``kind:
navigator``, its candidates whose ``when`` holds), the step's detours whose ``when`` holds,
and the utility flows whose ``injection_trigger`` holds (SPEC §4.6). The navigator may only
choose from it. One candidate, or none, needs no choice; in ``deterministic`` mode the first
candidate in declared order (edges, then detours, then utility flows) is taken with no
call; in ``llm`` mode the navigator is asked (one call through the run's engine, see
:mod:`~swarm_runtime.orchestrator.navigator_call`). A choice outside the set, a failed call
or a reply with no choice falls back to the golden path: the run goes on.

What the navigator decided is written as ``routing_decision`` (when it was asked) and
``routing_offroad`` (whenever the move is not the golden path), between the step's
``step_end`` and its ``route_decision``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from swarm_runtime.documents.payload import Payload
from swarm_runtime.documents.route_events import (
    Candidate,
    Condition,
    GraphExtended,
    RoutingDecision,
    RoutingOffroad,
)
from swarm_runtime.documents.run_events import RoutingSource
from swarm_runtime.flow.conditions import Activation, Evaluation, evaluate
from swarm_runtime.flow.spec import Detour, FlowSpec, StepSpec
from swarm_runtime.orchestrator.bounded import cut
from swarm_runtime.orchestrator.routing import Decision
from swarm_runtime.record import Record, replace

MoveKind = Literal["edge", "detour", "utility"]


class Move(Record):
    """A candidate move after a step: an edge of its flow, a detour or a utility flow."""

    id: str
    kind: MoveKind
    to: str | None
    """An edge's step (None: the flow ends); for a detour, ``FLOW/STEP`` it enters at."""
    when: str | None = None
    detour: Detour | None = None
    """Where a detour or utility flow goes and how it returns."""


class Injections(Record):
    """What a run may inject (SPEC §4.6): its utility flows, each flow's first step, the depth."""

    utilities: tuple[FlowSpec, ...] = ()
    """The utility flows with an ``injection_trigger``."""
    entry: Callable[[str], str] | None = None
    """The first step of a flow, by key (needed only when a step has detours)."""
    max_depth: int = 4

    def first_step(self, flow_key: str) -> str:
        """Where a detour into ``flow_key`` starts."""
        if self.entry is None:
            raise LookupError(f"no flow '{flow_key}' to detour into")
        return self.entry(flow_key)


class NavigatorAnswer(Record):
    """What the navigator replied: its choice, or why there is none."""

    choice: str | None = None
    rationale: str | None = None
    confidence: float | None = None
    error: str | None = None
    """Why the call gave no usable answer (the call failed, or no choice in the reply)."""
    proposal: tuple[str, str | None] | None = None
    """An edge outside the set the navigator proposed (step, rationale): never followed."""


Ask = Callable[[tuple[Move, ...], str | None], NavigatorAnswer]
"""Asks the navigator to choose among the moves, given the golden path (one engine call)."""


class NavigatorRoute(Record):
    """The move, and the events that say how it was chosen, in the order they are written."""

    decision: Decision
    events: tuple[Payload, ...] = ()
    detour: Move | None = None
    """The detour or utility flow taken, if one was."""
    golden: Decision | None = None
    """The golden path's decision (where a detour returns to, what a refused one takes)."""


def candidate_moves(
    flow: FlowSpec,
    step: StepSpec,
    own: Decision | None,
    *,
    utilities: Sequence[FlowSpec],
    entry: Callable[[str], str],
) -> tuple[Move, ...]:
    """Every move after ``step`` in declared order; ``own`` is a non-navigator step's route.

    ``entry`` gives the first step of a flow (where a detour into it starts).
    """
    if step.routing.kind == "navigator":
        moves = [Move(c.id, "edge", c.to, c.when) for c in step.routing.candidates]
    else:
        assert own is not None
        moves = [Move("next", "edge", own.to_step)]
    for detour in step.detours:
        target = f"{detour.flow}/{detour.step or entry(detour.flow)}"
        moves.append(Move(detour.id, "detour", target, detour.when, detour))
    if not flow.utility:
        for utility in utilities:
            returns = "resume" if utility.on_complete == "return" else "halt"
            detour = Detour(id=utility.key, flow=utility.key, returns=returns)
            to = f"{utility.key}/{utility.steps[0].id}"
            moves.append(Move(utility.key, "utility", to, utility.injection_trigger, detour))
    return tuple(moves)


def route(
    flow: FlowSpec,
    step: StepSpec,
    values: Mapping[str, Any],
    *,
    moves: tuple[Move, ...],
    own: Decision | None,
    mode: str,
    ask: Ask,
) -> NavigatorRoute:
    """Choose the move after ``step`` from the ``moves`` whose conditions hold over ``values``."""
    ready = Activation(values)  # each name made ready once for all the conditions
    evaluated = [(m, evaluate(m.when, ready)) for m in moves if m.when]
    failed = {id(m) for m, e in evaluated if not e.value}
    held = tuple(m for m in moves if id(m) not in failed)
    conditions = [e for _, e in evaluated]
    golden = own or _decision(step.routing.default, "navigator_default", "deterministic")
    if not held:
        return NavigatorRoute(
            decision=_decision(golden.to_step, "navigator_no_candidate", "deterministic")
        )
    if len(held) == 1 or mode == "deterministic":
        chosen = held[0]
        why = "navigator_single" if len(held) == 1 else "navigator_deterministic"
        decision = _taken(chosen, golden, own, f"{why}:{chosen.id}", "deterministic")
        offroad = _offroad(flow, step, chosen, golden, conditions, NavigatorAnswer())
        return NavigatorRoute(decision, offroad, _detour_of(chosen), golden)
    answer = ask(held, golden.to_step)
    picked = next((m for m in held if m.id == answer.choice), None)
    if picked is None:
        why = answer.error or f"invalid_choice:{cut(str(answer.choice), 200)}"
        decision = replace(golden, reason=f"navigator_fallback:{why}", source="navigator")
    else:
        decision = _taken(picked, golden, own, f"navigator:{picked.id}", "navigator")
    events: list[Payload] = [
        RoutingDecision(
            step=step.id,
            candidates=[Candidate(id=m.id, kind=m.kind, to=m.to) for m in held],
            chosen=picked.id if picked is not None else None,
            routing_source="navigator",
            rationale=answer.rationale,
            confidence=answer.confidence,
            evaluated_conditions=[Condition(expr=e.expr, value=e.value) for e in conditions],
            tie_breaker_used=False,
        )
    ]
    if answer.proposal is not None:  # recorded, never followed
        proposed, why_proposed = answer.proposal
        events.append(GraphExtended(from_step=step.id, to_step=proposed, rationale=why_proposed))
    if picked is not None:
        events.extend(_offroad(flow, step, picked, golden, conditions, answer))
    return NavigatorRoute(decision, tuple(events), _detour_of(picked), golden)


def _detour_of(move: Move | None) -> Move | None:
    return move if move is not None and move.kind != "edge" else None


def _taken(
    move: Move, golden: Decision, own: Decision | None, reason: str, source: RoutingSource
) -> Decision:
    """The decision that takes ``move``."""
    if move.kind != "edge":
        return _decision(move.to, f"detour:{move.id}", "navigator:detour")
    if own is not None:  # a non-navigator step's own route: as its routing made it
        return own if source == "deterministic" else replace(own, source=source)
    return _decision(move.to, reason, source)


def _decision(to_step: str | None, reason: str, source: RoutingSource) -> Decision:
    return Decision(to_step, "terminate" if to_step is None else "advance", reason, source)


def resume_step(move: Move, golden: Decision) -> str | None:
    """The step of the paused flow a detour comes back to; None when that flow ends."""
    assert move.detour is not None
    if move.detour.returns == "halt":
        return None
    return move.detour.bounce_to or golden.to_step


def _offroad(
    flow: FlowSpec,
    step: StepSpec,
    chosen: Move,
    golden: Decision,
    conditions: Sequence[Evaluation],
    answer: NavigatorAnswer,
) -> tuple[RoutingOffroad, ...]:
    """``routing_offroad`` when ``chosen`` is not the golden path, else nothing."""
    if chosen.kind == "edge" and chosen.to == golden.to_step:
        return ()
    back: str | None = None
    if chosen.kind != "edge":
        route_type: Literal["DETOUR", "INJECTION", "SKIP", "LOOP"] = (
            "DETOUR" if chosen.kind == "detour" else "INJECTION"
        )
        target = resume_step(chosen, golden)
        back = f"{flow.key}/{target}" if target is not None else None
    elif chosen.to is not None and flow.index_of(chosen.to) <= flow.index_of(step.id):
        route_type = "LOOP"
    else:
        route_type = "SKIP"
    payload = RoutingOffroad(
        golden_path_step=golden.to_step,
        actual_step=chosen.to or "",
        route_type=route_type,
        rationale=answer.rationale,
        return_address=back,
        confidence=answer.confidence,
        evaluated_conditions=[e.expr for e in conditions if e.value],
        tie_breaker_used=False,
    )
    return (payload,)

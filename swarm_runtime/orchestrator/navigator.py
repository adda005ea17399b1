"""Navigator routing (SPEC §4.5): the move after a ``kind: navigator`` step.

The kernel builds the candidate set (the step's candidates whose ``when`` holds) and the
navigator may only choose from it. One candidate, or none, needs no choice; in
``deterministic`` mode the first candidate in declared order is taken with no call; in
``llm`` mode the navigator is asked (one call through the run's engine, see
:mod:`~swarm_runtime.orchestrator.navigator_call`). A choice outside the set, a failed call
or a reply with no choice falls back to the golden path (``default``): the run goes on.

What the navigator decided is written as ``routing_decision`` (when it was asked) and
``routing_offroad`` (whenever the move is not the golden path), between the step's
``step_end`` and its ``route_decision``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from swarm_runtime.flow.conditions import Evaluation, evaluate
from swarm_runtime.flow.spec import Candidate, FlowSpec, StepSpec
from swarm_runtime.orchestrator import payloads
from swarm_runtime.orchestrator.routing import Decision
from swarm_runtime.record import Record


class NavigatorAnswer(Record):
    """What the navigator replied: its choice, or why there is none."""

    choice: str | None = None
    rationale: str | None = None
    confidence: float | None = None
    error: str | None = None
    """Why the call gave no usable answer (the call failed, or no choice in the reply)."""
    proposal: tuple[str, str | None] | None = None
    """An edge outside the set the navigator proposed (step, rationale): never followed."""


Ask = Callable[[tuple[Candidate, ...]], NavigatorAnswer]
"""Asks the navigator to choose among the candidates (one engine call)."""


class NavigatorRoute(Record):
    """The move, and the events that say how it was chosen, in the order they are written."""

    decision: Decision
    events: tuple[tuple[str, Mapping[str, object]], ...] = ()


def route(
    flow: FlowSpec, step: StepSpec, values: Mapping[str, Any], *, mode: str, ask: Ask
) -> NavigatorRoute:
    """Choose the move after ``step`` from the candidates whose conditions hold over ``values``."""
    routing = step.routing
    evaluated = {c.id: evaluate(c.when, values) for c in routing.candidates if c.when}
    held = tuple(c for c in routing.candidates if c.id not in evaluated or evaluated[c.id].value)
    golden = routing.default
    if not held:
        return NavigatorRoute(decision=_decision(golden, "navigator_no_candidate", "deterministic"))
    if len(held) == 1 or mode == "deterministic":
        chosen = held[0]
        why = "navigator_single" if len(held) == 1 else "navigator_deterministic"
        decision = _decision(chosen.to, f"{why}:{chosen.id}", "deterministic")
        offroad = _offroad(flow, step, chosen, evaluated, NavigatorAnswer())
        return NavigatorRoute(decision=decision, events=offroad)
    answer = ask(held)
    picked = next((c for c in held if c.id == answer.choice), None)
    if picked is None:
        why = answer.error or f"invalid_choice:{answer.choice}"
        decision = _decision(golden, f"navigator_fallback:{why}", "navigator")
    else:
        decision = _decision(picked.to, f"navigator:{picked.id}", "navigator")
    events: list[tuple[str, Mapping[str, object]]] = [
        (
            "routing_decision",
            payloads.routing_decision(
                step.id,
                [{"id": c.id, "kind": "edge", "to": c.to} for c in held],
                picked.id if picked is not None else None,
                rationale=answer.rationale,
                confidence=answer.confidence,
                evaluated=[{"expr": e.expr, "value": e.value} for e in evaluated.values()],
            ),
        )
    ]
    if answer.proposal is not None:  # recorded, never followed
        events.append(("graph_extended", payloads.graph_extended(step.id, *answer.proposal)))
    if picked is not None:
        events.extend(_offroad(flow, step, picked, evaluated, answer))
    return NavigatorRoute(decision=decision, events=tuple(events))


def _decision(to_step: str | None, reason: str, source: str) -> Decision:
    return Decision(to_step, "advance", reason, source, {"decision": "advance", "reason": reason})


def _offroad(
    flow: FlowSpec,
    step: StepSpec,
    chosen: Candidate,
    evaluated: Mapping[str, Evaluation],
    answer: NavigatorAnswer,
) -> tuple[tuple[str, Mapping[str, object]], ...]:
    """``routing_offroad`` when ``chosen`` is not the golden path, else nothing."""
    golden = step.routing.default
    if chosen.to == golden:
        return ()
    backwards = flow.index_of(chosen.to) <= flow.index_of(step.id)
    payload = payloads.routing_offroad(
        golden,
        chosen.to,
        "LOOP" if backwards else "SKIP",
        rationale=answer.rationale,
        confidence=answer.confidence,
        held=[e.expr for e in evaluated.values() if e.value],
    )
    return (("routing_offroad", payload),)

"""Where a run goes after a step: its routing's move, or a choice among candidates.

A step whose candidate set may hold more than its routing's own move (a navigator step, a
step with detours, any step of a non-utility flow when utility flows may be injected) has
its move chosen by :func:`route`; a detour too deep, or into a flow already on the stack,
is refused here. :meth:`StepRouter.next` then moves the flow stack
(docs/flows.md#detours-and-utility-flows).

See docs/flows.md#routing.

Choosing the next step (docs/flows.md#routing): linear, microloop and branch, from handoff then
receipt.

A navigator step's move is the navigator's (below); its router here is its golden path,
the step it takes when no candidate holds.

Navigator routing (docs/flows.md#navigator): the move after a step whose candidate set has a choice.

The kernel builds the candidate set: the move the step's routing makes (for ``kind:
navigator``, its candidates whose ``when`` holds), the step's detours whose ``when`` holds,
and the utility flows whose ``injection_trigger`` holds (docs/flows.md#detours-and-utility-flows).
The navigator may only choose from it. One candidate, or none, needs no choice; in ``deterministic``
mode the first candidate in declared order (edges, then detours, then utility flows) is taken with
no call; in ``llm`` mode the navigator is asked (one call through the run's engine, see
:class:`NavigatorCall`). A choice outside the set, a failed call or a reply with no choice
falls back to the golden path: the run goes on.

What the navigator decided is written as ``routing_decision`` (when it was asked) and
``routing_offroad`` (whenever the move is not the golden path), between the step's
``step_end`` and its ``route_decision``.

The navigator's call (docs/flows.md#navigator): one engine call that chooses a move after a step.

It goes through the engine that ran the step, in the run's mode, as a call of its own
(``StepContext.call == "navigator"``, agent ``navigator``): a recorded or replayed call has
its own cassette (``<step>-navigator-<iteration>.yaml``), its transcript is
``<flow>/llm/<step>-navigator-<iteration>.jsonl``, and its tokens and cost count in the run's
totals and its flow's (it is not a step execution). It is made once, never retried: a
failure falls back to the golden path.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from swarm_runtime.documents.payload import Payload
from swarm_runtime.documents.receipt import ReceiptRouting
from swarm_runtime.documents.route_events import (
    Candidate,
    Condition,
    FlowInjected,
    GraphExtended,
    NodeInjected,
    RoutingDecision,
    RoutingOffroad,
    StackOverflowPrevented,
    StackPop,
    StackPush,
)
from swarm_runtime.documents.run_events import RouteMove, RoutingSource
from swarm_runtime.engines.base import Prompt, StepContext, StepEngine, StepOutcome
from swarm_runtime.errors import RoutingError
from swarm_runtime.flow.conditions import Activation, Evaluation, evaluate
from swarm_runtime.flow.kinds import NO_FURTHER_HELP_FIELD
from swarm_runtime.flow.spec import Detour, FlowSpec, StepSpec
from swarm_runtime.orchestrator.checkpoint import RunControl
from swarm_runtime.orchestrator.recorder import RunRecorder, call_lines
from swarm_runtime.orchestrator.state import Frame, Next, RunState, cut
from swarm_runtime.record import Record, replace
from swarm_runtime.timeutil import Clock, format_ts

Events = list[Payload]


def on_stack(stack: Sequence[Frame], running: str) -> list[str]:
    """The flows on the stack, bottom first: the one the run started in, then each injected."""
    if not stack:
        return [running]
    return [stack[0].paused_flow, *(frame.injected_flow for frame in stack)]


def push_refusal(flows: Sequence[str], injected: str, max_depth: int) -> str | None:
    """Why ``injected`` may not be pushed onto a stack of ``flows`` (bottom first), or None.

    The rule of every push (docs/flows.md#detours-and-utility-flows), the kernel's and a resumed
    checkpoint's alike: a flow is on the stack at most once, and the stack holds at most
    ``max_depth`` flows.
    """
    if injected in flows:
        return f"flow {injected!r} is already on the stack ({' > '.join(flows)})"
    if len(flows) + 1 > max_depth:
        return f"the stack would hold {len(flows) + 1} flows, past max_depth {max_depth}"
    return None


def refused(stack: Sequence[Frame], at: tuple[str, str], injected: str, max_depth: int) -> Events:
    """``stack_overflow_prevented`` when entering ``injected`` from ``at`` may not be done."""
    if push_refusal(on_stack(stack, at[0]), injected, max_depth) is None:
        return []
    return [
        StackOverflowPrevented(
            paused_flow=at[0], paused_step=at[1], injected_flow=injected, max_depth=max_depth
        )
    ]


def enter(
    stack: list[Frame],
    at: tuple[str, str],
    target: tuple[str, str],
    *,
    only_step: bool,
    resume_to: str | None,
    trigger: str,
) -> tuple[Events, Next]:
    """Push a frame: leave ``at`` (flow, step) for ``target`` (flow, its first step)."""
    flow, step = at
    stack.append(Frame(flow, step, target[0], resume_to, target[1] if only_step else None))
    back = f"{flow}/{resume_to}" if resume_to is not None else None
    injected: Payload = (
        NodeInjected(step=f"{target[0]}/{target[1]}", into_flow=flow, after_step=step)
        if only_step
        else FlowInjected(flow=target[0], by_step=step, trigger=trigger, return_address=back)
    )
    push = StackPush(
        paused_flow=flow, paused_step=step, injected_flow=target[0], current_depth=len(stack) + 1
    )
    return [push, injected], Next(*target)


def leave(stack: list[Frame]) -> tuple[Events, Next]:
    """Pop frames until a paused flow goes on (or the run's own flow ends)."""
    events: Events = []
    while True:
        frame = stack.pop()
        events.append(
            StackPop(
                resumed_flow=frame.paused_flow,
                resumed_step=frame.resume_to,
                injected_flow=frame.injected_flow,
                current_depth=len(stack) + 1,
            )
        )
        if frame.resume_to is not None or not stack:
            return events, Next(frame.paused_flow, frame.resume_to)


class Decision(Record):
    """Where to go after a step, and why."""

    to_step: str | None
    decision: RouteMove
    """loop | advance | terminate."""
    reason: str
    source: RoutingSource
    """fast_path | deterministic | navigator."""
    loop: tuple[int, int] | None = None
    """A microloop's (0-based iteration, max_iterations), which its receipt records."""

    @property
    def receipt_routing(self) -> ReceiptRouting:
        """The receipt's ``routing`` (docs/flows.md#decisions)."""
        if self.loop is None:
            return ReceiptRouting(decision=self.decision, reason=self.reason)
        iteration, most = self.loop
        return ReceiptRouting(
            decision=self.decision,
            reason=self.reason,
            loop_iteration=iteration,
            max_iterations=most,
        )


def _lookup(name: str, handoff: Mapping[str, Any] | None, receipt: Mapping[str, Any]) -> Any:
    if handoff and name in handoff:
        return handoff[name]
    return receipt.get(name)


def _following(flow: FlowSpec, step: StepSpec) -> str | None:
    if step.routing.next:
        return step.routing.next
    position = flow.index_of(step.id) + 1
    return flow.steps[position].id if position < len(flow.steps) else None


def _onward(
    target: str | None, reason: str, source: RoutingSource, loop: tuple[int, int] | None
) -> Decision:
    return Decision(target, "terminate" if target is None else "advance", reason, source, loop)


def _microloop(
    flow: FlowSpec, step: StepSpec, value_of: Callable[[str], Any], executions: int
) -> Decision:
    routing = step.routing
    extra = (executions - 1, routing.max_iterations)
    value = value_of(routing.loop_condition_field or "status")
    success = {item.lower() for item in routing.loop_success_values}
    onward = _following(flow, step)
    if value is not None and str(value).lower() in success:
        return _onward(onward, f"success_value:{value}", "deterministic", extra)
    if str(value_of(NO_FURTHER_HELP_FIELD) or "").lower() == "no":
        return _onward(onward, "no_further_help", "deterministic", extra)
    if executions >= routing.max_iterations:
        return _onward(onward, "max_iterations", "deterministic", extra)
    return Decision(
        routing.loop_target, "loop", f"loop_iteration:{executions}", "deterministic", extra
    )


def _branch(
    flow: FlowSpec, step: StepSpec, value_of: Callable[[str], Any], _executions: int
) -> Decision:
    routing = step.routing
    value = value_of(routing.branch_field)
    table = {key.lower(): target for key, target in routing.branches}
    if value is not None and str(value).lower() in table:
        target = table[str(value).lower()]
        return _onward(target, f"branch:{routing.branch_field}={value}", "deterministic", None)
    if routing.default:
        return _onward(
            routing.default, f"branch_default:{routing.branch_field}={value}", "deterministic", None
        )
    raise RoutingError(
        f"branch step '{step.id}' of flow '{flow.key}': {routing.branch_field}={value!r} "
        f"matches no branch (allowed: {', '.join(k for k, _ in routing.branches)}) and "
        "there is no default; declare one of them in the handoff or add 'default:'"
    )


def _linear(
    flow: FlowSpec, step: StepSpec, _value_of: Callable[[str], Any], _executions: int
) -> Decision:
    onward = _following(flow, step)
    if onward is None:
        return _onward(None, "end_of_flow", "fast_path", None)
    reason = f"next:{onward}" if step.routing.next else "linear"
    return _onward(onward, reason, "fast_path", None)


def _navigator(
    flow: FlowSpec, step: StepSpec, _value_of: Callable[[str], Any], _executions: int
) -> Decision:
    return _onward(step.routing.default, "navigator_default", "deterministic", None)


ROUTERS: dict[str, Callable[[FlowSpec, StepSpec, Callable[[str], Any], int], Decision]] = {
    "linear": _linear,
    "microloop": _microloop,
    "branch": _branch,
    "navigator": _navigator,
}
"""The run-time decision of each routing kind (the rest of a kind is in ``flow.kinds``)."""


def decide(
    flow: FlowSpec,
    step: StepSpec,
    *,
    handoff: Mapping[str, Any] | None,
    receipt: Mapping[str, Any],
    executions: int,
    linear_only: bool = False,
) -> Decision:
    """Route after ``step``; ``executions`` counts this loop's runs of it, this one included.

    ``linear_only`` routes a skipped step as linear whatever its kind. Raises RoutingError
    when a branch matches nothing and has no default.
    """
    router = ROUTERS["linear" if linear_only else step.routing.kind]
    return router(flow, step, lambda name: _lookup(name, handoff, receipt), executions)


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
    """What a run may inject: its utility flows, each flow's first step, the depth.

    See docs/flows.md#detours-and-utility-flows.
    """

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


OUTPUT_CHARS = 4_000
"""How much of the step's reply the navigator reads (its end, where the handoff is)."""

SYSTEM = (
    "You are the navigator of an agent flow. After a step, you choose the flow's next move "
    "from the candidates you are given, and only from them: you never invent a move. End "
    "your reply with a handoff block naming your choice by its id, one sentence of "
    "rationale, and your confidence from 0 to 1:\n\n"
    "```handoff\nchoice: <candidate id>\nrationale: <why>\nconfidence: <0..1>\n```"
)


def _move_text(move: Move) -> str:
    if move.kind == "edge":
        what = f"go to step '{move.to}'" if move.to is not None else "end the flow"
    elif move.kind == "detour":
        what = f"detour into '{move.to}', then come back"
    else:
        what = f"run the utility flow '{move.to}', then come back"
    return f"- {move.id}: {what}" + (f" (its condition held: {move.when})" if move.when else "")


def navigator_prompt(
    flow: FlowSpec,
    step: StepSpec,
    outcome: StepOutcome,
    candidates: tuple[Move, ...],
    golden: str | None,
) -> Prompt:
    """What the navigator is asked after ``step``: its reply, its handoff, the moves."""
    reply = outcome.text[-OUTPUT_CHARS:]
    handoff = json.dumps(outcome.handoff or {}, sort_keys=True, ensure_ascii=False)
    moves = "\n".join(_move_text(move) for move in candidates)
    path = f"step '{golden}'" if golden is not None else "the end of the flow"
    user = (
        f"# Flow: {flow.title} ({flow.key})\n\n"
        f"## The step that just ran: {step.id}\n{step.role}\n\n"
        f"## Its reply (the last {OUTPUT_CHARS} characters at most)\n{reply}\n\n"
        f"## Its handoff\n{handoff}\n\n"
        f"## Candidates\n{moves}\n\n"
        f"The golden path, when no candidate fits better, is {path}."
    )
    return Prompt(system=SYSTEM, user=user)


class NavigatorCall:
    """Asks the navigator through the step's engine and records the call."""

    def __init__(
        self, recorder: RunRecorder, state: RunState, control: RunControl, clock: Clock
    ) -> None:
        self.recorder = recorder
        self.state = state
        self.control = control
        self.clock = clock

    def ask(
        self,
        engine: StepEngine,
        ctx: StepContext,
        flow: FlowSpec,
        step: StepSpec,
        outcome: StepOutcome,
        candidates: tuple[Move, ...],
        golden: str | None,
    ) -> NavigatorAnswer:
        """One call; what it answered, or why it gave no usable answer."""
        prompt = navigator_prompt(flow, step, outcome, candidates, golden)
        asked = replace(
            ctx,
            call="navigator",
            step_agents=("navigator",),
            prompt=prompt,
            handoff_fields={"choice": tuple(c.id for c in candidates)},
            routing_kind="navigator",
            attempt=1,
            tools=(),
            extra={},
        )
        started = format_ts(self.clock())
        with self.control.engine_call():
            try:
                reply = engine.run_step(asked)
            except Exception as exc:  # an engine bug falls back like a failed call
                return NavigatorAnswer(error=f"call_failed:{type(exc).__name__}")
        for totals in (self.state.totals, self.state.flow(flow.key)):
            totals.add_call(reply.tokens, reply.cost_usd)
        self._record(flow, step, ctx.iteration, prompt, reply, started)
        if reply.result.status != "succeeded" or reply.result_code != "ok":
            return NavigatorAnswer(error=f"call_failed:{reply.result_code}")
        return answer_of(reply.handoff)

    def _record(
        self,
        flow: FlowSpec,
        step: StepSpec,
        iteration: int,
        prompt: Prompt,
        reply: StepOutcome,
        started: str,
    ) -> None:
        lines = call_lines(prompt, reply.transcript, started, format_ts(self.clock()))
        path = self.recorder.layout.navigator_transcript(flow.key, step.id, iteration)
        self.recorder.write_transcript(path, lines)


def answer_of(handoff: dict[str, Any] | None) -> NavigatorAnswer:
    """The navigator's handoff as an answer: a choice, and maybe a rationale and confidence."""
    values = handoff or {}
    choice = values.get("choice")
    rationale = values.get("rationale")
    raw = values.get("confidence")
    confidence: float | None = None
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        raw = None
    if raw is not None and math.isfinite(raw) and 0 <= raw <= 1:
        confidence = float(raw)
    return NavigatorAnswer(
        proposal=_proposal(values.get("proposed_edge")),
        choice=str(choice) if isinstance(choice, str | int) and str(choice) else None,
        rationale=cut(rationale) if isinstance(rationale, str) else None,
        confidence=confidence,
        error=None if isinstance(choice, str | int) and str(choice) else "no_choice",
    )


def _proposal(raw: Any) -> tuple[str, str | None] | None:
    """``proposed_edge``: a step id, or ``{to, rationale}``; anything else is no proposal."""
    if isinstance(raw, dict):
        to_step, why = raw.get("to"), raw.get("rationale")
        if isinstance(to_step, str) and to_step.strip():
            return cut(to_step.strip(), 200), cut(why) if isinstance(why, str) else None
        return None
    if isinstance(raw, str) and raw.strip():
        return cut(raw.strip(), 200), None
    return None


class StepRouter:
    """Routes the steps of one run and keeps its flow stack."""

    def __init__(
        self,
        state: RunState,
        mode: str,
        injections: Injections,
        navigator: NavigatorCall,
        spec: Mapping[str, Any],
    ) -> None:
        self.state = state
        self.mode = mode
        """``llm`` or ``deterministic`` (docs/flows.md#navigator)."""
        self.injections = injections
        self.navigator = navigator
        self.spec = spec

    def route(
        self,
        flow: FlowSpec,
        step: StepSpec,
        end: str | None,
        outcome: StepOutcome,
        receipt: Mapping[str, Any],
        asked: tuple[StepEngine, StepContext],
        facts: Callable[[], Any],
    ) -> NavigatorRoute:
        """The move after ``step``.

        ``receipt`` is its receipt as routing reads it; ``facts`` makes the facts its
        conditions read (only when one does).
        """
        skipped = outcome.result_code == "skipped"
        own = None
        if step.routing.kind != "navigator" or skipped:
            own = decide(
                flow,
                step,
                handoff=outcome.handoff,
                receipt=receipt,
                executions=self.state.loops.executions(flow.key, step),
                linear_only=skipped,
            )
        moved = NavigatorRoute(decision=own) if own is not None else None
        if not skipped and (own is None or end != step.id) and self._may_choose(flow, step):
            moved = self._navigate(flow, step, outcome, (receipt, facts), asked, own)
        assert moved is not None
        decision = moved.decision
        if end == step.id and decision.decision != "loop":
            reason = f"end_step:{step.id}"
            ended = Decision(None, "terminate", reason, decision.source, decision.loop)
            return replace(moved, decision=ended)
        return moved

    def _may_choose(self, flow: FlowSpec, step: StepSpec) -> bool:
        """Whether the step's candidate set may hold more than its routing's move."""
        injections = self.injections
        return bool(
            step.routing.kind == "navigator"
            or step.detours
            or (injections.utilities and not flow.utility)
        )

    def _navigate(
        self,
        flow: FlowSpec,
        step: StepSpec,
        outcome: StepOutcome,
        read: tuple[Mapping[str, Any], Callable[[], Any]],
        asked: tuple[StepEngine, StepContext],
        own: Decision | None,
    ) -> NavigatorRoute:
        """The move chosen from the candidate set, over what the step left.

        ``read``: the step's receipt and the facts, as conditions read them.

        See docs/flows.md#navigator.
        """
        receipt, facts = read
        values = {
            "handoff": outcome.handoff or {},
            "receipt": lambda: dict(receipt),  # made only when a condition reads it
            "params": self.spec.get("params") or {},
            "loop_state": self.state.loops.of_flow(flow.key),
            "facts": facts,  # made only when a condition reads them
        }
        engine, ctx = asked
        injections = self.injections
        moves = candidate_moves(
            flow, step, own, utilities=injections.utilities, entry=injections.first_step
        )
        moved = route(
            flow,
            step,
            values,
            moves=moves,
            own=own,
            mode=self.mode,
            ask=lambda held, golden: self.navigator.ask(
                engine, ctx, flow, step, outcome, held, golden
            ),
        )
        if moved.detour is None or moved.detour.detour is None:
            return moved
        overflow = refused(
            self.state.stack, (flow.key, step.id), moved.detour.detour.flow, injections.max_depth
        )
        if not overflow:
            return moved
        assert moved.golden is not None
        kept = [event for event in moved.events if not isinstance(event, RoutingOffroad)]
        golden = replace(moved.golden, reason=f"stack_overflow_prevented:{moved.detour.id}")
        return NavigatorRoute(golden, (*kept, *overflow), None, moved.golden)

    def next(self, flow: FlowSpec, step: StepSpec, moved: NavigatorRoute) -> tuple[Events, Next]:
        """Where the run goes after the step, and the stack events of getting there."""
        frames, detour = self.state.stack, moved.detour
        if detour is not None and detour.detour is not None and detour.to is not None:
            target_flow, _, target_step = detour.to.partition("/")
            return enter(
                frames,
                (flow.key, step.id),
                (target_flow, target_step),
                only_step=detour.detour.step is not None,
                resume_to=resume_step(detour, moved.golden or moved.decision),
                trigger=detour.when or f"detour:{detour.id}",
            )
        if moved.decision.to_step is None and frames:
            return leave(frames)
        return [], Next(flow.key, moved.decision.to_step)

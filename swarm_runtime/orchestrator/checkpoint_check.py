"""Whether a checkpoint agrees with the run's flows and event log, before a resume trusts it.

A checkpoint is a file on disk: a flow edited since (a step renamed or removed), a damaged
or forged file must not steer a resume into a step that is not there, past the run's last
flow, back to its start, or into events the log never had. Each disagreement is refused in
one line, before anything is written, so the run stays resumable once the cause is mended.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from swarm_runtime.documents.base import Invalid
from swarm_runtime.documents.events import KINDS, read_event, stands_of
from swarm_runtime.documents.payload import Stands
from swarm_runtime.documents.route_events import FlowInjected, NodeInjected, StackPop, StackPush
from swarm_runtime.errors import RunControlError
from swarm_runtime.flow.spec import FlowSpec
from swarm_runtime.orchestrator.checkpoint import Checkpoint
from swarm_runtime.orchestrator.plan import FlowSlice
from swarm_runtime.orchestrator.stack import DEFAULT_MAX_DEPTH, on_stack, push_refusal

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

    ``injectable``: the flows the run's steps may enter besides its plan (SPEC §4.6);
    ``max_depth``: the run's deepest stack. Each frame must be a push the run could make.
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
    kernel's own rule (:func:`~swarm_runtime.orchestrator.stack.push_refusal`) allows it.
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
    """Whether the stack is the one the run pushed, as its event log says (SPEC §4.6)."""
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

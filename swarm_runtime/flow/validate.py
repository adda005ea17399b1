"""Rules that look across the steps of a flow: duplicates, targets, reachability.

See docs/flows.md#loading-and-validation.
"""

from __future__ import annotations

from swarm_runtime.errors import FlowDefinitionError
from swarm_runtime.flow.kinds import KINDS
from swarm_runtime.flow.spec import FlowSpec, StepSpec


def successors(flow: FlowSpec, step: StepSpec) -> list[tuple[str, str]]:
    """Every (field, step id) edge out of ``step``: the fall-through, and detours' bounces."""
    position = flow.index_of(step.id)
    following = flow.steps[position + 1].id if position + 1 < len(flow.steps) else None
    edges = [(e.field, e.to) for e in KINDS[step.routing.kind].edges(step.routing, following)]
    bounces = [(f"detours.{d.id}.return", to) for d in step.detours if (to := d.bounce_to)]
    return edges + bounces


def validate_flow(flow: FlowSpec, *, reachability: bool = True) -> list[FlowDefinitionError]:
    """Check the cross-step rules; return every error found.

    ``reachability``: check that every step can be reached (not for a flow that read with
    errors: a step whose routing could not be read may be the one that reaches others).
    """
    file = str(flow.path)
    errors: list[FlowDefinitionError] = []
    seen: dict[str, StepSpec] = {}
    for step in flow.steps:
        if step.id in seen:
            errors.append(
                FlowDefinitionError(
                    f"duplicate step id '{step.id}' (first defined at line "
                    f"{seen[step.id].line}); step ids must be unique in a flow",
                    file=file,
                    line=step.line_of("id"),
                    step_id=step.id,
                    field="id",
                )
            )
        else:
            seen[step.id] = step
    for step in flow.steps:
        for field_name, target in successors(flow, step):
            if field_name and not flow.has_step(target):
                errors.append(
                    FlowDefinitionError(
                        f"'{target}' names no step of flow '{flow.key}' "
                        f"(steps: {', '.join(s.id for s in flow.steps)})",
                        file=file,
                        line=step.line_of(field_name),
                        step_id=step.id,
                        field=field_name,
                    )
                )
    errors.extend(_detour_errors(flow))
    if errors or not reachability:
        return errors
    reached = {flow.steps[0].id}
    stack = [flow.steps[0]]
    while stack:
        for _, target in successors(flow, stack.pop()):
            if target not in reached:
                reached.add(target)
                stack.append(flow.step(target))
    for step in flow.steps:
        if step.id not in reached:
            errors.append(
                FlowDefinitionError(
                    f"step '{step.id}' is unreachable from the first step "
                    f"'{flow.steps[0].id}'; route to it or remove it",
                    file=file,
                    line=step.line,
                    step_id=step.id,
                )
            )
    return errors


def _detour_errors(flow: FlowSpec) -> list[FlowDefinitionError]:
    """What is wrong with the detours of a flow's steps.

    A detour goes to another flow (its own steps are edges, not detours), and its id is not
    the id of another move of its step (the navigator names the move it takes by its id).
    """
    errors = [
        FlowDefinitionError(
            f"detour '{detour.id}' goes to flow '{flow.key}', the flow it leaves; a detour "
            "runs another flow (route to a step of this flow with routing instead)",
            file=str(flow.path),
            line=step.line,
            step_id=step.id,
            field=f"detours.{detour.id}",
        )
        for step in flow.steps
        for detour in step.detours
        if detour.flow == flow.key
    ]
    for step in flow.steps:
        navigator = step.routing.kind == "navigator"
        own = {c.id for c in step.routing.candidates} if navigator else {"next"}
        errors.extend(
            FlowDefinitionError(
                f"detour id '{detour.id}' is also the id of "
                f"{'a candidate of this step' if navigator else 'the move its routing makes'}"
                ": the navigator chooses a move by its id; give the detour an id of its own",
                file=str(flow.path),
                line=step.line_of(f"detours.{detour.id}.{'step' if detour.step else 'flow'}"),
                step_id=step.id,
                field=f"detours.{detour.id}",
            )
            for detour in step.detours
            if detour.id in own
        )
    return errors

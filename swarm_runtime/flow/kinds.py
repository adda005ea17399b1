"""Routing kinds (SPEC §4.1): one table entry carries everything about a kind.

An entry says which routing keys the kind takes and which it needs, where a step of that
kind may go next (for validation), which handoff fields its step declares and what each
value does (for the prompt and for the stub), how ``swarm flows show`` describes it, and
how a graph draws its edges (the studio). Deciding the route at run time is the kind's
function in :mod:`swarm_runtime.orchestrator.routing` (``ROUTERS``), and its name is one
value of :data:`swarm_runtime.flow.spec.RoutingKind`: a new kind is one entry here, that
function and that name, and ``tests/runtime/flow/test_kinds.py`` holds the three together.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from swarm_runtime.flow.spec import FlowSpec, RoutingSpec, StepSpec
from swarm_runtime.record import Record

NO_FURTHER_HELP_FIELD = "can_further_iteration_help"
"""The handoff field with which an agent ends a microloop early (SPEC §4.3 rule 2)."""
STUB_FAILING_VALUE = "NEEDS_WORK"
"""What the stub declares on a microloop's first execution, so every loop goes round once."""


class HandoffField(Record):
    """A field a step declares in its handoff for routing, and what its values do."""

    name: str
    values: tuple[str, ...]
    """The values routing reacts to by name (the first is the example's)."""
    guide: str
    """One line for the prompt: which values to declare and what each does."""


class RoutingKind(Record):
    """Everything about one routing kind except the run-time decision."""

    name: str
    keys: tuple[str, ...]
    """Routing keys the kind takes besides ``kind``."""
    required: tuple[tuple[str, str], ...]
    """Keys it needs, each with the hint its error message ends with."""
    successors: Callable[[RoutingSpec, str | None], list[tuple[str, str]]]
    """``(field, step id)`` edges out of a step, given the step that follows it in the list."""
    handoff: Callable[[RoutingSpec, str | None], tuple[HandoffField, ...]]
    """The handoff fields a step of this kind declares, given the step it advances to."""
    stub_handoff: Callable[[dict[str, tuple[str, ...]], int], dict[str, Any]]
    """What the stub declares on execution ``n`` (0-based), from the step's handoff fields."""
    describe: Callable[[RoutingSpec], str]
    """One line for ``swarm flows show``."""
    edges: Callable[[RoutingSpec, str | None], list[tuple[str, str, str]]]
    """``(to step, edge kind, label)`` of each edge a graph draws out of a step, given the
    step that follows it in the list."""


def _onward(routing: RoutingSpec, following: str | None) -> list[tuple[str, str]]:
    if routing.next:
        return [("routing.next", routing.next)]
    return [("", following)] if following else []


def _where(target: str | None) -> str:
    return f"to '{target}'" if target else "to the end of the flow"


# -- linear ------------------------------------------------------------------------------


def _linear_describe(routing: RoutingSpec) -> str:
    return f"next -> {routing.next}" if routing.next else "linear"


# -- microloop -------------------------------------------------------------------------------


def _microloop_successors(routing: RoutingSpec, following: str | None) -> list[tuple[str, str]]:
    back = [("routing.loop_target", routing.loop_target)] if routing.loop_target else []
    return back + _onward(routing, following)


def _microloop_handoff(routing: RoutingSpec, onward: str | None) -> tuple[HandoffField, ...]:
    if not routing.loop_condition_field:
        return ()
    success = routing.loop_success_values
    failing = STUB_FAILING_VALUE if STUB_FAILING_VALUE not in success else "NOT_YET"
    verdict = " or ".join(success)
    return (
        HandoffField(
            routing.loop_condition_field,
            success,
            f"{verdict} when the work passes: it goes on {_where(onward)}; any other value "
            f"(for example {failing}) sends it back to '{routing.loop_target}' for another "
            f"pass (at most {routing.max_iterations} passes in all)",
        ),
        HandoffField(
            NO_FURTHER_HELP_FIELD,
            ("yes", "no"),
            "yes or no; no when another pass would not make it better: the loop then ends "
            "and the work goes on as it is",
        ),
    )


def _microloop_stub(fields: dict[str, tuple[str, ...]], iteration: int) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for name, allowed in fields.items():
        if name == NO_FURTHER_HELP_FIELD:
            values[name] = "yes" if iteration == 0 else "no"
        else:  # the condition field: fail once, then succeed
            failing = STUB_FAILING_VALUE
            if failing in allowed:
                failing += "_MORE"
            values[name] = failing if iteration == 0 else allowed[0]
    return values


def _microloop_describe(routing: RoutingSpec) -> str:
    text = (
        f"microloop -> {routing.loop_target} until {routing.loop_condition_field} in "
        f"{'|'.join(routing.loop_success_values)} (max {routing.max_iterations})"
    )
    return text + (f", then {routing.next}" if routing.next else "")


# -- branch ------------------------------------------------------------------------------


def _branch_successors(routing: RoutingSpec, _following: str | None) -> list[tuple[str, str]]:
    edges = [(f"routing.branches.{key}", target) for key, target in routing.branches]
    if routing.default:
        edges.append(("routing.default", routing.default))
    return edges


def _branch_handoff(routing: RoutingSpec, _onward: str | None) -> tuple[HandoffField, ...]:
    choices = ", ".join(f"{key} (goes to '{target}')" for key, target in routing.branches)
    other = (
        f"any other value goes to '{routing.default}'"
        if routing.default
        else "any other value fails the step"
    )
    return (
        HandoffField(
            routing.branch_field,
            tuple(key for key, _ in routing.branches),
            f"one of {choices}; {other}",
        ),
    )


def _first_values(fields: dict[str, tuple[str, ...]], _iteration: int) -> dict[str, Any]:
    return {name: allowed[0] for name, allowed in fields.items()}


def _branch_describe(routing: RoutingSpec) -> str:
    text = f"branch on {routing.branch_field}: " + ", ".join(
        f"{key}->{target}" for key, target in routing.branches
    )
    return text + (f", default->{routing.default}" if routing.default else "")


def _linear_edges(routing: RoutingSpec, following: str | None) -> list[tuple[str, str, str]]:
    forward = routing.next or following
    return [(forward, "linear", "")] if forward is not None else []


def _microloop_edges(routing: RoutingSpec, following: str | None) -> list[tuple[str, str, str]]:
    field = routing.loop_condition_field or "status"
    success = "|".join(routing.loop_success_values) or "?"
    edges = []
    if routing.loop_target is not None:
        label = f"{field}≠{success} (max {routing.max_iterations})"
        edges.append((routing.loop_target, "loop", label))
    forward = routing.next or following
    if forward is not None:
        edges.append((forward, "linear", f"{field}={success}"))
    return edges


def _branch_edges(routing: RoutingSpec, _following: str | None) -> list[tuple[str, str, str]]:
    edges = [
        (target, "branch", f"{routing.branch_field}={value}") for value, target in routing.branches
    ]
    if routing.default is not None:
        edges.append((routing.default, "branch", "default"))
    return edges


# -- navigator ---------------------------------------------------------------------------


def _navigator_successors(routing: RoutingSpec, _following: str | None) -> list[tuple[str, str]]:
    edges = [(f"routing.candidates.{c.id}.to", c.to) for c in routing.candidates]
    if routing.default:
        edges.append(("routing.default", routing.default))
    return edges


def _navigator_describe(routing: RoutingSpec) -> str:
    moves = ", ".join(
        f"{c.id}->{c.to}" + (f" if {c.when}" if c.when else "") for c in routing.candidates
    )
    return f"navigator: default->{routing.default}; {moves}"


def _navigator_edges(routing: RoutingSpec, _following: str | None) -> list[tuple[str, str, str]]:
    edges = [(c.to, "navigator", c.id) for c in routing.candidates]
    if routing.default is not None:
        edges.append((routing.default, "linear", "default"))
    return edges


KINDS: dict[str, RoutingKind] = {
    "linear": RoutingKind(
        name="linear",
        keys=("next",),
        required=(),
        successors=_onward,
        handoff=lambda _routing, _onward: (),
        stub_handoff=_first_values,
        describe=_linear_describe,
        edges=_linear_edges,
    ),
    "microloop": RoutingKind(
        name="microloop",
        keys=(
            "next",
            "loop_target",
            "loop_condition_field",
            "loop_success_values",
            "max_iterations",
        ),
        required=(("loop_target", ""), ("loop_condition_field", ""), ("loop_success_values", "")),
        successors=_microloop_successors,
        handoff=_microloop_handoff,
        stub_handoff=_microloop_stub,
        describe=_microloop_describe,
        edges=_microloop_edges,
    ),
    "branch": RoutingKind(
        name="branch",
        keys=("branch_field", "branches", "default"),
        required=(("branches", " (handoff value -> step id)"),),
        successors=_branch_successors,
        handoff=_branch_handoff,
        stub_handoff=_first_values,
        describe=_branch_describe,
        edges=_branch_edges,
    ),
    "navigator": RoutingKind(
        name="navigator",
        keys=("default", "candidates"),
        required=(
            ("default", " (the golden path: the step taken when the navigator does not choose)"),
            ("candidates", " (the moves the navigator chooses from: id, to, and maybe when)"),
        ),
        successors=_navigator_successors,
        handoff=lambda _routing, _onward: (),
        stub_handoff=_first_values,
        describe=_navigator_describe,
        edges=_navigator_edges,
    ),
}
"""Every routing kind, by the name a flow file gives in ``routing.kind``."""

ROUTING_KEYS: tuple[str, ...] = (
    "kind",
    *dict.fromkeys(k for kind in KINDS.values() for k in kind.keys),
)
"""Every key a ``routing:`` mapping may hold."""


def stub_handoff(kind: str, fields: dict[str, tuple[str, ...]], iteration: int) -> dict[str, Any]:
    """The handoff the deterministic stub declares for a step of ``kind`` (SPEC §5.5)."""
    return KINDS[kind].stub_handoff(fields, iteration)


def step_handoff(flow: FlowSpec, step: StepSpec) -> tuple[HandoffField, ...]:
    """The handoff fields ``step`` declares for its routing, with what each value does."""
    routing = step.routing
    position = flow.index_of(step.id) + 1
    onward = routing.next or (flow.steps[position].id if position < len(flow.steps) else None)
    return KINDS[routing.kind].handoff(routing, onward)


def handoff_fields(flow: FlowSpec, step: StepSpec) -> dict[str, tuple[str, ...]]:
    """The fields ``step`` declares in its handoff, each with the values routing names."""
    return {item.name: item.values for item in step_handoff(flow, step)}

"""Routing kinds (docs/flows.md#routing-kinds): one table entry carries everything about a kind.

An entry says which routing keys the kind takes and which it needs; the edges out of a
step of that kind, each with the key that names it (validation), how a graph draws it
(the studio) and its route coverage label; which edge a ``route_decision`` took (route
coverage) and how a person reads each label; which handoff fields its step declares and
what each value does (for the prompt and for the stub); and how ``swarm flows show``
describes it. Deciding the route at run time is the kind's function in
:mod:`swarm_runtime.orchestrator.routing` (``ROUTERS``), and its name is one value of
:data:`swarm_runtime.flow.spec.RoutingKind`: a new kind is one entry here, that function
and that name, and ``tests/runtime/flow/test_kinds.py`` holds the three together. (A key
no kind has taken yet is also a field of ``RoutingSpec``, beside that name, and a line of
:data:`KEY_TYPES` here.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from swarm_runtime.flow.spec import FlowSpec, RoutingSpec, StepSpec
from swarm_runtime.record import Record

NO_FURTHER_HELP_FIELD = "can_further_iteration_help"
"""The handoff field with which an agent ends a microloop early: the second rule of
docs/flows.md#microloop-exits."""
STUB_FAILING_VALUE = "NEEDS_WORK"
"""What the stub declares on a microloop's first execution, so every loop goes round once."""


class HandoffField(Record):
    """A field a step declares in its handoff for routing, and what its values do."""

    name: str
    values: tuple[str, ...]
    """The values routing reacts to by name (the first is the example's)."""
    guide: str
    """One line for the prompt: which values to declare and what each does."""


class RouteEdge(Record):
    """One edge out of a step, as each reader of a flow sees it."""

    to: str
    field: str
    """The routing key that names ``to`` (``""``: the step after it in the list)."""
    drawn: str
    """How a graph draws it: ``linear``, ``loop``, ``branch`` or ``navigator``."""
    caption: str
    """What a graph writes on it (``status=OK``, a candidate's id, ``default``)."""
    label: str
    """Its name in route coverage (``next``, ``loop``, ``branch=GO``, …; docs/coverage.md)."""


class RoutingKind(Record):
    """Everything about one routing kind except the run-time decision."""

    name: str
    keys: tuple[str, ...]
    """Routing keys the kind takes besides ``kind``."""
    required: tuple[tuple[str, str], ...]
    """Keys it needs, each with the hint its error message ends with."""
    edges: Callable[[RoutingSpec, str | None], list[RouteEdge]]
    """Every edge out of a step, in declared order, given the step after it in the list."""
    taken: Callable[[RoutingSpec, str, str, str], str | None]
    """The coverage label of the edge a ``route_decision`` took, from its decision and its
    reason split at the first ``:`` (head, rest); None when they name none."""
    labels: dict[str, str]
    """How a person reads each coverage label (up to its ``=``; ``{}``: what follows it)."""
    handoff: Callable[[RoutingSpec, str | None], tuple[HandoffField, ...]]
    """The handoff fields a step of this kind declares, given the step it advances to."""
    stub_handoff: Callable[[dict[str, tuple[str, ...]], int], dict[str, Any]]
    """What the stub declares on execution ``n`` (0-based), from the step's handoff fields."""
    describe: Callable[[RoutingSpec], str]
    """One line for ``swarm flows show``."""


def _onward(
    routing: RoutingSpec, following: str | None, caption: str, label: str
) -> list[RouteEdge]:
    """The edge to ``routing.next``, else to the step after it in the list (if any)."""
    if routing.next:
        return [RouteEdge(routing.next, "routing.next", "linear", caption, label)]
    return [RouteEdge(following, "", "linear", caption, label)] if following else []


def _where(target: str | None) -> str:
    return f"to '{target}'" if target else "to the end of the flow"


def _first_values(fields: dict[str, tuple[str, ...]], _iteration: int) -> dict[str, Any]:
    return {name: allowed[0] for name, allowed in fields.items()}


# -- linear ------------------------------------------------------------------------------


def _linear_edges(routing: RoutingSpec, following: str | None) -> list[RouteEdge]:
    return _onward(routing, following, "", "next")


def _linear_taken(_routing: RoutingSpec, decision: str, _head: str, _rest: str) -> str | None:
    return "next" if decision == "advance" else None


def _linear_describe(routing: RoutingSpec) -> str:
    return f"next -> {routing.next}" if routing.next else "linear"


# -- microloop -------------------------------------------------------------------------------


def _microloop_edges(routing: RoutingSpec, following: str | None) -> list[RouteEdge]:
    field = routing.loop_condition_field or "status"
    success = "|".join(routing.loop_success_values) or "?"
    edges = []
    if routing.loop_target:
        caption = f"{field}≠{success} (max {routing.max_iterations})"
        edges.append(RouteEdge(routing.loop_target, "routing.loop_target", "loop", caption, "loop"))
    return edges + _onward(routing, following, f"{field}={success}", "loop-exit")


def _microloop_taken(_routing: RoutingSpec, decision: str, _head: str, _rest: str) -> str | None:
    return {"loop": "loop", "advance": "loop-exit"}.get(decision)


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


def _branch_edges(routing: RoutingSpec, _following: str | None) -> list[RouteEdge]:
    field = routing.branch_field
    edges = [
        RouteEdge(target, f"routing.branches.{key}", "branch", f"{field}={key}", f"branch={key}")
        for key, target in routing.branches
    ]
    if routing.default:
        edges.append(
            RouteEdge(routing.default, "routing.default", "branch", "default", "branch-default")
        )
    return edges


def _branch_taken(routing: RoutingSpec, _decision: str, head: str, rest: str) -> str | None:
    """The branch a reason names: ``branch:FIELD=VALUE`` (case aside), ``branch_default``.

    :mod:`swarm_runtime.orchestrator.routing` writes these reasons.
    """
    if head == "branch_default":
        return "branch-default"
    value = rest.partition("=")[2].lower() if head == "branch" else None
    key = next((k for k, _ in routing.branches if k.lower() == value), None)
    return f"branch={key}" if key is not None else None


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


def _branch_describe(routing: RoutingSpec) -> str:
    text = f"branch on {routing.branch_field}: " + ", ".join(
        f"{key}->{target}" for key, target in routing.branches
    )
    return text + (f", default->{routing.default}" if routing.default else "")


# -- navigator ---------------------------------------------------------------------------


def _navigator_edges(routing: RoutingSpec, _following: str | None) -> list[RouteEdge]:
    edges = [
        RouteEdge(c.to, f"routing.candidates.{c.id}.to", "navigator", c.id, f"candidate={c.id}")
        for c in routing.candidates
    ]
    if routing.default:
        edges.append(
            RouteEdge(routing.default, "routing.default", "linear", "default", "navigator-default")
        )
    return edges


def _navigator_taken(_routing: RoutingSpec, _decision: str, head: str, rest: str) -> str | None:
    """The reasons :mod:`swarm_runtime.orchestrator.routing` gives a move it made."""
    if head in ("navigator", "navigator_single", "navigator_deterministic"):
        return f"candidate={rest}"
    if head in ("navigator_default", "navigator_no_candidate", "navigator_fallback"):
        return "navigator-default"
    return None


def _navigator_describe(routing: RoutingSpec) -> str:
    moves = ", ".join(
        f"{c.id}->{c.to}" + (f" if {c.when}" if c.when else "") for c in routing.candidates
    )
    return f"navigator: default->{routing.default}; {moves}"


KINDS: dict[str, RoutingKind] = {
    "linear": RoutingKind(
        name="linear",
        keys=("next",),
        required=(),
        edges=_linear_edges,
        taken=_linear_taken,
        labels={"next": "next"},
        handoff=lambda _routing, _onward: (),
        stub_handoff=_first_values,
        describe=_linear_describe,
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
        edges=_microloop_edges,
        taken=_microloop_taken,
        labels={"loop": "loop back-edge", "loop-exit": "loop exit"},
        handoff=_microloop_handoff,
        stub_handoff=_microloop_stub,
        describe=_microloop_describe,
    ),
    "branch": RoutingKind(
        name="branch",
        keys=("branch_field", "branches", "default"),
        required=(("branches", " (handoff value -> step id)"),),
        edges=_branch_edges,
        taken=_branch_taken,
        labels={"branch": "branch value '{}'", "branch-default": "branch default"},
        handoff=_branch_handoff,
        stub_handoff=_first_values,
        describe=_branch_describe,
    ),
    "navigator": RoutingKind(
        name="navigator",
        keys=("default", "candidates"),
        required=(
            ("default", " (the golden path: the step taken when the navigator does not choose)"),
            ("candidates", " (the moves the navigator chooses from: id, to, and maybe when)"),
        ),
        edges=_navigator_edges,
        taken=_navigator_taken,
        labels={"candidate": "navigator candidate '{}'", "navigator-default": "navigator default"},
        handoff=lambda _routing, _onward: (),
        stub_handoff=_first_values,
        describe=_navigator_describe,
    ),
}
"""Every routing kind, by the name a flow file gives in ``routing.kind``."""

ROUTING_KEYS: tuple[str, ...] = (
    "kind",
    *dict.fromkeys(k for kind in KINDS.values() for k in kind.keys),
)
"""Every key a ``routing:`` mapping may hold."""
KEY_TYPES: dict[str, str] = {
    "next": "step",
    "loop_target": "step",
    "default": "step",
    "loop_condition_field": "text",
    "branch_field": "text",
    "loop_success_values": "texts",
    "max_iterations": "count",
    "branches": "branches",
    "candidates": "candidates",
}
"""How each key's value is read from a flow file: a step id, a string, a list of strings,
a whole number from 1, a mapping of handoff value to step id, or a navigator's moves."""


def stub_handoff(kind: str, fields: dict[str, tuple[str, ...]], iteration: int) -> dict[str, Any]:
    """The handoff the deterministic stub declares for a step of ``kind``.

    See docs/engines.md#the-stub.
    """
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

"""The routing kinds table: every kind is complete, and the runtime can route each one."""

from __future__ import annotations

from swarm_runtime.flow.kinds import KINDS, ROUTING_KEYS, stub_handoff
from swarm_runtime.flow.spec import RoutingSpec
from swarm_runtime.orchestrator.routing import ROUTERS


def test_every_kind_in_the_table_has_a_router_and_a_name_and_nothing_else_does() -> None:
    from typing import get_args

    from swarm_runtime.flow.spec import RoutingKind

    assert set(KINDS) == set(ROUTERS) == set(get_args(RoutingKind))


def test_a_kind_takes_only_routing_keys_and_needs_only_keys_it_takes() -> None:
    for kind in KINDS.values():
        assert set(kind.keys) <= set(ROUTING_KEYS), kind.name
        assert {name for name, _ in kind.required} <= set(kind.keys), kind.name


def test_the_stub_fails_a_loop_once_then_passes_and_takes_a_branchs_first_key() -> None:
    loop = {"status": ("VERIFIED",), "can_further_iteration_help": ("yes", "no")}
    assert stub_handoff("microloop", loop, 0) == {
        "status": "NEEDS_WORK",
        "can_further_iteration_help": "yes",
    }
    assert stub_handoff("microloop", loop, 1) == {
        "status": "VERIFIED",
        "can_further_iteration_help": "no",
    }
    assert stub_handoff("branch", {"decision": ("GO", "STOP")}, 3) == {"decision": "GO"}
    assert stub_handoff("linear", {}, 0) == {}


def test_flows_show_describes_each_kind() -> None:
    loop = RoutingSpec(
        kind="microloop",
        loop_target="a",
        loop_condition_field="status",
        loop_success_values=("OK",),
        max_iterations=2,
    )
    assert KINDS["microloop"].describe(loop) == "microloop -> a until status in OK (max 2)"
    branch = RoutingSpec(kind="branch", branches=(("GO", "b"),), default="c")
    assert KINDS["branch"].describe(branch) == "branch on status: GO->b, default->c"
    assert KINDS["linear"].describe(RoutingSpec(next="d")) == "next -> d"

"""The routing kinds table: every kind is complete, and the runtime can route each one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from swarm_runtime.coverage import report as coverage_report
from swarm_runtime.coverage.routes import Taken, Universe, collect
from swarm_runtime.errors import FlowDefinitionError
from swarm_runtime.flow.kinds import (
    KEY_TYPES,
    KINDS,
    ROUTING_KEYS,
    RouteEdge,
    RoutingKind,
    stub_handoff,
)
from swarm_runtime.flow.registry import FlowRegistry
from swarm_runtime.flow.spec import RoutingSpec
from swarm_runtime.orchestrator.routing import ROUTERS, Decision
from swarm_runtime.studio.graph import flow_graph
from tests.runtime.helpers import events_of, run_flows, step_yaml, write_flow


def test_every_kind_in_the_table_has_a_router_and_a_name_and_nothing_else_does() -> None:
    from typing import get_args

    from swarm_runtime.flow.spec import RoutingKind

    assert set(KINDS) == set(ROUTERS) == set(get_args(RoutingKind))


def test_a_kind_takes_only_routing_keys_and_needs_only_keys_it_takes() -> None:
    for kind in KINDS.values():
        assert set(kind.keys) <= set(ROUTING_KEYS), kind.name
        assert {name for name, _ in kind.required} <= set(kind.keys), kind.name
    assert (
        set(KEY_TYPES)
        == set(ROUTING_KEYS) - {"kind"}
        == set(RoutingSpec.__struct_fields__) - {"kind"}
    )


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


def test_a_new_kind_is_its_entry_its_router_and_its_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Validation, route coverage and the studio's graph read a kind from its entry alone."""
    relay = RoutingKind(
        name="relay",
        keys=("default",),
        required=(("default", ""),),
        edges=lambda r, _following: [
            RouteEdge(r.default, "routing.default", "linear", "", "relay")
        ],
        taken=lambda _r, decision, _head, _rest: "relay" if decision == "advance" else None,
        labels={"relay": "relayed"},
        handoff=lambda _r, _onward: (),
        stub_handoff=lambda _fields, _n: {},
        describe=lambda r: f"relay -> {r.default}",
    )
    monkeypatch.setitem(KINDS, "relay", relay)

    def route(flow: Any, step: Any, _value_of: Any, _executions: int) -> Decision:
        to = step.routing.default
        return Decision(to, "advance", "relay", "deterministic")

    monkeypatch.setitem(ROUTERS, "relay", route)
    flows = tmp_path / "flows"
    relayed = step_yaml("a", "routing:\n  kind: relay\n  default: c")
    write_flow(flows, "r", [relayed, step_yaml("b"), step_yaml("c")])
    with pytest.raises(FlowDefinitionError, match="step 'b' is unreachable"):
        FlowRegistry(flows).get("r")
    write_flow(flows, "r", [relayed, step_yaml("c")])
    registry = FlowRegistry(flows)
    universe = Universe.of(registry)
    assert [(e.label, e.to, e.describe()) for e in universe.edges[("r", "a")]] == [
        ("relay", "c", "relayed -> c")
    ]
    taken = Taken()
    collect(events_of(run_flows(flows, tmp_path / "runs", ("r",))), taken)
    report = coverage_report.build(universe, taken)
    assert [(e["from"], e["label"], e["taken"]) for e in report["flows"]["r"]["edges"]] == [
        ("a", "relay", 1)
    ]
    graph = flow_graph(registry.get("r"))
    assert graph["edges"] == [{"from": "a", "to": "c", "kind": "linear", "label": ""}]

"""Routing in a run: microloops exit as docs/flows.md#microloop-exits says, branches follow the
handoff."""

from __future__ import annotations

import json
from pathlib import Path

from swarm_runtime.flow.registry import FlowRegistry
from tests.conftest import SHIPPED_FLOWS
from tests.runtime.helpers import (
    events_of,
    kinds,
    receipt,
    route_decisions,
    run_flows,
    step_yaml,
    write_flow,
)


def test_every_shipped_microloop_runs_twice_and_exits_on_success(tmp_path: Path) -> None:
    outcome = run_flows(SHIPPED_FLOWS, tmp_path / "runs")
    registry = FlowRegistry(SHIPPED_FLOWS)
    loops = [
        (flow.key, step.id)
        for flow in (registry.get(k) for k in registry.order())
        for step in flow.steps
        if step.routing.kind == "microloop"
    ]
    assert len(loops) >= 4
    starts = [e for e in events_of(outcome) if e["kind"] == "step_start"]
    for flow_key, step_id in loops:
        runs = [e for e in starts if (e["flow_key"], e["step_id"]) == (flow_key, step_id)]
        assert len(runs) >= 2, f"{flow_key}/{step_id} ran {len(runs)} time(s)"
        last = [
            e["payload"]
            for e in events_of(outcome)
            if e["kind"] == "route_decision"
            and (e["flow_key"], e["step_id"]) == (flow_key, step_id)
        ][-1]
        assert last["decision"] == "advance"
        assert last["reason"].startswith("success_value:"), last


def test_branch_step_routes_by_its_handoff(tmp_path: Path) -> None:
    outcome = run_flows(
        SHIPPED_FLOWS,
        tmp_path / "runs",
        ("gate",),
        scenario={"decide_merge": {"handoff": {"decision": "BOUNCE"}}},
    )
    decision = route_decisions(outcome, "decide_merge")[0]
    gate = FlowRegistry(SHIPPED_FLOWS).get("gate")
    expected = dict(gate.step("decide_merge").routing.branches)["BOUNCE"]
    assert decision["to_step"] == expected
    assert decision["routing_source"] == "deterministic"
    agent = gate.step("decide_merge").primary_agent
    assert receipt(outcome, "gate", "decide_merge", agent)["handoff"]["decision"] == "BOUNCE"
    started = [e["step_id"] for e in events_of(outcome) if e["kind"] == "step_start"]
    assert expected in started
    others = {t for k, t in gate.step("decide_merge").routing.branches if k != "BOUNCE"}
    assert not others & set(started)


def test_loop_exits_with_max_iterations_after_exactly_max_executions(
    loop_flows: Path, tmp_path: Path
) -> None:
    outcome = run_flows(
        loop_flows,
        tmp_path / "runs",
        ("loopy",),
        scenario={
            "critic": {"handoff": {"status": "REJECTED", "can_further_iteration_help": "yes"}}
        },
    )
    assert outcome.status == "succeeded"
    critic_runs = [
        e for e in events_of(outcome) if e["kind"] == "step_start" and e["step_id"] == "critic"
    ]
    assert len(critic_runs) == 3
    decisions = route_decisions(outcome, "critic")
    assert [d["decision"] for d in decisions] == ["loop", "loop", "advance"]
    assert [d["reason"] for d in decisions] == [
        "loop_iteration:1",
        "loop_iteration:2",
        "max_iterations",
    ]
    assert decisions[-1]["loop_state"] == {"critic:author": 3}
    final = receipt(outcome, "loopy", "critic", "worker")
    assert final["routing"] == {
        "decision": "advance",
        "reason": "max_iterations",
        "loop_iteration": 2,
        "max_iterations": 3,
    }
    # Earlier executions are kept, in order.
    kept = sorted(p.name for p in (outcome.path / "loopy" / "receipts").glob("critic-*"))
    assert kept == ["critic-worker.json", "critic-worker~1.json", "critic-worker~2.json"]
    first = json.loads((outcome.path / "loopy/receipts/critic-worker~1.json").read_text())
    assert first["iteration"] == 0 and first["routing"]["decision"] == "loop"


def test_no_further_help_exits_loop(loop_flows: Path, tmp_path: Path) -> None:
    outcome = run_flows(
        loop_flows,
        tmp_path / "runs",
        ("loopy",),
        scenario={
            "critic": {"handoff": {"status": "REJECTED", "can_further_iteration_help": "no"}}
        },
    )
    assert [d["reason"] for d in route_decisions(outcome, "critic")] == ["no_further_help"]


def test_success_value_is_case_insensitive_and_read_from_handoff(
    loop_flows: Path, tmp_path: Path
) -> None:
    outcome = run_flows(
        loop_flows,
        tmp_path / "runs",
        ("loopy",),
        scenario={"critic": {"handoff": {"status": "verified"}}},
    )
    assert [d["reason"] for d in route_decisions(outcome, "critic")] == ["success_value:verified"]


def test_branch_without_match_or_default_fails_the_step(tmp_path: Path) -> None:
    flows = tmp_path / "flows"
    branch = """\
routing:
  kind: branch
  branch_field: decision
  branches: {GO: go}
"""
    write_flow(flows, "fork", [step_yaml("decide", branch), step_yaml("go")])
    outcome = run_flows(
        flows, tmp_path / "runs", ("fork",), scenario={"decide": {"handoff": {"decision": "MAYBE"}}}
    )
    assert outcome.status == "failed"
    assert kinds(outcome)[-2:] == ["step_error", "run_completed"]
    assert "matches no branch" in (outcome.error or "") and "'MAYBE'" in (outcome.error or "")

"""The run loop: routing, sequencing invariants, failures, slices, multi-flow runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from swarm_runtime.contracts.check import validate_run_dir
from swarm_runtime.engines.base import StepContext, StepEngine, StepOutcome
from swarm_runtime.engines.registry import default_registry
from swarm_runtime.errors import ConfigError, ScenarioError, SwarmUsageError
from swarm_runtime.flow.registry import FlowRegistry
from swarm_runtime.orchestrator.runner import Orchestrator, RunSpec
from tests.conftest import SHIPPED_FLOWS, StepClock
from tests.runtime.helpers import (
    events_of,
    kinds,
    receipt,
    route_decisions,
    run_flows,
    step_yaml,
    write_flow,
)

LOOP = """\
routing:
  kind: microloop
  loop_target: author
  loop_condition_field: status
  loop_success_values: [VERIFIED]
  max_iterations: 3
"""


@pytest.fixture
def loop_flows(tmp_path: Path) -> Path:
    flows = tmp_path / "flows"
    write_flow(flows, "loopy", [step_yaml("author"), step_yaml("critic", LOOP), step_yaml("ship")])
    return flows


def test_sdlc_stub_run_succeeds_and_validates(tmp_path: Path, clock: StepClock) -> None:
    outcome = run_flows(SHIPPED_FLOWS, tmp_path / "runs", clock=clock)
    assert outcome.status == "succeeded", outcome.error
    assert validate_run_dir(outcome.path) == []
    assert outcome.summary["total_steps_executed"] >= 50
    assert kinds(outcome)[0] == "run_created"
    assert kinds(outcome)[-1] == "run_completed"


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


def test_fatal_step_fails_the_run_and_stops(tmp_path: Path) -> None:
    outcome = run_flows(
        SHIPPED_FLOWS,
        tmp_path / "runs",
        ("signal", "plan"),
        scenario={"signal/author_requirements": {"result_code": "fatal", "error": "model refused"}},
    )
    assert outcome.status == "failed"
    events = events_of(outcome)
    error = [e for e in events if e["kind"] == "step_error"]
    assert len(error) == 1 and error[0]["step_id"] == "author_requirements"
    assert error[0]["payload"]["error"] == "model refused"
    after = events[events.index(error[0]) + 1 :]
    assert [e["kind"] for e in after] == ["run_completed"]
    assert after[0]["payload"]["status"] == "failed"
    assert not (outcome.path / "plan").exists()
    meta = json.loads((outcome.path / "meta.json").read_text())
    assert meta["status"] == "failed" and "model refused" in meta["error"]
    assert validate_run_dir(outcome.path) == []


def test_blocked_fails_clearly_for_now(loop_flows: Path, tmp_path: Path) -> None:
    outcome = run_flows(
        loop_flows, tmp_path / "runs", ("loopy",), scenario={"author": {"result_code": "blocked"}}
    )
    assert outcome.status == "failed"
    assert "result_code 'blocked'" in (outcome.error or "")
    assert kinds(outcome)[-2:] == ["step_error", "run_completed"]


def test_retryable_is_retried_within_the_execution_then_succeeds(
    loop_flows: Path, tmp_path: Path
) -> None:
    slept: list[float] = []
    outcome = run_flows(
        loop_flows,
        tmp_path / "runs",
        ("loopy",),
        scenario={
            "author": [
                {"result_code": "retryable", "error": "overloaded", "retry_after_ms": 2000},
                {"result_code": "retryable", "error": "overloaded again"},
                {"text": "fine now"},
            ]
        },
        sleep=slept.append,
        jitter=lambda: 0.0,
    )
    assert outcome.status == "succeeded"
    assert slept == [2.0, 0.5]  # retry-after first, then backoff: (0.5 s x 2^1) / 2, no jitter
    events = events_of(outcome)
    author = [e["kind"] for e in events if e["step_id"] == "author"][:5]  # first execution
    assert author == ["step_start", "log", "log", "step_end", "route_decision"]
    logs = [e["payload"] for e in events if e["kind"] == "log"]
    assert logs[0]["message"] == "retrying loopy/author in 2.000 s (attempt 2 of 3)"
    assert logs[1]["error"] == "overloaded again" and logs[1]["retry_in_ms"] == 500
    first = json.loads((outcome.path / "loopy/receipts/author-worker~1.json").read_text())
    assert (first["attempt"], first["max_attempts"]) == (3, 3)
    latest = receipt(outcome, "loopy", "author", "worker")  # the loop's second execution
    assert latest["attempt"] == 1
    assert validate_run_dir(outcome.path) == []


def test_backoff_doubles_with_jitter_and_is_capped(loop_flows: Path, tmp_path: Path) -> None:
    flows = tmp_path / "flows"
    write_flow(flows, "flaky", [step_yaml("call", "max_attempts: 12")])
    slept: list[float] = []
    outcome = run_flows(
        flows,
        tmp_path / "runs",
        ("flaky",),
        scenario={"call": {"result_code": "retryable", "error": "503"}},
        sleep=slept.append,
        jitter=lambda: 1.0,
    )
    assert slept == [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0, 30.0, 30.0, 30.0]
    assert outcome.status == "failed"
    assert outcome.error == "flaky/call: still failing after 12 attempt(s): 503"
    assert kinds(outcome)[-2:] == ["step_error", "run_completed"]


def test_skipped_step_ends_skipped_and_routes_linearly(loop_flows: Path, tmp_path: Path) -> None:
    outcome = run_flows(
        loop_flows, tmp_path / "runs", ("loopy",), scenario={"critic": {"result_code": "skipped"}}
    )
    assert outcome.status == "succeeded"
    end = [e for e in events_of(outcome) if e["kind"] == "step_end" and e["step_id"] == "critic"]
    assert end[0]["payload"]["status"] == "skipped"
    rec = receipt(outcome, "loopy", "critic", "worker")
    assert rec["status"] == "succeeded" and rec["result_code"] == "skipped"
    assert route_decisions(outcome, "critic")[0]["to_step"] == "ship"


class _Exploding(StepEngine):
    engine_id = "claude-step"

    def run_step(self, ctx: StepContext) -> StepOutcome:
        raise RuntimeError("boom in engine")


def test_engine_that_raises_still_completes_the_run(loop_flows: Path, tmp_path: Path) -> None:
    engines = default_registry()
    engines.register("claude-step", lambda _options: _Exploding(), replace=True)
    orchestrator = Orchestrator(
        FlowRegistry(loop_flows), runs_dir=tmp_path / "runs", engines=engines
    )
    outcome = orchestrator.run(RunSpec(flows=("loopy",)))
    assert outcome.status == "failed"
    assert kinds(outcome) == [
        "run_created",
        "run_started",
        "step_start",
        "step_error",
        "run_completed",
    ]
    assert "RuntimeError: boom in engine" in events_of(outcome)[3]["payload"]["error"]
    rec = receipt(outcome, "loopy", "author", "worker")
    assert rec["status"] == "failed" and "boom" in rec["error"]
    assert validate_run_dir(outcome.path) == []


class _Interrupting(StepEngine):
    engine_id = "claude-step"

    def run_step(self, ctx: StepContext) -> StepOutcome:
        raise KeyboardInterrupt


def test_ctrl_c_in_a_step_closes_the_step_and_the_run(loop_flows: Path, tmp_path: Path) -> None:
    engines = default_registry()
    engines.register("claude-step", lambda _options: _Interrupting(), replace=True)
    orchestrator = Orchestrator(
        FlowRegistry(loop_flows), runs_dir=tmp_path / "runs", engines=engines
    )
    outcome = orchestrator.run(RunSpec(flows=("loopy",)))
    assert outcome.interrupted and outcome.status == "stopped"
    events = events_of(outcome)
    assert [e["kind"] for e in events][-2:] == ["step_error", "run_completed"]
    assert events[-2]["payload"]["error"] == "interrupted"
    assert events[-1]["payload"]["status"] == "stopped"
    assert validate_run_dir(outcome.path) == []


def test_unknown_mode_is_refused_before_anything_is_written(
    loop_flows: Path, tmp_path: Path
) -> None:
    orchestrator = Orchestrator(FlowRegistry(loop_flows), runs_dir=tmp_path / "runs", mode="cli")
    with pytest.raises(ConfigError, match="no 'cli' mode"):
        orchestrator.run(RunSpec(flows=("loopy",)))
    assert not (tmp_path / "runs").exists()


def test_scenario_naming_unknown_step_is_an_error_before_the_run(
    loop_flows: Path, tmp_path: Path
) -> None:
    with pytest.raises(ScenarioError, match=r"'critc' names no step.*did you mean 'critic'"):
        run_flows(loop_flows, tmp_path / "runs", ("loopy",), scenario={"critc": {"text": "x"}})
    assert not (tmp_path / "runs").exists()


def test_slice_runs_from_start_to_end_step(tmp_path: Path) -> None:
    registry = FlowRegistry(SHIPPED_FLOWS)
    plan = registry.get("plan")
    start, end = plan.steps[2].id, plan.steps[4].id
    outcome = Orchestrator(registry, runs_dir=tmp_path / "runs").run_stepwise_flow(
        "plan", start_step=start, end_step=end
    )
    started = [e["step_id"] for e in events_of(outcome) if e["kind"] == "step_start"]
    assert started == [s.id for s in plan.steps[2:5]]
    last = route_decisions(outcome)[-1]
    assert last == {**last, "decision": "terminate", "reason": f"end_step:{end}", "to_step": None}


def test_slice_across_flows_and_bad_slices(tmp_path: Path) -> None:
    registry = FlowRegistry(SHIPPED_FLOWS)
    orchestrator = Orchestrator(registry, runs_dir=tmp_path / "runs")
    last_signal = registry.get("signal").steps[-1].id
    first_plan = registry.get("plan").steps[0].id
    outcome = orchestrator.run(
        RunSpec(flows=("signal", "plan"), start_step=f"signal/{last_signal}", end_step=first_plan)
    )
    started = [
        (e["flow_key"], e["step_id"]) for e in events_of(outcome) if e["kind"] == "step_start"
    ]
    assert started == [("signal", last_signal), ("plan", first_plan)]
    with pytest.raises(SwarmUsageError, match="no such step"):
        orchestrator.run(RunSpec(flows=("signal",), start_step="nope"))
    with pytest.raises(SwarmUsageError, match="comes after"):
        orchestrator.run(
            RunSpec(flows=("signal", "plan"), start_step=first_plan, end_step=last_signal)
        )


def test_tool_events_lie_inside_their_step_and_reach_the_transcript(
    loop_flows: Path, tmp_path: Path
) -> None:
    tools: list[dict[str, Any]] = [
        {"tool": "Read", "input": {"path": "a.py"}, "output": "print(1)", "success": True},
        {"tool": "Bash", "input": {"cmd": "false"}, "output": "exit 1", "success": False},
    ]
    outcome = run_flows(
        loop_flows, tmp_path / "runs", ("loopy",), scenario={"author": {"tools": tools}}
    )
    assert kinds(outcome)[2:8] == [
        "step_start",
        "tool_start",
        "tool_end",
        "tool_start",
        "tool_end",
        "step_end",
    ]
    lines = [
        json.loads(line)
        for line in (outcome.path / "loopy/llm/author-worker-claude.jsonl").read_text().splitlines()
    ]
    assert [line.get("role") or line.get("type") for line in lines] == [
        "system",
        "user",
        "tool_use",
        "tool_result",
        "tool_use",
        "tool_result",
        "assistant",
    ]
    assert lines[5]["success"] is False
    assert validate_run_dir(outcome.path) == []


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


def test_token_budget_exceeded_fails_the_step(tmp_path: Path) -> None:
    flows = tmp_path / "flows"
    write_flow(flows, "tight", [step_yaml("only", "budget: {tokens: 10}")])
    outcome = run_flows(
        flows,
        tmp_path / "runs",
        ("tight",),
        scenario={"only": {"tokens": {"prompt": 8, "completion": 5}}},
    )
    assert outcome.status == "failed"
    assert "token budget exceeded: used 13, budget 10" in (outcome.error or "")


def test_teaching_notes_only_in_their_own_step_prompt(tmp_path: Path) -> None:
    outcome = run_flows(SHIPPED_FLOWS, tmp_path / "runs", ("build",))
    registry = FlowRegistry(SHIPPED_FLOWS)
    flow = registry.get("build")
    prompts = {}
    for step in flow.steps:
        path = outcome.path / "build/llm" / f"{step.id}-{step.primary_agent}-claude.jsonl"
        lines = [json.loads(x) for x in path.read_text().splitlines()]
        prompts[step.id] = lines[0]["content"] + lines[1]["content"]
    for step in flow.steps:
        for note in step.teaching_notes.all_notes():
            assert note in prompts[step.id]
            leaking = [
                other for other, text in prompts.items() if other != step.id and note in text
            ]
            assert not leaking, f"note of {step.id} leaks into {leaking}"


def test_meta_status_says_succeeded_only_at_the_end(tmp_path: Path) -> None:
    seen: list[str] = []
    runs = tmp_path / "runs"

    def observer(event: dict[str, Any]) -> None:
        if event["kind"] == "route_decision" and event["payload"]["decision"] == "terminate":
            meta = json.loads((runs / event["run_id"] / "meta.json").read_text())
            seen.append(meta["status"])

    registry = FlowRegistry(SHIPPED_FLOWS)
    Orchestrator(registry, runs_dir=runs, observer=observer).run(RunSpec(flows=("signal", "plan")))
    assert seen == ["running", "running"]


def test_interrupt_between_steps_stops_at_the_boundary(loop_flows: Path, tmp_path: Path) -> None:
    registry = FlowRegistry(loop_flows)
    holder: dict[str, Orchestrator] = {}

    def observer(event: dict[str, Any]) -> None:
        if event["kind"] == "step_end" and event["step_id"] == "author":
            assert holder["o"].interrupt() is False  # not inside an engine call

    orchestrator = Orchestrator(registry, runs_dir=tmp_path / "runs", observer=observer)
    holder["o"] = orchestrator
    outcome = orchestrator.run(RunSpec(flows=("loopy",)))
    assert outcome.interrupted and outcome.status == "stopped"
    assert kinds(outcome) == [
        "run_created",
        "run_started",
        "step_start",
        "step_end",
        "route_decision",
        "run_completed",
    ]
    assert validate_run_dir(outcome.path) == []

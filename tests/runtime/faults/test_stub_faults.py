"""Fault plans in stub mode (docs/faults.md): each kind, its receipt, its log events, the run's
end."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from swarm_runtime.contracts.check import validate_run_dir
from swarm_runtime.engines.faults import RETRYABLE_KINDS, FaultPlan
from swarm_runtime.flow.registry import FlowRegistry
from swarm_runtime.orchestrator.plan import EngineChoice, RunDeps, RunSpec
from swarm_runtime.orchestrator.run import Orchestrator
from swarm_runtime.orchestrator.state import RunOutcome
from swarm_runtime.record import replace
from tests.runtime.helpers import claude_choice, events_of, run_flows, step_yaml, write_flow


@pytest.fixture
def flows(tmp_path: Path) -> Path:
    flows = tmp_path / "flows"
    write_flow(flows, "demo", [step_yaml("draft"), step_yaml("review")])
    return flows


def _receipt(outcome: RunOutcome, step: str) -> dict[str, Any]:
    return json.loads((outcome.path / "demo" / "receipts" / f"{step}-worker.json").read_text())


def _logs(outcome: RunOutcome, step: str) -> list[dict[str, Any]]:
    return [
        e["payload"] for e in events_of(outcome) if e["kind"] == "log" and e.get("step_id") == step
    ]


def _ends(outcome: RunOutcome) -> list[tuple[str, str | None]]:
    return [
        (e["kind"], e.get("step_id"))
        for e in events_of(outcome)
        if e["kind"] in ("step_end", "step_error", "run_completed")
    ]


@pytest.mark.parametrize("kind", sorted(RETRYABLE_KINDS))
def test_a_retryable_fault_then_a_clean_attempt_succeeds_on_attempt_2(
    flows: Path, tmp_path: Path, kind: str
) -> None:
    slept: list[float] = []
    fault: Any = {"kind": kind, "retry_after_ms": 0} if kind == "http_429" else kind
    outcome = run_flows(
        flows, tmp_path / "runs", scenario={"faults": {"review": [fault, None]}}, sleep=slept.append
    )
    assert outcome.status == "succeeded", outcome.error
    receipt = _receipt(outcome, "review")
    assert (receipt["status"], receipt["result_code"], receipt["attempt"]) == ("succeeded", "ok", 2)
    assert _receipt(outcome, "draft")["attempt"] == 1
    injected, retry = _logs(outcome, "review")
    assert (injected["fault"], injected["attempt"], injected["result_code"]) == (
        kind,
        1,
        "retryable",
    )
    assert retry["attempt"] == 1 and retry["max_attempts"] == 3
    assert "injected by the fault plan" in retry["error"]
    assert _ends(outcome) == [
        ("step_end", "draft"),
        ("step_end", "review"),
        ("run_completed", None),
    ]
    assert len(slept) == 1  # one wait, through the injected sleep
    if kind == "http_429":
        assert slept == [0.0] and retry["retry_in_ms"] == 0
    assert validate_run_dir(outcome.path) == []


def test_faults_past_max_attempts_end_the_step_and_fail_the_run(
    flows: Path, tmp_path: Path
) -> None:
    outcome = run_flows(flows, tmp_path / "runs", scenario={"faults": {"draft": ["http_500"] * 3}})
    assert outcome.status == "failed"
    receipt = _receipt(outcome, "draft")
    assert (receipt["status"], receipt["result_code"], receipt["attempt"]) == (
        "failed",
        "retryable",
        3,
    )
    assert [log["fault"] for log in _logs(outcome, "draft") if "fault" in log] == ["http_500"] * 3
    assert sum("retrying" in log["message"] for log in _logs(outcome, "draft")) == 2
    assert _ends(outcome) == [("step_error", "draft"), ("run_completed", None)]
    assert events_of(outcome)[-1]["payload"]["status"] == "failed"


def test_a_malformed_handoff_is_fatal_as_every_engine_makes_it(flows: Path, tmp_path: Path) -> None:
    outcome = run_flows(
        flows, tmp_path / "runs", scenario={"faults": {"review": ["malformed_handoff", None]}}
    )
    assert outcome.status == "failed"
    receipt = _receipt(outcome, "review")
    assert (receipt["result_code"], receipt["attempt"]) == ("fatal", 1)
    assert "handoff block is unusable" in receipt["error"]
    assert [log["fault"] for log in _logs(outcome, "review")] == ["malformed_handoff"]
    assert _ends(outcome)[-2:] == [("step_error", "review"), ("run_completed", None)]


def test_an_empty_reply_succeeds_with_no_text(flows: Path, tmp_path: Path) -> None:
    outcome = run_flows(flows, tmp_path / "runs", scenario={"faults": {"review": ["empty_reply"]}})
    assert outcome.status == "succeeded", outcome.error
    receipt = _receipt(outcome, "review")
    assert (receipt["result_code"], receipt["attempt"]) == ("ok", 1)
    transcript = (outcome.path / "demo" / "llm" / "review-worker-claude.jsonl").read_text()
    assert json.loads(transcript.splitlines()[-1])["content"] == ""
    assert [log["fault"] for log in _logs(outcome, "review")] == ["empty_reply"]


def test_a_cli_exit_is_fatal_naming_the_status(flows: Path, tmp_path: Path) -> None:
    outcome = run_flows(
        flows, tmp_path / "runs", scenario={"faults": {"draft": [{"kind": "cli_exit", "code": 7}]}}
    )
    assert outcome.status == "failed"
    receipt = _receipt(outcome, "draft")
    assert receipt["result_code"] == "fatal" and "status 7" in receipt["error"]
    assert _ends(outcome) == [("step_error", "draft"), ("run_completed", None)]


def test_entries_are_taken_in_order_across_the_executions_of_a_step(tmp_path: Path) -> None:
    flows = tmp_path / "flows"
    loop = """
        routing:
          kind: microloop
          loop_target: write
          loop_condition_field: status
          loop_success_values: [VERIFIED]
          max_iterations: 3
    """
    write_flow(flows, "demo", [step_yaml("write"), step_yaml("check", loop)])
    # check runs twice (the stub's default loop): attempt 1 of execution 1 is a 429, its
    # retry clean; attempt 1 of execution 2 is a 500, its retry clean.
    plan = {"check": [{"kind": "http_429", "retry_after_ms": 0}, None, "http_500"]}
    outcome = run_flows(flows, tmp_path / "runs", scenario={"faults": plan}, jitter=lambda: 0.0)
    assert outcome.status == "succeeded", outcome.error
    injected = [
        (e["payload"]["fault"], e["payload"]["message"])
        for e in events_of(outcome)
        if e["kind"] == "log" and "fault" in e["payload"]
    ]
    assert [fault for fault, _ in injected] == ["http_429", "http_500"]
    assert "(execution 1)" in injected[0][1] and "(execution 2)" in injected[1][1]


def test_a_plan_given_on_its_own_replaces_the_scenarios(flows: Path, tmp_path: Path) -> None:
    scenario_plan = {"faults": {"review": ["http_500"] * 3}}
    from swarm_runtime.engines.scenario import Scenario

    outcome = Orchestrator(
        FlowRegistry(flows),
        runs_dir=tmp_path / "runs",
        deps=RunDeps(sleep=lambda _s: None),
        engine=EngineChoice(
            scenario=Scenario.from_mapping(scenario_plan),
            faults=FaultPlan.from_mapping({"draft": ["timeout"]}, source="plan.yaml"),
        ),
    ).run(RunSpec(flows=("demo",)))
    assert outcome.status == "succeeded", outcome.error
    assert [log["fault"] for log in _logs(outcome, "draft") if "fault" in log] == ["timeout"]
    assert not [log for log in _logs(outcome, "review") if "fault" in log]
    assert (
        "fault plan plan.yaml: timeout injected into attempt 1"
        in _logs(outcome, "draft")[0]["message"]
    )


def test_a_cli_exit_in_cli_mode_ends_a_process_at_the_engines_boundary(tmp_path: Path) -> None:
    flows = tmp_path / "flows"
    write_flow(flows, "solo", [step_yaml("only")])
    # No CLI is installed: the faulted attempt never starts it, a process stands in for it.
    outcome = Orchestrator(
        FlowRegistry(flows),
        runs_dir=tmp_path / "runs",
        deps=RunDeps(sleep=lambda _s: None),
        engine=replace(
            claude_choice("cli", cli=str(tmp_path / "no-such-claude")),
            faults=FaultPlan.from_mapping({"only": [{"kind": "cli_exit", "code": 4}]}, source="p"),
        ),
    ).run(RunSpec(flows=("solo",)))
    assert outcome.status == "failed"
    receipt = json.loads((outcome.path / "solo" / "receipts" / "only-worker.json").read_text())
    assert (receipt["mode"], receipt["result_code"], receipt["attempt"]) == ("cli", "fatal", 1)
    assert "Claude Code CLI exited with status 4 without a result line" in receipt["error"]
    assert "exit 4 injected by the fault plan" in receipt["error"]

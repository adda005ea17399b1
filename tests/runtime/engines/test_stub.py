"""The stub engine: deterministic replies, scripted by scenarios."""

from __future__ import annotations

from pathlib import Path

from swarm_runtime.orchestrator.deps import EngineChoice, RunDeps
from tests.runtime.helpers import events_of, run_flows, step_yaml, write_flow


def test_scripted_text_with_its_own_handoff_is_used_as_is(tmp_path: Path) -> None:
    flows = tmp_path / "flows"
    branch = "routing: {kind: branch, branch_field: decision, branches: {GO: two, STOP: three}}"
    write_flow(
        flows,
        "b",
        [step_yaml("one", branch), step_yaml("two", "routing: {next: three}"), step_yaml("three")],
    )
    outcome = run_flows(
        flows,
        tmp_path / "runs",
        ("b",),
        scenario={"one": {"text": "done\n```handoff\ndecision: STOP\n```"}},
    )
    started = [e["step_id"] for e in events_of(outcome) if e["kind"] == "step_start"]
    assert started == ["one", "three"]


def test_a_scripted_delay_past_the_step_deadline_is_a_retryable_timeout(tmp_path: Path) -> None:
    from swarm_runtime.contracts.check import validate_run_dir
    from swarm_runtime.engines.scenario import Scenario
    from swarm_runtime.flow.registry import FlowRegistry
    from swarm_runtime.orchestrator.plan import RunSpec
    from swarm_runtime.orchestrator.runner import Orchestrator

    flows = tmp_path / "flows"
    write_flow(flows, "slow", [step_yaml("wait") + "    timeout_s: 0.25\n"])
    slept: list[float] = []
    outcome = Orchestrator(
        FlowRegistry(flows),
        runs_dir=tmp_path / "runs",
        deps=RunDeps(sleep=slept.append, jitter=lambda: 1.0),
        engine=EngineChoice(scenario=Scenario.from_mapping({"wait": {"delay_ms": 600_000}})),
    ).run(RunSpec(flows=("slow",)))
    assert outcome.status == "failed"
    assert "scripted delay of 600000 ms is past the step's deadline of 0.25 s" in (
        outcome.error or ""
    )
    assert slept.count(0.25) == 3  # each attempt waits out the deadline, never the delay
    assert 600.0 not in slept
    logs = [e for e in events_of(outcome) if e["kind"] == "log"]
    assert len(logs) == 2  # retryable: three attempts
    assert validate_run_dir(outcome.path) == []

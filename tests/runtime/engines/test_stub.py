"""The stub engine: deterministic replies, scripted by scenarios."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from swarm_runtime.orchestrator.plan import EngineChoice, RunDeps
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
    from swarm_runtime.orchestrator.run import Orchestrator

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


def _gated(tmp_path: Path, gate: Path, sleep: Any) -> Any:
    from swarm_runtime.engines.scenario import Scenario
    from swarm_runtime.flow.registry import FlowRegistry
    from swarm_runtime.orchestrator.plan import RunSpec
    from swarm_runtime.orchestrator.run import Orchestrator

    flows = tmp_path / "flows"
    write_flow(flows, "g", [step_yaml("one"), step_yaml("held") + "    timeout_s: 1\n"])
    scenario = Scenario.from_mapping({"held": {"wait_for": str(gate)}})
    return Orchestrator(
        FlowRegistry(flows),
        runs_dir=tmp_path / "runs",
        deps=RunDeps(sleep=sleep, jitter=lambda: 0.0),
        engine=EngineChoice(scenario=scenario),
    ).run(RunSpec(flows=("g",)))


def test_a_step_scripted_wait_for_answers_once_its_gate_file_exists(tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    naps: list[float] = []

    def sleep(seconds: float) -> None:  # the test opens the gate on the step's third look
        naps.append(seconds)
        if len(naps) == 3:
            gate.touch()

    outcome = _gated(tmp_path, gate, sleep)
    assert outcome.status == "succeeded"
    assert len(naps) == 3  # held until the gate opened, and not a look longer
    held = [e for e in events_of(outcome) if e["step_id"] == "held"]
    assert [e["kind"] for e in held][:2] == ["step_start", "step_end"]


def test_a_gate_never_opened_is_a_retryable_timeout_at_the_step_deadline(
    tmp_path: Path,
) -> None:
    from swarm_runtime.engines.stub import GATE_POLL_S

    naps: list[float] = []
    outcome = _gated(tmp_path, tmp_path / "never", naps.append)
    assert outcome.status == "failed"
    assert f"the stub's gate {tmp_path / 'never'} is past the step's deadline of 1 s" in (
        outcome.error or ""
    )
    # Three attempts, each looking for the gate for no longer than the deadline.
    assert sum(n for n in naps if n == GATE_POLL_S) == pytest.approx(3 * 1.0, abs=3 * GATE_POLL_S)

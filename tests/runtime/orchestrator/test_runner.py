"""The orchestrator's own settings are checked when it is built."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from swarm_runtime.contracts.check import validate_run_dir
from swarm_runtime.errors import ConfigError
from swarm_runtime.flow.registry import FlowRegistry
from swarm_runtime.orchestrator.plan import RunDeps, RunLimits, RunSpec
from swarm_runtime.orchestrator.run import Orchestrator
from tests.conftest import SHIPPED_FLOWS, StepClock
from tests.runtime.helpers import kinds, listening, run_flows, step_yaml, write_flow


@pytest.mark.parametrize("value", [0, -1, True])
def test_a_step_limit_below_one_is_refused(tmp_path: Path, value: int) -> None:
    with pytest.raises(ConfigError, match=r"max_steps must be a whole number >= 1"):
        Orchestrator(
            FlowRegistry(SHIPPED_FLOWS), runs_dir=tmp_path, limits=RunLimits(max_steps=value)
        )


def test_sdlc_stub_run_succeeds_and_validates(tmp_path: Path, clock: StepClock) -> None:
    outcome = run_flows(SHIPPED_FLOWS, tmp_path / "runs", clock=clock)
    assert outcome.status == "succeeded", outcome.error
    assert validate_run_dir(outcome.path) == []
    assert outcome.summary["total_steps_executed"] >= 50
    assert kinds(outcome)[0] == "run_created"
    assert kinds(outcome)[-1] == "run_completed"


def test_meta_status_says_succeeded_only_at_the_end(tmp_path: Path) -> None:
    seen: list[str] = []
    runs = tmp_path / "runs"

    def observer(event: dict[str, Any]) -> None:
        if event["kind"] == "route_decision" and event["payload"]["decision"] == "terminate":
            meta = json.loads((runs / event["run_id"] / "meta.json").read_text())
            seen.append(meta["status"])

    registry = FlowRegistry(SHIPPED_FLOWS)
    Orchestrator(registry, runs_dir=runs, deps=RunDeps(plugins=listening(observer))).run(
        RunSpec(flows=("signal", "plan"))
    )
    assert seen == ["running", "running"]


def test_a_back_edge_hits_the_step_limit_and_the_run_still_completes(tmp_path: Path) -> None:
    flows = tmp_path / "flows"
    write_flow(flows, "circle", [step_yaml("one"), step_yaml("two", "routing: {next: one}")])
    outcome = run_flows(flows, tmp_path / "runs", ("circle",), max_steps=7)
    assert outcome.status == "failed"
    assert "limit of 7 step executions" in (outcome.error or "")
    assert outcome.summary["total_steps_executed"] == 7
    assert kinds(outcome)[-1] == "run_completed"
    assert validate_run_dir(outcome.path) == []


def test_default_step_limit_scales_with_the_flows(tmp_path: Path) -> None:
    flows = tmp_path / "flows"
    write_flow(flows, "circle", [step_yaml("one"), step_yaml("two", "routing: {next: one}")])
    outcome = run_flows(flows, tmp_path / "runs", ("circle",))
    assert outcome.summary["total_steps_executed"] == 100  # max(100, 10 per step)

"""Planning a run: what a slice runs is what the run's files say it ran."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from swarm_runtime.errors import ConfigError, ScenarioError, SwarmUsageError
from swarm_runtime.flow.registry import FlowRegistry
from swarm_runtime.orchestrator.plan import EngineChoice, RunSpec
from swarm_runtime.orchestrator.run import Orchestrator
from tests.conftest import SHIPPED_FLOWS, CliResult
from tests.runtime.helpers import (
    events_of,
    route_decisions,
    run_flows,
)


def test_a_sliced_run_lists_only_the_flows_it_runs(tmp_path: Path) -> None:
    orchestrator = Orchestrator(FlowRegistry(SHIPPED_FLOWS), runs_dir=tmp_path / "runs")
    outcome = orchestrator.run(
        RunSpec(
            flows=("signal", "plan", "build", "review", "gate", "deploy", "wisdom"),
            start_step="plan/load_signal_context",
            end_step="build/implement_code",
        )
    )
    assert outcome.status == "succeeded", outcome.error
    meta = json.loads((outcome.path / "meta.json").read_text())
    assert meta["flows"] == ["plan", "build"]
    assert sorted(meta["flow_totals"]) == ["build", "plan"]
    created = events_of(outcome)[0]
    assert created["kind"] == "run_created" and created["payload"]["flows"] == ["plan", "build"]
    spec = json.loads((outcome.path / "spec.json").read_text())
    assert len(spec["flows"]) == 7  # what was asked for stays on record
    assert (spec["start_step"], spec["end_step"]) == (
        "plan/load_signal_context",
        "build/implement_code",
    )


def test_runs_list_and_show_name_the_sliced_flows(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    assert cli("run", "--from", "review/collect_feedback", "--to", "gate/audit_receipts").code == 0
    listing = cli("runs", "list")
    row = listing.out.splitlines()[2]
    assert "review,gate" in row and "signal" not in row
    (run_dir,) = (tmp_path / "swarm" / "runs").iterdir()
    shown = cli("runs", "show", run_dir.name)
    assert "flows: review, gate" in shown.out


def test_unknown_mode_is_refused_before_anything_is_written(
    loop_flows: Path, tmp_path: Path
) -> None:
    orchestrator = Orchestrator(
        FlowRegistry(loop_flows), runs_dir=tmp_path / "runs", engine=EngineChoice(mode="warp")
    )
    with pytest.raises(ConfigError, match="no 'warp' mode"):
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


def test_config_mistakes_are_errors(tmp_path: Path) -> None:
    registry = FlowRegistry(SHIPPED_FLOWS)
    with pytest.raises(ConfigError, match="engine_strategy: flow 'signal' has no step 'nope'"):
        Orchestrator(
            registry,
            runs_dir=tmp_path / "r",
            engine=EngineChoice(strategy={"signal": {"nope": "claude-step"}}),
        ).run(RunSpec(flows=("signal",)))
    with pytest.raises(SwarmUsageError, match="no flow 'signl'"):
        Orchestrator(
            registry,
            runs_dir=tmp_path / "r",
            engine=EngineChoice(strategy={"signl": {"x": "claude-step"}}),
        ).run(RunSpec(flows=("signal",)))
    with pytest.raises(SwarmUsageError, match="listed more than once"):
        Orchestrator(registry, runs_dir=tmp_path / "r").run(RunSpec(flows=("signal", "signal")))
    assert not (tmp_path / "r").exists()

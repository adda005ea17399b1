"""Planning a run: what a slice runs is what the run's files say it ran."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from swarm_runtime.flow.registry import FlowRegistry
from swarm_runtime.orchestrator.runner import Orchestrator, RunSpec
from tests.conftest import SHIPPED_FLOWS, CliResult
from tests.runtime.helpers import events_of


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

"""Resume from Flow Studio is the one resume: a run made with its own flows dir and a stub
scenario, SIGKILLed inside seeded step executions (each held by a gate, the stub's
``wait_for``, until the kill has landed), resumed through the API as the page does, ends as
the same run left alone would have (receipts and routing)."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from swarm_runtime.contracts.check import validate_run_dir
from swarm_runtime.golden import normalise_value
from swarm_runtime.storage.store import read_event_log
from tests.conftest import SHIPPED_FLOWS
from tests.e2e.processes import held_at, wait_for_step
from tests.studio.conftest import LOCAL, SWARM, Project, swarm_env

pytestmark = pytest.mark.swarm_modes("stub")

KILLS = 6

SCENARIO: dict[str, Any] = {"critique_requirements": {"handoff": {"status": "REJECTED"}}}
"""A critic that never approves: the loop ends at max_iterations, not on success."""


def _args(flows: Path, runs: Path, scenario: Path, progress: str = "never") -> list[str]:
    return [
        *SWARM,
        "run",
        "signal",
        "--flows-dir",
        str(flows),
        "--runs-dir",
        str(runs),
        "--scenario",
        str(scenario),
        "--progress",
        progress,
    ]


def _receipts(run_dir: Path) -> dict[str, Any]:
    return {
        str(p.relative_to(run_dir)): normalise_value(json.loads(p.read_text("utf-8")))
        for p in sorted(run_dir.glob("*/receipts/*.json"))
    }


def _routing(run_dir: Path) -> list[Any]:
    events = read_event_log(run_dir / "events.jsonl").events
    return [normalise_value(e["payload"]) for e in events if e["kind"] == "route_decision"]


def _killed(workdir: Path, flows: Path, held: tuple[str, int]) -> Path:
    """A run SIGKILLed inside execution ``held`` of a step (held there by a gate, opened
    once the kill has landed); its dir."""
    gate = workdir / "gate"
    scenario = workdir / "held.yaml"
    step = held[0].split("/")[1]
    scenario.write_text(yaml.safe_dump(held_at(SCENARIO, step, held[1], gate)), "utf-8")
    runs = workdir / "runs"
    proc = subprocess.Popen(
        _args(flows, runs, scenario, "always"),
        cwd=workdir,
        env=swarm_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    try:
        wait_for_step(proc, *held)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
    gate.touch()
    (run_dir,) = runs.iterdir()
    return run_dir


def test_a_scenario_run_of_its_own_flows_dir_resumed_from_the_studio_is_the_same_run(
    tmp_path: Path, client_for: Any
) -> None:
    flows = tmp_path / "my-flows"  # not the studio's flows dir: the run's own
    shutil.copytree(SHIPPED_FLOWS, flows)
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(yaml.safe_dump(SCENARIO), encoding="utf-8")
    base = tmp_path / "base"
    base.mkdir()
    done = subprocess.run(
        _args(flows, base / "runs", scenario), cwd=base, env=swarm_env(), timeout=300
    )
    assert done.returncode == 0
    (expected_run,) = (base / "runs").iterdir()
    expected, routing = _receipts(expected_run), _routing(expected_run)
    assert any(r.get("reason") == "max_iterations" for r in routing)
    executions = [
        (f"{e['flow_key']}/{e['step_id']}", e["payload"]["iteration"])
        for e in read_event_log(expected_run / "events.jsonl").events
        if e["kind"] == "step_start"
    ]

    for number, held in enumerate(random.Random(20261124).sample(executions, KILLS)):
        workdir = tmp_path / f"kill-{number}"
        workdir.mkdir()
        run_dir = _killed(workdir, flows, held)
        project = Project(workdir)  # the studio's flows dir: the shipped ones, elsewhere
        project.runs_dir = workdir / "runs"
        client = client_for(project.config())
        answer = client.post(f"/api/runs/{run_dir.name}/resume", headers={"Origin": LOCAL})
        assert answer.status_code == 200, answer.text
        backend = client.app.state.studio.actions.backend("claude-step-orchestrator", "stub")
        assert backend.wait(run_dir.name, timeout=120)["status"] == "succeeded"
        events = read_event_log(run_dir / "events.jsonl").events
        (cut,) = [e for e in events if e["kind"] == "step_error"]
        assert (f"{cut['flow_key']}/{cut['step_id']}", cut["payload"]["error"]) == (
            held[0],
            "interrupted",
        )
        assert _receipts(run_dir) == expected
        assert _routing(run_dir) == routing
        assert validate_run_dir(run_dir) == []

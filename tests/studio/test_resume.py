"""Resume from Flow Studio is the one resume: a run made with its own flows dir and a stub
scenario, SIGKILLed at seeded instants, resumed through the API as the page does, ends as
the same run left alone would have (receipts and routing)."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from swarm_runtime.contracts.check import validate_run_dir
from swarm_runtime.flow.registry import FlowRegistry
from swarm_runtime.golden import normalise_value
from swarm_runtime.storage.store import read_event_log
from tests.conftest import SHIPPED_FLOWS
from tests.studio.conftest import LOCAL, SWARM, Project, swarm_env

pytestmark = pytest.mark.swarm_modes("stub")

KILLS = 6


def _scenario(path: Path) -> Path:
    steps = FlowRegistry(SHIPPED_FLOWS).get("signal").steps
    # Long enough a wait per step that the run, not the process start-up, fills its time.
    entries: dict[str, Any] = {step.id: {"delay_ms": 100} for step in steps}
    # A critic that never approves: the loop ends at max_iterations, not on success.
    entries["critique_requirements"] = {"delay_ms": 100, "handoff": {"status": "REJECTED"}}
    path.write_text(yaml.safe_dump(entries), encoding="utf-8")
    return path


def _args(flows: Path, runs: Path, scenario: Path) -> list[str]:
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
        "never",
    ]


def _receipts(run_dir: Path) -> dict[str, Any]:
    return {
        str(p.relative_to(run_dir)): normalise_value(json.loads(p.read_text("utf-8")))
        for p in sorted(run_dir.glob("*/receipts/*.json"))
    }


def _routing(run_dir: Path) -> list[Any]:
    events = read_event_log(run_dir / "events.jsonl").events
    return [normalise_value(e["payload"]) for e in events if e["kind"] == "route_decision"]


def _killed(workdir: Path, flows: Path, scenario: Path, instant: float) -> Path | None:
    runs = workdir / "runs"
    proc = subprocess.Popen(
        _args(flows, runs, scenario),
        cwd=workdir,
        env=swarm_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        proc.wait(timeout=instant)  # the kill instant, not a wait for something
        return None
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    dirs = list(runs.iterdir()) if runs.is_dir() else []
    if not dirs or not (dirs[0] / "spec.json").exists():
        return None
    return dirs[0]


def test_a_scenario_run_of_its_own_flows_dir_resumed_from_the_studio_is_the_same_run(
    tmp_path: Path, client_for: Any
) -> None:
    flows = tmp_path / "my-flows"  # not the studio's flows dir: the run's own
    shutil.copytree(SHIPPED_FLOWS, flows)
    scenario = _scenario(tmp_path / "scenario.yaml")
    base = tmp_path / "base"
    base.mkdir()
    began = time.monotonic()
    done = subprocess.run(
        _args(flows, base / "runs", scenario), cwd=base, env=swarm_env(), timeout=300
    )
    took = time.monotonic() - began
    assert done.returncode == 0
    (expected_run,) = (base / "runs").iterdir()
    expected, routing = _receipts(expected_run), _routing(expected_run)
    assert any(r.get("reason") == "max_iterations" for r in routing)

    seeded = random.Random(20261124)
    resumed = 0
    missed = 0
    for number in range(KILLS * 6):  # a loaded machine shifts instants: some land outside
        if resumed == KILLS:
            break
        workdir = tmp_path / f"kill-{number}"
        workdir.mkdir()
        run_dir = _killed(workdir, flows, scenario, seeded.uniform(0.25, 0.9) * took)
        if run_dir is None:
            missed += 1
            continue
        project = Project(workdir)  # the studio's flows dir: the shipped ones, elsewhere
        project.runs_dir = workdir / "runs"
        client = client_for(project.config())
        answer = client.post(f"/api/runs/{run_dir.name}/resume", headers={"Origin": LOCAL})
        if answer.status_code == 409 and "succeeded" in answer.text:
            missed += 1
            continue  # killed after the run had ended: nothing to resume
        assert answer.status_code == 200, answer.text
        backend = client.app.state.studio.actions.backend("claude-step-orchestrator", "stub")
        assert backend.wait(run_dir.name, timeout=120)["status"] == "succeeded"
        assert _receipts(run_dir) == expected
        assert _routing(run_dir) == routing
        assert validate_run_dir(run_dir) == []
        resumed += 1
    assert resumed == KILLS, f"{missed} kills landed before the run began or after it ended"

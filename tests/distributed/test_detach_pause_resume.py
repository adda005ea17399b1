"""A run handed to the workers with ``--detach``, paused and resumed from other shells.

SPEC §8.3: ``swarm pause|stop|resume RUN`` work the same for a run a worker runs: a
request goes through the run dir to whoever holds the run's lease, and a paused run is
resumed from another shell (here, in that shell's process) or handed to the workers again
through the run service.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from swarm_runtime.distributed.follow import follow
from swarm_runtime.service import new_backend
from swarm_runtime.storage.store import read_event_log
from tests.conftest import REPO
from tests.distributed.conftest import Workers, swarm, swarm_env

pytestmark = pytest.mark.swarm_modes("stub")


def _slow_scenario(path: Path) -> Path:
    """Every step of the signal flow waits a little, so a pause lands mid-run."""
    from swarm_runtime.flow.registry import FlowRegistry

    flow = FlowRegistry(REPO / "flows").get("signal")
    path.write_text(
        yaml.safe_dump({f"signal/{step.id}": {"delay_ms": 150} for step in flow.steps}), "utf-8"
    )
    return path


def _sh(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(swarm(*args), env=swarm_env(), capture_output=True, text=True)


def _detach(workers: Workers, scenario: Path) -> str:
    done = _sh(
        "run", "signal",
        "--flows-dir", str(REPO / "flows"),
        "--runs-dir", str(workers.runs_dir),
        "--scenario", str(scenario),
        "--backend", "celery",
        "--broker", workers.broker,
        "--detach",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    run_id = done.stdout.strip()
    assert done.stdout == run_id + "\n"  # only the run id on stdout
    return run_id


class _StepBegun(Exception):
    pass


def _first_step_started(run_dir: Path) -> None:
    """Follow the run's events (as ``swarm run`` does) until a worker has begun a step."""

    def stop_at_a_step(event: dict[str, object]) -> None:
        if event["kind"] == "step_start":
            raise _StepBegun

    with pytest.raises(_StepBegun):
        follow(run_dir, observer=stop_at_a_step, timeout=120)


def test_detached_run_paused_and_resumed_from_other_shells_finishes(
    workers: Workers, tmp_path: Path
) -> None:
    workers.start()
    run_id = _detach(workers, _slow_scenario(tmp_path / "slow.yaml"))
    run_dir = workers.runs_dir / run_id
    _first_step_started(run_dir)

    paused = _sh("pause", run_id, "--runs-dir", str(workers.runs_dir))
    assert paused.returncode == 0, paused.stderr
    assert f"asked run {run_id}" in paused.stdout
    assert follow(run_dir, timeout=120).status == "paused"
    listed = _sh("runs", "list", "--runs-dir", str(workers.runs_dir))
    assert "paused" in listed.stdout

    resumed = _sh("resume", run_id, "--runs-dir", str(workers.runs_dir), "--progress", "never")
    assert resumed.returncode == 0, resumed.stderr
    assert f"run {run_id}: succeeded" in resumed.stdout
    kinds = [e["kind"] for e in read_event_log(run_dir / "events.jsonl").events]
    assert kinds.count("run_paused") == 1
    assert kinds.count("run_resumed") == 1
    assert kinds.count("run_completed") == 1


def test_the_run_service_pauses_and_hands_a_run_to_the_workers_again(
    workers: Workers, tmp_path: Path
) -> None:
    workers.start()
    backend = new_backend(
        "celery",
        runs_dir=workers.runs_dir,
        flows_dir=REPO / "flows",
        env={"SWARM_BROKER_URL": workers.broker},
        scenario=None,
    )
    run_id = _detach(workers, _slow_scenario(tmp_path / "slow.yaml"))
    run_dir = workers.runs_dir / run_id
    _first_step_started(run_dir)
    assert backend.is_running(run_id)
    backend.pause(run_id, "a pause from the service")
    assert backend.wait(run_id, timeout=120)["status"] == "paused"

    backend.resume(run_id)  # wait() must not take the paused meta.json for the end
    assert backend.wait(run_id, timeout=120)["status"] == "succeeded"
    events = read_event_log(run_dir / "events.jsonl").events
    resumed = [e for e in events if e["kind"] == "run_resumed"]
    assert [e["payload"]["previous_status"] for e in resumed] == ["paused"]


def test_flow_studio_lists_pauses_and_resumes_a_run_of_the_workers(
    workers: Workers, tmp_path: Path
) -> None:
    from starlette.testclient import TestClient

    from swarm_runtime.studio.app import StudioConfig, create_app

    local = "http://127.0.0.1:5000"
    workers.start()
    run_id = _detach(workers, _slow_scenario(tmp_path / "slow.yaml"))
    run_dir = workers.runs_dir / run_id
    _first_step_started(run_dir)
    app = create_app(StudioConfig(runs_dir=workers.runs_dir, flows_dir=REPO / "flows"))
    client = TestClient(app, base_url=local)
    try:
        listed = client.get("/api/runs").json()["runs"]
        assert [(r["run_id"], r["status"]) for r in listed] == [(run_id, "running")]
        paused = client.post(f"/api/runs/{run_id}/pause", headers={"Origin": local})
        assert paused.status_code == 200, paused.text
        assert follow(run_dir, timeout=120).status == "paused"
        resumed = client.post(f"/api/runs/{run_id}/resume", headers={"Origin": local})
        assert resumed.status_code == 200, resumed.text
        # No broker is set where the studio runs: it resumes the run in its own process.
        backend = app.state.studio.actions.backend("claude-step-orchestrator", "stub")
        assert backend.wait(run_id, timeout=120)["status"] == "succeeded"
    finally:
        app.state.studio.actions.shutdown()
        app.state.studio.index.close()

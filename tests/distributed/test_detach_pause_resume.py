"""A run handed to the workers with ``--detach``, paused and resumed from other shells.

docs/run-control.md#runs-across-machines: ``swarm pause|stop|resume RUN`` work the same for a run a
worker runs: a request goes through the run dir to whoever holds the run's lease, and a paused run
is resumed from another shell (here, in that shell's process) or handed to the workers again
through the run service. The run's first step is held by a gate (the stub's ``wait_for``)
until the pause has been asked for, so the pause lands mid-run however slow the machine is.
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
from tests.e2e.processes import step_started, wait_for_event

pytestmark = pytest.mark.swarm_modes("stub")


def _held_scenario(tmp_path: Path) -> Path:
    """The signal flow's first step held until the test creates ``tmp_path / "gate"``."""
    path = tmp_path / "held.yaml"
    held = {"signal/normalize_request": {"wait_for": str(tmp_path / "gate")}}
    path.write_text(yaml.safe_dump(held), "utf-8")
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


def _first_step_started(run_dir: Path) -> None:
    """Follow the run's events (as ``swarm run`` does) until a worker is in the held step."""
    wait_for_event(run_dir, step_started("signal/normalize_request"))


def test_detached_run_paused_and_resumed_from_other_shells_finishes(
    workers: Workers, tmp_path: Path
) -> None:
    workers.start()
    run_id = _detach(workers, _held_scenario(tmp_path))
    run_dir = workers.runs_dir / run_id
    _first_step_started(run_dir)

    paused = _sh("pause", run_id, "--runs-dir", str(workers.runs_dir))
    (tmp_path / "gate").touch()
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
    run_id = _detach(workers, _held_scenario(tmp_path))
    run_dir = workers.runs_dir / run_id
    _first_step_started(run_dir)
    assert backend.is_running(run_id)
    backend.pause(run_id, "a pause from the service")
    (tmp_path / "gate").touch()
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
    run_id = _detach(workers, _held_scenario(tmp_path))
    run_dir = workers.runs_dir / run_id
    _first_step_started(run_dir)
    app = create_app(StudioConfig(runs_dir=workers.runs_dir, flows_dir=REPO / "flows"))
    client = TestClient(app, base_url=local)
    try:
        listed = client.get("/api/runs").json()["runs"]
        assert [(r["run_id"], r["status"]) for r in listed] == [(run_id, "running")]
        paused = client.post(f"/api/runs/{run_id}/pause", headers={"Origin": local})
        (tmp_path / "gate").touch()
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

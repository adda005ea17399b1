"""A worker goes on serving after Redis was lost and came back
(docs/run-control.md#runs-across-machines).

Redis is killed while a worker runs a run; the run ends (here: paused from another shell)
while Redis is down, so the worker cannot acknowledge its task. Celery logs such a failed
acknowledgement and carries on, but the message stays counted as unacknowledged and a
worker that takes one task at a time never consumed again: the next run waited forever.
Now the worker says it lost the broker, connects again once Redis is back, and takes runs.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from swarm_runtime.cli.main import main
from swarm_runtime.distributed.follow import follow
from swarm_runtime.flow.registry import FlowRegistry
from swarm_runtime.storage.status import observed_status
from tests.conftest import REPO
from tests.distributed.conftest import RedisServer, Workers, swarm, swarm_env
from tests.e2e.processes import held_at, wait_for_event

pytestmark = pytest.mark.swarm_modes("stub")


def _gated_signal(path: Path, gate: Path) -> Path:
    """The signal flow with its first step held until ``gate`` exists: the run cannot end
    before the test has killed Redis, however slow the machine."""
    first = FlowRegistry(REPO / "flows").get("signal").steps[0].id
    scenario = held_at({}, f"signal/{first}", 0, gate)
    path.write_text(yaml.safe_dump(scenario), "utf-8")
    return path


def _run_args(workers: Workers, *more: str) -> list[str]:
    flows = ["--flows-dir", str(REPO / "flows"), "--runs-dir", str(workers.runs_dir)]
    return ["run", "signal", *flows, "--backend", "celery", "--broker", workers.broker, *more]


def test_a_worker_takes_runs_again_after_redis_was_lost_mid_run(
    redis_server: RedisServer, workers: Workers, tmp_path: Path
) -> None:
    worker = workers.start()
    gate = tmp_path / "gate"
    scenario = str(_gated_signal(tmp_path / "gated.yaml", gate))
    done = subprocess.run(
        swarm(*_run_args(workers, "--scenario", scenario, "--detach")),
        env=swarm_env(),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    run_id = done.stdout.strip()
    run_dir = workers.runs_dir / run_id
    wait_for_event(run_dir, lambda event: event["kind"] == "step_start")

    redis_server.kill()
    assert observed_status(run_dir) == "running"  # held at its gate: it outlives Redis
    assert main(["pause", run_id, "--runs-dir", str(workers.runs_dir)]) == 0
    gate.touch()  # the step ends, and the run pauses at its boundary
    assert follow(run_dir, timeout=120).status == "paused"
    # Its task ended while Redis was down: the acknowledgement failed.
    workers.wait_said(worker, "lost the broker")
    redis_server.start()  # empty: what was queued or unacknowledged is gone with it

    # The worker takes a new run and runs it.
    done = subprocess.run(
        swarm(*_run_args(workers, "--detach")), env=swarm_env(), capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    outcome = follow(workers.runs_dir / done.stdout.strip(), timeout=300)
    assert outcome.status == "succeeded", workers.said
    assert worker.poll() is None
    said = "".join(workers.said[worker.pid])
    assert "connected to the broker" in said and "again" in said
    assert "Traceback" not in said

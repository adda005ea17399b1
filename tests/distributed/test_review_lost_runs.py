"""Holes found in review: a run a worker cannot see is kept, a torn broker URL is said.

A worker whose shared runs dir is not mounted (an empty local dir at the same path) used to
take a run's task, say so in its own log and drop it: the run stayed ``queued`` for good and
``swarm run`` followed it forever. Now the task is delivered again until a worker that sees
the run takes it. A broker URL that does not parse is a clear error with its password
masked, not a traceback.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from swarm_runtime.distributed.follow import follow
from tests.conftest import REPO
from tests.distributed.conftest import Workers, queued_messages, swarm, swarm_env

pytestmark = pytest.mark.swarm_modes("stub")

PASSWORD = "hunter2-not-a-real-password"


def test_a_worker_that_cannot_see_the_run_leaves_it_for_one_that_can(
    workers: Workers, tmp_path: Path
) -> None:
    unmounted = tmp_path / "not-mounted"
    unmounted.mkdir()
    flows = str(REPO / "flows")
    args = ["run", "signal", "--flows-dir", flows, "--runs-dir", str(workers.runs_dir)]
    args += ["--backend", "celery", "--broker", workers.broker, "--detach"]
    blind = subprocess.Popen(
        swarm("worker", "--broker", workers.broker, "--runs-dir", str(unmounted), "--lease", "2"),
        env=swarm_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert blind.stderr is not None
    try:
        for line in blind.stderr:
            if line.startswith("swarm worker: ready"):
                break
        done = subprocess.run(swarm(*args), env=swarm_env(), capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        run_id = done.stdout.strip()
        for line in blind.stderr:  # it takes the task and says it cannot see the run
            if run_id in line:
                assert "not in this worker's runs dir" in line, line
                break
    finally:
        os.killpg(blind.pid, signal.SIGTERM)  # stopped as an operator would, warm
        blind.wait()
        blind.stderr.close()
    assert queued_messages(workers.broker) == 1  # the run's task is not lost
    workers.start()
    outcome = follow(workers.runs_dir / run_id)
    assert outcome.status == "succeeded"


@pytest.mark.parametrize(
    "broker",
    [f"redis://user:{PASSWORD}@127.0.0.1:notaport/0", f"redis://user:{PASSWORD}@[::1/0"],
)
def test_a_broker_url_that_does_not_parse_is_a_clear_error_without_its_password(
    tmp_path: Path, broker: str
) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    run = ["run", "plan", "--flows-dir", str(REPO / "flows"), "--runs-dir", str(runs)]
    commands = [
        ["worker", "--broker", broker, "--runs-dir", str(runs)],
        [*run, "--backend", "celery", "--broker", broker],
    ]
    for command in commands:
        done = subprocess.run(swarm(*command), env=swarm_env(), capture_output=True, text=True)
        assert done.returncode == 2, (command[0], done.stderr)
        assert "Traceback" not in done.stderr, done.stderr
        assert PASSWORD not in done.stderr + done.stdout
        assert "redis://user:**@" in done.stderr, done.stderr
    assert list(runs.iterdir()) == []  # no run was made

"""Tasks no worker can run leave the queue, each said once
(docs/run-control.md#runs-across-machines).

A task whose arguments are not a run id, a ticket and a version (``../x-1``, a number,
too few) can never be run: it used to come back about once a second for good, the queue
never drained and the worker's log grew without bound. It is now dropped at its first
delivery, in one line. A run id no worker that took it can see (its run dir deleted while
it was queued) is delivered again for ``--give-up-after`` seconds, then dropped.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest

from swarm_runtime.distributed.app import TASK_NAME, make_app
from swarm_runtime.versions import PACKAGE_VERSION
from tests.conftest import REPO
from tests.distributed.conftest import Workers, queued_messages, swarm, swarm_env, wait_until

pytestmark = pytest.mark.swarm_modes("stub")

TRAVERSALS = [f"../x-{n}" for n in range(100)]


def test_tasks_that_can_never_be_valid_are_dropped_and_said_once(workers: Workers) -> None:
    worker = workers.start()
    app = make_app(workers.broker, lease_s=workers.lease_s)
    send = app.send_task
    for run_id in TRAVERSALS:
        send(TASK_NAME, args=[run_id, "ticket", PACKAGE_VERSION], queue="swarm")
    send(TASK_NAME, args=["/etc", "ticket", PACKAGE_VERSION], queue="swarm")
    send(TASK_NAME, args=[5, "ticket", PACKAGE_VERSION], queue="swarm")
    send(TASK_NAME, args=["run-20270115-080000-abcdef"], queue="swarm")
    send(TASK_NAME, args=["run-20270115-080000-abcdef", "ticket", PACKAGE_VERSION],
         kwargs={"unseen": "many"}, queue="swarm")  # fmt: skip

    said = workers.said[worker.pid]

    def dropped() -> list[str]:
        return [line for line in list(said) if line.startswith("swarm worker: dropped a task: ")]

    def drained() -> bool:  # a task taken is out of Redis for a moment: its line says more
        return queued_messages(workers.broker) == 0 and len(dropped()) >= sent

    sent = len(TRAVERSALS) + 4
    wait_until(drained, "the queue to drain")
    assert len(dropped()) == sent, said
    for run_id in TRAVERSALS:
        assert sum(repr(run_id) in line for line in said) == 1, run_id
    assert any("'/etc'" in line for line in dropped())
    assert "Traceback" not in "".join(said)
    assert worker.poll() is None


def test_a_run_dir_deleted_while_queued_is_given_up_after_a_while(workers: Workers) -> None:
    flows = ["--flows-dir", str(REPO / "flows"), "--runs-dir", str(workers.runs_dir)]
    broker = ["--backend", "celery", "--broker", workers.broker, "--detach"]
    done = subprocess.run(
        swarm("run", "signal", *flows, *broker), env=swarm_env(), capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    run_id = done.stdout.strip()
    shutil.rmtree(workers.runs_dir / run_id)  # before any worker took it

    worker = workers.start(1, "--give-up-after", "2")
    workers.wait_said(worker, "dropped its task")
    wait_until(lambda: queued_messages(workers.broker) == 0, "the queue to drain")
    said = [line for line in workers.said[worker.pid] if run_id in line]
    assert len(said) == 2, said
    assert "delivered again for up to 2 s" in said[0] and "shared storage" in said[0]
    assert "dropped its task" in said[1] and "deleted" in said[1]
    assert worker.poll() is None

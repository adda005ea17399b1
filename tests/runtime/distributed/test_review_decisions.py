"""Holes found in review: a stale delivery racing a pause, a lease of a same-named machine.

A worker looks at a run dir without its lock, so what it reads must stay right while the
holder moves on; and a host name alone does not say whose pids a lock's pid is.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from swarm_runtime.distributed import submit as submit_module
from swarm_runtime.distributed import task as task_module
from swarm_runtime.distributed.task import Delivery, decide, handle
from swarm_runtime.orchestrator.checkpoint import write_request
from swarm_runtime.storage.lock import LOCK_NAME, RunLock, read_holder
from swarm_runtime.storage.status import observed_status
from swarm_runtime.storage.store import read_event_log
from tests.conftest import CliResult

pytestmark = pytest.mark.swarm_modes("stub")

ENV = {k: v for k, v in os.environ.items() if not k.startswith("SWARM_") or k == "SWARM_CACHE_DIR"}
NOW = 1_800_000_000.0


class _Broker:
    def __init__(self) -> None:
        self.sent: list[list[str]] = []

    def send_task(self, name: str, *, args: list[str], **_options: Any) -> None:
        self.sent.append(args)


@pytest.fixture
def queued(
    cli: Callable[..., CliResult], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> tuple[Path, Delivery]:
    """``swarm run plan --backend celery --detach``: the queued run dir and its task."""
    broker = _Broker()
    monkeypatch.setattr(submit_module, "check_broker", lambda url, **_kw: None)
    monkeypatch.setattr(submit_module, "make_app", lambda *_a, **_kw: broker)
    args = ("run", "plan", "--runs-dir", "runs", "--flows-dir", "flows")
    done = cli(*args, "--backend", "celery", "--broker", "redis://broker.invalid", "--detach")
    assert done.code == 0, done.err
    run_id, ticket, version = broker.sent[-1]
    return tmp_path / "runs" / run_id, Delivery(run_id, ticket, version)


def _handle(run_dir: Path, delivery: Delivery) -> str:
    return handle(run_dir.parent, delivery, env=ENV, host="worker.example")


def _set_status(run_dir: Path, status: str) -> None:
    meta = json.loads((run_dir / "meta.json").read_text("utf-8"))
    meta["status"] = status
    (run_dir / "meta.json").write_text(json.dumps(meta), "utf-8")


def test_a_stale_delivery_that_looks_while_its_run_pauses_does_not_resume_it(
    queued: tuple[Path, Delivery], monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir, delivery = queued
    write_request(run_dir / "control.json", "pause", "asked by the test")
    assert _handle(run_dir, delivery) == "ran"
    assert observed_status(run_dir) == "paused"
    # A worker runs it again (as `swarm resume` would): it holds the lease, meta running.
    holder = RunLock(run_dir)
    holder.acquire("now")
    _set_status(run_dir, "running")
    real_read_meta = task_module.read_meta

    def read_meta_while_it_pauses(path: Path) -> dict[str, Any] | None:
        seen = real_read_meta(path)
        if holder.held:  # the holder pauses and lets go right after this read
            _set_status(run_dir, "paused")
            holder.release()
        return seen

    monkeypatch.setattr(task_module, "read_meta", read_meta_while_it_pauses)
    verdict = _handle(run_dir, delivery)  # a delivery of the first hand-over, come late
    monkeypatch.undo()
    assert verdict in ("wait", "done")
    assert observed_status(run_dir) == "paused"
    kinds = [event["kind"] for event in read_event_log(run_dir / "events.jsonl").events]
    assert "run_resumed" not in kinds
    assert decide(run_dir, delivery) == "done"


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _lock(run_dir: Path, *, pid: int, expires: float, machine: str | None) -> None:
    document: dict[str, Any] = {
        "pid": pid,
        "host": os.uname().nodename,  # a container given the same host name
        "started": "",
        "since": "2027-01-15T08:00:00Z",
        "expires": expires,
        "lease_s": 30.0,
        "token": "theirs",
    }
    if machine is not None:
        document["machine"] = machine
    (run_dir / LOCK_NAME).write_text(json.dumps(document) + "\n", encoding="utf-8")


def test_a_lease_of_a_same_named_machine_is_judged_by_its_expiry_not_our_pids(
    tmp_path: Path,
) -> None:
    other = "another-boot-id/pid:[4026532999]"
    _lock(tmp_path, pid=_dead_pid(), expires=NOW + 30, machine=other)
    holder = read_holder(tmp_path)
    assert holder is not None
    assert holder.alive_at(NOW)  # its pid means nothing here: its lease still runs
    assert not holder.alive_at(NOW + 31)
    _lock(tmp_path, pid=os.getpid(), expires=NOW - 1, machine=other)
    holder = read_holder(tmp_path)
    assert holder is not None and not holder.alive_at(NOW)  # our pid is not its process


def test_a_lease_of_this_machine_is_still_judged_by_its_pid(tmp_path: Path) -> None:
    lock = RunLock(tmp_path)
    lock.acquire("now")
    try:
        mine = read_holder(tmp_path)
        assert mine is not None and mine.machine and mine.alive_at(NOW + 10_000)
        document = json.loads((tmp_path / LOCK_NAME).read_text("utf-8"))
    finally:
        lock.release()
    _lock(tmp_path, pid=_dead_pid(), expires=NOW + 30, machine=document["machine"])
    holder = read_holder(tmp_path)
    assert holder is not None and not holder.alive_at(NOW)  # dead here: stale at once
    _lock(tmp_path, pid=_dead_pid(), expires=NOW + 30, machine=None)  # an older lock
    holder = read_holder(tmp_path)
    assert holder is not None and not holder.alive_at(NOW)

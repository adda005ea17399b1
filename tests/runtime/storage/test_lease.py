"""The run lock as a lease (docs/run-control.md#runs-across-machines): judged by its expiry on
another host, by the pid here.

A lease that was taken over makes its old holder write nothing more, and ``swarm resume``
respects a live lease of another machine while it takes over an expired one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from swarm_runtime.storage import lock as lock_module
from swarm_runtime.storage.lock import LOCK_NAME, LeaseLost, RunLock, read_holder
from swarm_runtime.storage.queued import write_queued
from swarm_runtime.storage.status import observed_status
from tests.conftest import REPO, CliResult
from tests.runtime.helpers import crash_at_checkpoint, listening

pytestmark = pytest.mark.swarm_modes("stub")

NOW = 1_800_000_000.0
ELSEWHERE = "elsewhere.example"


def _write_lock(run_dir: Path, *, host: str, pid: int, expires: float, token: str) -> None:
    document = {
        "pid": pid,
        "host": host,
        "started": "",
        "since": "2027-01-15T08:00:00Z",
        "expires": expires,
        "lease_s": 30.0,
        "token": token,
    }
    (run_dir / LOCK_NAME).write_text(json.dumps(document) + "\n", encoding="utf-8")


def _dead_pid() -> int:
    """The pid of a process that has ended (and been reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _tree(run_dir: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(run_dir)): path.read_bytes()
        for path in sorted(run_dir.rglob("*"))
        if path.is_file()
    }


def test_a_lease_on_another_host_lives_until_its_expiry(tmp_path: Path) -> None:
    # The pid means nothing on another machine: ours is alive here, yet the lease decides.
    _write_lock(tmp_path, host=ELSEWHERE, pid=os.getpid(), expires=NOW + 10, token="t")
    holder = read_holder(tmp_path)
    assert holder is not None and holder.describe() == f"pid {os.getpid()} on {ELSEWHERE}"
    assert holder.alive_at(NOW)
    assert holder.alive_at(NOW + 9.9)
    assert not holder.alive_at(NOW + 10)
    _write_lock(tmp_path, host=ELSEWHERE, pid=os.getpid(), expires=NOW - 1, token="t")
    holder = read_holder(tmp_path)
    assert holder is not None and not holder.alive_at(NOW)


def test_on_this_host_a_dead_pid_is_stale_at_once_whatever_its_lease(tmp_path: Path) -> None:
    here = os.uname().nodename
    _write_lock(tmp_path, host=here, pid=_dead_pid(), expires=time.time() + 3600, token="t")
    holder = read_holder(tmp_path)
    assert holder is not None and not holder.alive_at(time.time())
    lock = RunLock(tmp_path)
    lock.acquire("now", take_over_stale=True)  # taken over although its lease runs for an hour
    try:
        mine = read_holder(tmp_path)
        assert mine is not None and mine.is_me(lock.token)
    finally:
        lock.release()


def test_renew_moves_the_expiry_on(tmp_path: Path) -> None:
    lock = RunLock(tmp_path)
    lock.acquire("now")
    try:
        document = json.loads((tmp_path / LOCK_NAME).read_text("utf-8"))
        document["expires"] = time.time() - 5  # as if the lease had nearly run out
        (tmp_path / LOCK_NAME).write_text(json.dumps(document), encoding="utf-8")
        lock.renew()
        holder = read_holder(tmp_path)
        assert holder is not None and holder.is_me(lock.token)
        assert holder.expires > time.time() + lock.lease_s / 2
        assert not lock.lost
    finally:
        lock.release()
    assert not (tmp_path / LOCK_NAME).exists()


def test_a_lease_taken_over_is_lost_and_its_new_holder_keeps_the_lock(tmp_path: Path) -> None:
    lock = RunLock(tmp_path)
    lock.acquire("now")
    _write_lock(tmp_path, host=ELSEWHERE, pid=4242, expires=time.time() + 60, token="other")
    with pytest.raises(LeaseLost, match="taken over"):
        lock.renew()
    assert lock.lost
    with pytest.raises(LeaseLost):
        lock.check()
    lock.release()
    holder = read_holder(tmp_path)
    assert holder is not None and (holder.host, holder.token) == (ELSEWHERE, "other")


def test_a_run_whose_lease_was_taken_over_writes_nothing_more(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from swarm_runtime.engines.scenario import Scenario
    from swarm_runtime.flow.registry import FlowRegistry
    from swarm_runtime.orchestrator.plan import EngineChoice, RunDeps, RunSpec
    from swarm_runtime.orchestrator.run import Orchestrator

    taken: list[RunLock] = []
    real_acquire = RunLock.acquire

    def acquire(self: RunLock, since: str, *, take_over_stale: bool = False) -> None:
        real_acquire(self, since, take_over_stale=take_over_stale)
        taken.append(self)

    monkeypatch.setattr(RunLock, "acquire", acquire)
    seen: dict[str, Any] = {}

    def observer(event: dict[str, Any]) -> None:
        if event["kind"] == "step_end" and "tree" not in seen:
            # Another worker took the lease over; this holder's heartbeat finds out.
            run_dir = tmp_path / "runs" / event["run_id"]
            _write_lock(run_dir, host=ELSEWHERE, pid=4242, expires=time.time() + 60, token="x")
            with pytest.raises(LeaseLost):
                taken[-1].renew()
            seen["tree"] = _tree(run_dir)

    orchestrator = Orchestrator(
        FlowRegistry(REPO / "flows"),
        runs_dir=tmp_path / "runs",
        deps=RunDeps(sleep=lambda _s: None, plugins=listening(observer)),
        engine=EngineChoice(scenario=Scenario.from_mapping({})),
    )
    with pytest.raises(LeaseLost):
        orchestrator.run(RunSpec(flows=("plan",)))
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert "tree" in seen
    assert _tree(run_dir) == seen["tree"]  # not one more event, receipt, checkpoint or meta
    holder = read_holder(run_dir)
    assert holder is not None and holder.token == "x"


def _crashed_run(cli: Callable[..., CliResult], monkeypatch: pytest.MonkeyPatch) -> Path:
    args = ("run", "plan", "--runs-dir", "runs", "--progress", "never")
    crash_at_checkpoint(monkeypatch, 2, before=False, run=lambda: cli(*args))
    (run_dir,) = Path("runs").resolve().iterdir()
    assert observed_status(run_dir) == "crashed"
    return run_dir


def test_resume_refuses_a_run_another_host_holds_and_takes_an_expired_lease_over(
    cli: Callable[..., CliResult], monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir = _crashed_run(cli, monkeypatch)
    _write_lock(run_dir, host=ELSEWHERE, pid=4242, expires=time.time() + 600, token="x")
    assert observed_status(run_dir) == "running"
    refused = cli("resume", str(run_dir), "--progress", "never")
    assert refused.code != 0
    assert f"pid 4242 on {ELSEWHERE}" in refused.err
    assert "Traceback" not in refused.err
    holder = read_holder(run_dir)
    assert holder is not None and holder.token == "x"  # left to its holder

    _write_lock(run_dir, host=ELSEWHERE, pid=4242, expires=time.time() - 1, token="x")
    assert observed_status(run_dir) == "crashed"
    resumed = cli("resume", str(run_dir), "--progress", "never")
    assert resumed.code == 0, resumed.err
    assert observed_status(run_dir) == "succeeded"
    assert not (run_dir / LOCK_NAME).exists()


def _meta(run_dir: Path, status: str) -> None:
    (run_dir / "meta.json").write_text(json.dumps({"status": status}), encoding="utf-8")


def test_observed_status_of_queued_crashed_and_paused_runs(tmp_path: Path) -> None:
    queued = tmp_path / "queued"
    queued.mkdir()
    write_queued(queued, "ticket", queue="swarm", since="2027-01-15T08:00:00Z")
    assert observed_status(queued) == "queued"  # no meta.json yet, nobody holds it
    _meta(queued, "pending")
    assert observed_status(queued) == "queued"
    _write_lock(queued, host=ELSEWHERE, pid=1, expires=time.time() + 600, token="x")
    assert observed_status(queued) == "pending"  # a worker elsewhere holds it
    _write_lock(queued, host=ELSEWHERE, pid=1, expires=time.time() - 1, token="x")
    assert observed_status(queued) == "queued"  # that worker's lease ran out

    crashed = tmp_path / "crashed"
    crashed.mkdir()
    _meta(crashed, "running")
    assert observed_status(crashed) == "crashed"
    _write_lock(crashed, host=os.uname().nodename, pid=_dead_pid(), expires=NOW * 2, token="x")
    assert observed_status(crashed) == "crashed"

    paused = tmp_path / "paused"
    paused.mkdir()
    _meta(paused, "paused")
    assert observed_status(paused) == "paused"


def test_a_lease_must_last(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lock_module, "_lease_s", lock_module.DEFAULT_LEASE_S)
    with pytest.raises(ValueError, match="more than 0 s"):
        lock_module.set_lease_seconds(0)
    lock_module.set_lease_seconds(7)
    assert lock_module.lease_seconds() == 7
    assert RunLock(Path(".")).lease_s == 7


def test_a_resume_waits_for_the_process_that_paused_the_run_and_only_so_long(
    tmp_path: Path,
) -> None:
    from swarm_runtime.errors import RunControlError
    from swarm_runtime.storage.status import wait_for_pauser

    run_dir = tmp_path / "run-20270115-080000-paused"
    run_dir.mkdir()
    events = run_dir / "events.jsonl"
    events.write_text(json.dumps({"kind": "run_pausing"}) + "\n" + '{"kind": "run_paused"}\n')
    lock = RunLock(run_dir)
    lock.acquire("2027-01-15T08:00:00Z")  # the pausing process, still closing the run
    said: list[str] = []
    naps: list[float] = []

    def lets_go_at_the_third_look(seconds: float) -> None:
        naps.append(seconds)
        if len(naps) == 3:
            lock.release()

    try:
        wait_for_pauser(run_dir, sleep=lets_go_at_the_third_look, notice=said.append)
        assert len(naps) == 3  # waited until it let go, not a look longer
        assert said == [
            f"run {run_dir.name} has just paused; waiting for pid {os.getpid()} on "
            f"{os.uname().nodename}, which paused it, to let go of it"
        ]
        lock.acquire("2027-01-15T08:00:01Z")
        with pytest.raises(RunControlError, match=r"which paused it, still holds it after 0.5 s"):
            wait_for_pauser(run_dir, sleep=naps.append, notice=said.append, patience_s=0.5)
        events.write_text(events.read_text() + '{"kind": "run_resumed"}\n')
        looked = len(naps)
        wait_for_pauser(run_dir, sleep=naps.append, notice=said.append)
        assert len(naps) == looked  # a holder that runs it: no wait, the lock refuses it
    finally:
        lock.release()


def test_the_last_event_comes_from_the_end_of_a_regular_log_only(tmp_path: Path) -> None:
    from swarm_runtime.storage.status import TAIL_BYTES, last_event_kind

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    assert last_event_kind(run_dir) is None  # no log yet
    long = json.dumps({"kind": "log", "payload": {"text": "x" * (2 * TAIL_BYTES)}})
    torn = '{"kind": "run_res'  # a kill mid-append: not an event
    (run_dir / "events.jsonl").write_text(f'{long}\n{{"kind": "run_paused"}}\n{torn}')
    assert last_event_kind(run_dir) == "run_paused"
    fifo = tmp_path / "fifo"
    fifo.mkdir()
    os.mkfifo(fifo / "events.jsonl")
    assert last_event_kind(fifo) is None  # answered at once: a FIFO is never read
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "events.jsonl").symlink_to(run_dir / "events.jsonl")
    assert last_event_kind(linked) is None  # never through a symlink

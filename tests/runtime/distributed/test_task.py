"""What a worker does with one delivery of a run's task, over run dirs of every kind
(docs/run-control.md#runs-across-machines).

The queued runs are made as a user makes them, ``swarm run --backend celery --detach``,
with the broker stood in for by an app that keeps the tasks sent.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from swarm_runtime.distributed import submit as submit_module
from swarm_runtime.distributed.follow import EventTail, RunRefused, follow
from swarm_runtime.distributed.task import Delivery, decide, handle
from swarm_runtime.errors import ConfigError
from swarm_runtime.orchestrator.checkpoint import write_request
from swarm_runtime.storage.lock import LOCK_NAME, RunLock
from swarm_runtime.storage.queued import QUEUED_NAME, read_refused
from swarm_runtime.storage.status import observed_status, read_meta
from swarm_runtime.storage.store import read_event_log
from swarm_runtime.versions import PACKAGE_VERSION
from tests.conftest import CliResult
from tests.runtime.helpers import crash_at_checkpoint, listening

pytestmark = pytest.mark.swarm_modes("stub")

ENV = {k: v for k, v in os.environ.items() if not k.startswith("SWARM_") or k == "SWARM_CACHE_DIR"}


class _Broker:
    """Stands in for the Celery app: keeps the tasks sent."""

    def __init__(self) -> None:
        self.sent: list[list[str]] = []

    def send_task(self, name: str, *, args: list[str], **_options: Any) -> None:
        self.sent.append(args)


Submit = Callable[..., tuple[Path, Delivery]]


@pytest.fixture
def submit(
    cli: Callable[..., CliResult], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Submit:
    """``swarm run FLOW --backend celery --detach``: the queued run dir and its task."""
    broker = _Broker()
    monkeypatch.setattr(submit_module, "check_broker", lambda url, **_kw: None)
    monkeypatch.setattr(submit_module, "make_app", lambda *_a, **_kw: broker)

    def run(*extra: str) -> tuple[Path, Delivery]:
        args = ("run", "plan", "--runs-dir", "runs", "--flows-dir", "flows", *extra)
        done = cli(*args, "--backend", "celery", "--broker", "redis://broker.invalid", "--detach")
        assert done.code == 0, done.err
        run_id, ticket, version = broker.sent[-1]
        assert done.out.strip() == run_id
        return tmp_path / "runs" / run_id, Delivery(run_id, ticket, version)

    return run


def _handle(run_dir: Path, delivery: Delivery) -> str:
    return handle(run_dir.parent, delivery, env=ENV, host="worker.example")


def _kinds(run_dir: Path) -> list[str]:
    return [event["kind"] for event in read_event_log(run_dir / "events.jsonl").events]


def _tree(run_dir: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(run_dir)): path.read_bytes()
        for path in sorted(run_dir.rglob("*"))
        if path.is_file()
    }


def test_a_queued_run_is_run_by_its_ticket_as_a_new_run_then_is_done(submit: Submit) -> None:
    run_dir, delivery = submit()
    assert observed_status(run_dir) == "queued"
    assert decide(run_dir, delivery) == "run"
    assert _handle(run_dir, delivery) == "ran"
    assert observed_status(run_dir) == "succeeded"
    kinds = _kinds(run_dir)
    assert kinds[:2] == ["run_created", "run_started"]
    assert "run_resumed" not in kinds
    assert not (run_dir / QUEUED_NAME).exists() and not (run_dir / LOCK_NAME).exists()
    before = _tree(run_dir)
    assert _handle(run_dir, delivery) == "done"  # delivered again: nothing to do
    assert _tree(run_dir) == before


def test_a_delivery_under_another_ticket_does_nothing(submit: Submit) -> None:
    run_dir, delivery = submit()
    before = _tree(run_dir)
    stale = Delivery(delivery.run_id, "an-older-ticket", delivery.version)
    assert _handle(run_dir, stale) == "done"
    assert _tree(run_dir) == before
    assert observed_status(run_dir) == "queued"


def test_a_crashed_run_is_resumed_from_its_checkpoint(
    submit: Submit, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir, delivery = submit()
    crash_at_checkpoint(monkeypatch, 2, before=False, run=lambda: _handle(run_dir, delivery))
    assert observed_status(run_dir) == "crashed"
    assert decide(run_dir, delivery) == "run"
    assert _handle(run_dir, delivery) == "ran"
    assert observed_status(run_dir) == "succeeded"
    kinds = _kinds(run_dir)
    assert kinds.count("run_created") == 1 and kinds.count("run_resumed") == 1


@pytest.mark.parametrize("request_", ["pause", "stop"])
def test_a_paused_or_stopped_run_is_not_resumed_by_a_stale_delivery(
    submit: Submit, request_: str
) -> None:
    run_dir, delivery = submit()
    write_request(run_dir / "control.json", request_, "asked by the test")
    assert _handle(run_dir, delivery) == "ran"
    status = observed_status(run_dir)
    assert status == {"pause": "paused", "stop": "stopped"}[request_]
    before = _tree(run_dir)
    assert _handle(run_dir, delivery) == "done"
    assert _tree(run_dir) == before


def test_a_run_held_by_a_live_lease_waits(submit: Submit) -> None:
    run_dir, delivery = submit()
    holder = RunLock(run_dir)
    holder.acquire("now")
    try:
        assert _handle(run_dir, delivery) == "wait"
        assert (run_dir / QUEUED_NAME).exists()
    finally:
        holder.release()
    assert _handle(run_dir, delivery) == "ran"


def test_another_package_version_is_refused_naming_both(submit: Submit) -> None:
    run_dir, delivery = submit()
    before = {k: v for k, v in _tree(run_dir).items() if k != QUEUED_NAME}
    other = Delivery(delivery.run_id, delivery.ticket, "0.0.0-other")
    assert _handle(run_dir, other) == "refused"
    message = read_refused(run_dir)
    assert message is not None
    assert PACKAGE_VERSION in message and "0.0.0-other" in message
    assert "worker.example" in message
    after = _tree(run_dir)
    assert {k: v for k, v in after.items() if k != "refused.json"} == before
    with pytest.raises(RunRefused, match=re.escape("0.0.0-other")):
        follow(run_dir, sleep=lambda _s: None)


def test_a_run_not_in_the_workers_runs_dir_is_a_clear_error(submit: Submit, tmp_path: Path) -> None:
    _, delivery = submit()
    elsewhere = tmp_path / "other-runs"
    elsewhere.mkdir()
    with pytest.raises(ConfigError) as caught:
        handle(elsewhere, delivery, env=ENV)
    assert str(elsewhere) in str(caught.value) and "shared storage" in str(caught.value)


def test_a_run_whose_flows_dir_is_gone_is_refused_with_the_reason(
    submit: Submit, tmp_path: Path
) -> None:
    run_dir, delivery = submit()
    shutil.rmtree(tmp_path / "flows")
    assert _handle(run_dir, delivery) == "refused"
    message = read_refused(run_dir)
    assert message is not None and "flows dir" in message and "is not there" in message
    assert not (run_dir / LOCK_NAME).exists()


def test_the_event_tail_waits_for_a_torn_last_line(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    tail = EventTail(path)
    assert tail.read() == []  # no log yet
    path.write_text('{"seq": 1}\n{"seq": 2}\n{"se', encoding="utf-8")
    assert tail.read() == [{"seq": 1}, {"seq": 2}]
    assert tail.read() == []
    with open(path, "a", encoding="utf-8") as stream:
        stream.write('q": 3}\n')
    assert tail.read() == [{"seq": 3}]


def test_follow_returns_how_an_ended_run_ended(submit: Submit) -> None:
    run_dir, delivery = submit()
    _handle(run_dir, delivery)
    seen: list[str] = []
    plugins = listening(lambda e: seen.append(e["kind"]))
    outcome = follow(run_dir, plugins=plugins, sleep=lambda _s: None)
    assert (outcome.run_id, outcome.status) == (delivery.run_id, "succeeded")
    assert seen == _kinds(run_dir)
    assert outcome.summary == read_meta(run_dir)


def test_follow_gives_up_after_its_timeout(submit: Submit) -> None:
    run_dir, _ = submit()
    naps: list[float] = []
    with pytest.raises(TimeoutError, match=f"run {run_dir.name} is still queued"):
        follow(run_dir, sleep=naps.append, timeout=0.0)
    assert all(nap == 0.1 for nap in naps)


def test_a_refused_run_is_said_by_follow(tmp_path: Path) -> None:
    run_dir = tmp_path / "run-x"
    run_dir.mkdir()
    (run_dir / "refused.json").write_text(json.dumps({"message": "not here", "host": "h"}))
    with pytest.raises(RunRefused, match="not here"):
        follow(run_dir, sleep=lambda _s: None)


def test_follow_waits_while_a_holder_takes_a_paused_run_up_again(tmp_path: Path) -> None:
    """A worker that took a paused run up again has not yet said so in meta.json: a
    follower (``wait()`` after ``resume()``) must not take ``paused`` for the end."""
    run_dir = tmp_path / "run-20270115-080000-abcdef"
    run_dir.mkdir()
    (run_dir / "meta.json").write_text(json.dumps({"status": "paused", "error": None}))
    lock = RunLock(run_dir)
    lock.acquire("now")
    try:
        with pytest.raises(TimeoutError):
            follow(run_dir, sleep=lambda _s: None, timeout=0.0)
    finally:
        lock.release()
    assert follow(run_dir, sleep=lambda _s: None, timeout=0.0).status == "paused"


class _Said(Exception):
    pass


@pytest.mark.parametrize(
    ("status", "queued", "expected"),
    [
        ("pending", True, "is still queued after 30 s: no worker has taken it"),
        ("running", False, "crashed (its worker was lost) and nothing has taken it up again"),
    ],
)
def test_a_follower_says_once_what_a_run_left_alone_waits_for(
    tmp_path: Path, status: str, queued: bool, expected: str
) -> None:
    """No worker listening (or none left): after a while with nothing new, the follower
    says what the run waits for, instead of waiting in silence."""
    from swarm_runtime.distributed.follow import Patience

    run_dir = tmp_path / "run-20270115-080000-abcdef"
    run_dir.mkdir()
    (run_dir / "meta.json").write_text(json.dumps({"status": status}))
    if queued:
        (run_dir / QUEUED_NAME).write_text(json.dumps({"ticket": "t"}))
    now = [0.0]
    said: list[str] = []

    def notice(text: str) -> None:
        said.append(text)
        raise _Said

    def sleep(seconds: float) -> None:
        assert not said  # said once, when the patience ran out
        now[0] += 10.0

    with pytest.raises(_Said):
        follow(run_dir, sleep=sleep, patience=Patience(notice, clock=lambda: now[0]))
    assert now[0] == 30.0
    (text,) = said
    assert expected in text and run_dir.name in text

"""The run lock: a stale lock is taken over by exactly one process, whatever the timing."""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from swarm_runtime.errors import RunControlError
from swarm_runtime.storage import lock as lock_module
from swarm_runtime.storage.lock import LOCK_NAME, RunLock, read_holder


def _stale_lock(run_dir: Path) -> None:
    # Our own pid with another start time: a pid that a later process has taken.
    holder = {"pid": os.getpid(), "host": os.uname().nodename, "started": "1", "since": ""}
    (run_dir / LOCK_NAME).write_text(json.dumps(holder) + "\n")


def test_two_takeovers_of_a_stale_lock_leave_one_holder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """B tries while A is between finding the lock stale and replacing it."""
    _stale_lock(tmp_path)
    a_judging = threading.Event()
    go_on = threading.Event()
    b_state = threading.Condition()
    b_seen: list[str] = []
    outcomes: dict[str, str] = {}
    real_read, real_guard = lock_module.read_holder, lock_module._guard

    def slow_read(run_dir: Path) -> object:
        holder = real_read(run_dir)
        if threading.current_thread().name == "A":
            a_judging.set()
            go_on.wait()  # the test lets A go on once B has done what it can
        return holder

    @contextlib.contextmanager
    def watched_guard(run_dir: Path) -> Iterator[None]:
        if threading.current_thread().name == "B":
            with b_state:
                b_seen.append("waiting")
                b_state.notify_all()
        with real_guard(run_dir):
            yield

    monkeypatch.setattr(lock_module, "read_holder", slow_read)
    monkeypatch.setattr(lock_module, "_guard", watched_guard, raising=False)

    def take(name: str) -> None:
        try:
            RunLock(tmp_path).acquire("now", take_over_stale=True)
            outcomes[name] = "held"
        except RunControlError as exc:
            outcomes[name] = f"refused: {exc}"
        with b_state:
            b_seen.append(f"{name} done")
            b_state.notify_all()

    a = threading.Thread(target=take, args=("A",), name="A")
    a.start()
    a_judging.wait()
    b = threading.Thread(target=take, args=("B",), name="B")
    b.start()
    with b_state:  # B either took the lock already or waits its turn; no timing involved
        b_state.wait_for(lambda: "waiting" in b_seen or "B done" in b_seen)
    go_on.set()
    a.join()
    b.join()
    assert list(outcomes.values()).count("held") == 1, outcomes
    assert "is being run by" in next(v for v in outcomes.values() if v != "held")


def test_a_lock_file_cut_short_by_a_crash_is_stale(tmp_path: Path) -> None:
    (tmp_path / LOCK_NAME).write_text("")  # created, killed before its holder was written
    assert read_holder(tmp_path) is None
    with pytest.raises(RunControlError, match="resume the run with 'swarm resume"):
        RunLock(tmp_path).acquire("now")
    lock = RunLock(tmp_path)
    lock.acquire("now", take_over_stale=True)
    holder = read_holder(tmp_path)
    assert holder is not None and holder.pid == os.getpid() and holder.alive
    lock.release()
    assert not (tmp_path / LOCK_NAME).exists()


def test_a_live_holder_is_named_and_kept(tmp_path: Path) -> None:
    first = RunLock(tmp_path)
    first.acquire("2026-01-01T00:00:00Z")
    with pytest.raises(RunControlError, match=rf"being run by pid {os.getpid()}"):
        RunLock(tmp_path).acquire("now", take_over_stale=True)
    assert read_holder(tmp_path) is not None
    first.release()


def test_letting_go_of_a_lock_waits_for_a_renewal_under_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process that lets go of a run while its heartbeat renews the lease must neither
    find the lock written back after it is gone nor leave the renewal's temporary file
    (the process may exit at once: ``swarm resume`` does)."""
    from swarm_runtime.storage import store

    monkeypatch.setattr(lock_module, "_lease_s", 0.3)  # a heartbeat every 0.1 s
    in_renewal, go_on = threading.Event(), threading.Event()
    write = store.write_text_atomic

    def held_write(path: Any, text: str, **options: Any) -> None:
        if threading.current_thread().name.startswith("lease-") and not in_renewal.is_set():
            in_renewal.set()
            go_on.wait()  # the renewal is under way: its write waits until release acts
        write(path, text, **options)

    monkeypatch.setattr(store, "write_text_atomic", held_write)
    unlink = os.unlink

    def watched_unlink(path: Any, *args: Any, **kwargs: Any) -> None:
        if os.fspath(path) == str(tmp_path / LOCK_NAME):
            go_on.set()  # the lock is let go of while the renewal is under way
        unlink(path, *args, **kwargs)

    monkeypatch.setattr(os, "unlink", watched_unlink)
    lock = RunLock(tmp_path)
    lock.acquire("now")
    mutex = lock._mutex

    class Watched:
        """The lock's mutex: letting go of the lock says so as it asks for the mutex."""

        def __enter__(self) -> None:
            if threading.current_thread().name == "let-go":
                go_on.set()  # release waits for the renewal: let the renewal finish
            mutex.acquire()

        def __exit__(self, *exc: object) -> None:
            mutex.release()

    monkeypatch.setattr(lock, "_mutex", Watched())
    in_renewal.wait()
    letting_go = threading.Thread(target=lock.release, name="let-go")
    letting_go.start()
    letting_go.join()
    with mutex:  # whatever the renewal still had to do is done
        pass
    assert not (tmp_path / LOCK_NAME).exists()
    assert list(tmp_path.glob("*.tmp")) == []

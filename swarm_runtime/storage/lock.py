"""The run lock: one process runs a run at a time, and a dead holder is seen as dead.

``<run>/run.lock`` holds the pid, host and start time of the process running the run. It
is made with ``O_EXCL``, so two processes cannot both take it. A lock whose holder is gone
(a SIGKILL, a power cut) is *stale*: on this host that is a pid that no longer exists, or
one that now belongs to a later process (its start time differs). A run whose lock is
stale crashed, and ``swarm resume`` may take the lock over.

Taking a lock (and taking a stale one over) happens under an exclusive ``flock`` of the run
directory, which the kernel drops when its holder dies. Without it, two resumers that both
found the lock stale could both take it: the second removing the first's fresh lock.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from swarm_runtime.errors import RunControlError, StorageError
from swarm_runtime.inputs.files import read_run_text
from swarm_runtime.inputs.json_input import load_json
from swarm_runtime.record import Record

LOCK_NAME = "run.lock"


class LockHolder(Record):
    """Who holds a run lock."""

    pid: int
    host: str
    started: str
    """The holder process's start time, as the system counts it (``/proc``), or ''."""
    since: str = ""
    """When the lock was taken (RFC 3339)."""

    @property
    def alive(self) -> bool:
        """Whether the holder still runs (on another host: assumed alive)."""
        if self.host != _host():
            return True
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True  # a process of another user has that pid: not ours, but alive
        started = process_start(self.pid)
        return not (self.started and started and started != self.started)

    def describe(self) -> str:
        """``pid 123 on host``."""
        return f"pid {self.pid} on {self.host}"


def _host() -> str:
    """The name of the machine (``os.uname``: importing ``socket`` costs start-up time)."""
    return os.uname().nodename


_own_start: tuple[int, str] | None = None


def process_start(pid: int) -> str:
    """The start time of ``pid`` in clock ticks since boot (Linux), or '' if unknown.

    This process's own is read once (it holds a lock for every run it makes).
    """
    global _own_start
    if _own_start is not None and _own_start[0] == pid:
        return _own_start[1]
    started = _read_start(pid)
    if pid == os.getpid():
        _own_start = (pid, started)
    return started


def _read_start(pid: int) -> str:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    # The command name (field 2) may hold spaces and parentheses: split after the last ')'.
    fields = stat.rpartition(")")[2].split()
    return fields[19] if len(fields) > 19 else ""


@contextlib.contextmanager
def _guard(run_dir: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` of ``run_dir`` (dropped by the kernel if we die)."""
    try:
        fd = os.open(run_dir, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError as exc:
        raise StorageError(f"cannot open {run_dir}: {exc.strerror or exc}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor drops the flock


def read_holder(run_dir: Path) -> LockHolder | None:
    """The holder of ``run_dir``'s lock, or None when there is no (readable) lock."""
    try:
        raw: Any = load_json(read_run_text(run_dir / LOCK_NAME, 1 << 16))
        return LockHolder(
            pid=int(raw["pid"]),
            host=str(raw["host"]),
            started=str(raw.get("started", "")),
            since=str(raw.get("since", "")),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


class RunLock:
    """The lock of one run directory, held by this process while it runs the run."""

    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / LOCK_NAME
        self.held = False

    def acquire(self, since: str, *, take_over_stale: bool = False) -> None:
        """Take the lock; refuse, naming the holder, when a live process holds it."""
        me = {
            "pid": os.getpid(),
            "host": _host(),
            "started": process_start(os.getpid()),
            "since": since,
        }
        run_dir = self.path.parent
        with _guard(run_dir):  # the holder is read, judged and replaced as one step
            if not self._create(me):
                holder = read_holder(run_dir)
                if holder is not None and holder.alive:
                    raise RunControlError(
                        f"run {run_dir.name} is being run by {holder.describe()} "
                        f"(since {holder.since or 'an unknown time'}); stop it with "
                        f"'swarm stop {run_dir.name}' or wait for it to end"
                    )
                if not take_over_stale:
                    raise RunControlError(
                        f"{self.path} is left by a process that is gone; "
                        f"resume the run with 'swarm resume {run_dir.name}'"
                    )
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self.path)  # stale (or never finished): its holder is dead
                if not self._create(me):
                    raise RunControlError(f"{self.path}: taken by another process just now")
        self.held = True

    def _create(self, me: dict[str, Any]) -> bool:
        """Create the lock file holding ``me``; False when it exists."""
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            return False
        except OSError as exc:
            raise StorageError(f"cannot create {self.path}: {exc.strerror or exc}") from None
        try:
            os.write(fd, (json.dumps(me, sort_keys=True) + "\n").encode("utf-8"))
        finally:
            os.close(fd)
        return True

    def release(self) -> None:
        """Give the lock up (only if this process holds it)."""
        if self.held:
            self.held = False
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)

"""The run lock, a lease: one process runs a run at a time, and a dead holder is seen as dead.

``<run>/run.lock`` holds the pid, host and start time of the process running the run, and
when its lease expires (docs/run-control.md#runs-across-machines). It is made with ``O_EXCL``, so
two processes cannot both take it. The holder renews the lease at step boundaries (at most every
tenth of a lease) and, between them, every third of the lease from the process's one heartbeat
thread (the :class:`_Keeper` of every lock the process holds, started with its first), so a long
engine call keeps it. A lock whose
holder is gone (a SIGKILL, a power cut, a lost machine) is *stale*: on this host that is a
pid that no longer exists, or one that now belongs to a later process (its start time
differs), at once; on another host, a lease past its expiry. A run whose lock is stale
crashed, and ``swarm resume`` (or a worker given its task again) may take the lock over.

A holder that finds its lease taken over (it was frozen for longer than a lease) has lost
the run: :meth:`RunLock.check` then refuses every further write.

Taking a lock (and taking a stale one over) happens under an exclusive ``flock`` of the run
directory, which the kernel drops when its holder dies. Without it, two resumers that both
found the lock stale could both take it: the second removing the first's fresh lock.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from swarm_runtime.errors import RunControlError, StorageError
from swarm_runtime.inputs.files import read_run_text
from swarm_runtime.inputs.json_input import load_json
from swarm_runtime.record import Record

LOCK_NAME = "run.lock"
DEFAULT_LEASE_S = 30.0
"""How long a lease lasts unless renewed (``swarm worker --lease``)."""
_lease_s = DEFAULT_LEASE_S


def set_lease_seconds(seconds: float) -> None:
    """The lease of every run lock this process takes from now on (a worker sets it)."""
    global _lease_s
    if not seconds > 0:
        raise ValueError(f"a lease must last more than 0 s, not {seconds}")
    _lease_s = float(seconds)


def lease_seconds() -> float:
    """The lease this process takes run locks with."""
    return _lease_s


class LeaseLost(StorageError):
    """A lease of a run was taken over: its old holder must not write to the run again."""


class LockHolder(Record):
    """Who holds a run lock."""

    pid: int
    host: str
    started: str
    """The holder process's start time, as the system counts it (``/proc``), or ''."""
    since: str = ""
    """When the lock was taken (RFC 3339)."""
    expires: float = 0.0
    """When the lease runs out, in seconds since the epoch (0: a lock of no lease)."""
    token: str = ""
    """Which taking of the lock this is (a process may take one run's lock twice)."""
    machine: str = ""
    """The holder's boot and pid namespace (:func:`_machine`), or '' when unknown."""

    @property
    def alive(self) -> bool:
        """Whether the holder still runs: its pid on this host, its lease on another."""
        return self.alive_at(time.time())

    def alive_at(self, now: float) -> bool:
        """:attr:`alive` with the wall clock's ``now`` given."""
        if self.host != _host() or (self.machine and self.machine != _machine()):
            # Another machine, or one of the same name whose pids are not ours to look at
            # (a container sharing the host's name, the same host after a reboot).
            return not self.expires or now < self.expires
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

    def is_me(self, token: str) -> bool:
        """Whether this holder is this process's taking ``token`` of the lock."""
        return self.host == _host() and self.pid == os.getpid() and self.token == token


def _host() -> str:
    """The name of the machine (``os.uname``: importing ``socket`` costs start-up time)."""
    return os.uname().nodename


_own_machine: str | None = None


def _machine() -> str:
    """The boot of this kernel and this pid namespace: where our pids mean our processes.

    Two containers may share a host name (``hostname:`` in a compose file, host networking)
    but not their pids; a host's pids after a reboot are not those before it. '' if unknown.
    """
    global _own_machine
    if _own_machine is None:
        try:
            boot = Path("/proc/sys/kernel/random/boot_id").read_text("utf-8").strip()
            _own_machine = f"{boot}/{os.readlink('/proc/self/ns/pid')}"
        except OSError:
            _own_machine = ""
    return _own_machine


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
            expires=float(raw.get("expires", 0.0)),
            token=str(raw.get("token", "")),
            machine=str(raw.get("machine", "")),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def live_holder(run_dir: Path) -> LockHolder | None:
    """The holder of ``run_dir``'s lock when it is alive (its lease holds), else None."""
    holder = read_holder(run_dir)
    return holder if holder is not None and holder.alive else None


class RunLock:
    """The lock of one run directory, held by this process while it runs the run."""

    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / LOCK_NAME
        self.held = False
        self.lost = False
        """The lease was taken over by another process: nothing more may be written."""
        self.lease_s = _lease_s
        self.token = uuid.uuid4().hex[:16]
        self._since = ""
        self._renewed = 0.0
        """When the lease was last written (monotonic seconds)."""
        self._mutex = threading.Lock()
        """Held by a renewal and by :meth:`release`: a lock let go of is never written back."""
        self._beaten = 0.0
        """When the heartbeat last tried to renew (monotonic seconds): one that failed waits."""

    def acquire(self, since: str, *, take_over_stale: bool = False) -> None:
        """Take the lock; refuse, naming the holder, when a live process holds it."""
        self._since = since
        me = self._document()
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
        self._renewed = time.monotonic()
        _keeper().hold(self)

    def _document(self) -> dict[str, Any]:
        return {
            "pid": os.getpid(),
            "host": _host(),
            "started": process_start(os.getpid()),
            "since": self._since,
            "expires": round(time.time() + self.lease_s, 3),
            "lease_s": self.lease_s,
            "token": self.token,
            "machine": _machine(),
        }

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

    def check(self) -> None:
        """Raise :class:`LeaseLost` once the lease was taken over (before every write)."""
        if self.lost:
            raise LeaseLost(
                f"{self.path}: this process's lease of run {self.path.parent.name} was taken "
                "over by another (it did not renew it in time); it writes nothing more"
            )

    def renew_at_boundary(self) -> None:
        """At a step boundary: renew the lease unless it was renewed a moment ago.

        Within a tenth of a lease of the last renewal the lease is fresh (the heartbeat
        keeps it so), and the boundary costs no file I/O; after a longer gap, a freeze of
        this process included, the lock file is read again, so a lease taken over is found
        before the next write.
        """
        if time.monotonic() - self._renewed < self.lease_s / 10:
            self.check()
            return
        self.renew()

    def renew(self) -> None:
        """Move the lease's expiry on; LeaseLost if it was taken over."""
        self.check()
        if not self.held:
            return
        run_dir = self.path.parent
        with _guard(run_dir):
            holder = read_holder(run_dir)
            if holder is None or not holder.is_me(self.token):
                self.lost = True
                self.check()
            from swarm_runtime.storage.store import write_text_atomic

            write_text_atomic(self.path, json.dumps(self._document(), sort_keys=True) + "\n")
            self._renewed = time.monotonic()

    def beat(self) -> bool:
        """A heartbeat's renewal, unless the lock was let go of; False when it is no more held."""
        with self._mutex:
            if not self.held or self.lost:
                return False
            self._beaten = time.monotonic()
            try:
                self.renew()
            except LeaseLost:
                return False
            except StorageError:
                pass  # shared storage hiccup: try again at the next beat
            return True

    def release(self) -> None:
        """Give the lock up (only if this process holds it, and still does).

        A renewal under way ends first: it would write the lock back once it is gone, or
        leave its temporary file behind when the process exits right after.
        """
        _keeper().drop(self)
        with self._mutex:
            if self.held:
                self.held = False
                if self.lost:
                    return  # another process holds it now: its lock is not ours to remove
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self.path)


class _Keeper:
    """The heartbeat of every run lock this process holds: one thread, started with the first.

    It renews each lock a third of a lease after it was last renewed (a step boundary
    renews too, and moves the next beat on), and sleeps while no lock is held.
    """

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._locks: dict[int, RunLock] = {}
        self._thread: threading.Thread | None = None

    def hold(self, lock: RunLock) -> None:
        with self._changed:
            self._locks[id(lock)] = lock
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="lease-keeper", daemon=True)
                self._thread.start()
            self._changed.notify()

    def drop(self, lock: RunLock) -> None:
        with self._changed:
            self._locks.pop(id(lock), None)

    def _run(self) -> None:
        while True:
            with self._changed:
                due = self._due()
                while not due:
                    wait = self._wait()
                    self._changed.wait(wait)
                    due = self._due()
            for lock in due:
                if not lock.beat():
                    self.drop(lock)

    def _due(self) -> list[RunLock]:
        now = time.monotonic()
        return [lock for lock in self._locks.values() if _next_beat(lock) <= now]

    def _wait(self) -> float | None:
        if not self._locks:
            return None
        return max(min(map(_next_beat, self._locks.values())) - time.monotonic(), 0)


def _next_beat(lock: RunLock) -> float:
    """A third of a lease after the lock was last renewed, or the heartbeat last tried."""
    return max(lock._renewed, lock._beaten) + lock.lease_s / 3


_KEEPER: _Keeper | None = None
_KEEPER_MADE = threading.Lock()


def _keeper() -> _Keeper:
    """The process's keeper (a fresh one in a forked child: the parent's thread is not there)."""
    global _KEEPER
    if _KEEPER is None:
        with _KEEPER_MADE:
            if _KEEPER is None:
                _KEEPER = _Keeper()
    return _KEEPER


def _forget_keeper() -> None:
    global _KEEPER
    _KEEPER = None


os.register_at_fork(after_in_child=_forget_keeper)

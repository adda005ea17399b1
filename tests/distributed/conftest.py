"""A real Redis and real ``swarm worker`` processes for the tests of runs across machines.

``redis-server`` (Debian's ``redis-server`` package) is started on a unix socket in a
temporary dir, never a TCP port. Without it the tests that need it are skipped and say how
to install it; with ``SWARM_REDIS_REQUIRED=1`` (CI sets it) they fail instead, so CI never
passes by skipping them.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest
import redis

from swarm_runtime.distributed.app import DEFAULT_QUEUE
from tests.conftest import REPO

pytestmark = pytest.mark.swarm_modes("stub")

T = TypeVar("T")


def _redis_binary() -> str:
    found = shutil.which("redis-server")
    if found is None:
        reason = "redis-server is not installed (apt-get install -y redis-server)"
        if os.environ.get("SWARM_REDIS_REQUIRED") == "1":
            pytest.fail(f"SWARM_REDIS_REQUIRED=1 but {reason}")
        pytest.skip(reason)
    return found


class RedisServer:
    """``redis-server`` on a unix socket in ``home``, without persistence; it can be
    killed and started again on the same socket (an outage)."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.socket = home / "redis.sock"
        self.url = f"redis+socket://{self.socket}"
        """Its Celery broker URL."""
        self.proc: subprocess.Popen[str] | None = None
        self.drain: threading.Thread | None = None

    def start(self) -> None:
        """Start it and return once it says it is ready."""
        proc = subprocess.Popen(
            [
                _redis_binary(),
                "--port", "0",
                "--unixsocket", str(self.socket),
                "--unixsocketperm", "700",
                "--save", "",
                "--appendonly", "no",
                "--dir", str(self.home),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )  # fmt: skip
        assert proc.stdout is not None
        for line in proc.stdout:  # blocks until Redis says it is ready; no sleeping
            if "ready to accept connections" in line.lower():
                break
        else:
            raise AssertionError(f"redis-server ended: {proc.wait()}")
        self.drain = threading.Thread(target=proc.stdout.read, daemon=True)  # its log, unread
        self.drain.start()
        self.proc = proc

    def kill(self) -> None:
        """SIGKILL it, as a crash would (its socket file stays, refusing connections)."""
        self._end(signal.SIGKILL)

    def stop(self) -> None:
        self._end(signal.SIGTERM)

    def _end(self, signum: int) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        proc.send_signal(signum)
        proc.wait(timeout=30)
        assert self.drain is not None and proc.stdout is not None
        self.drain.join()
        proc.stdout.close()


@pytest.fixture
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """A fresh Redis on a unix socket, started."""
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def redis_url(redis_server: RedisServer) -> str:
    """The Celery broker URL of a fresh Redis on a unix socket."""
    return redis_server.url


def wait_until(condition: Callable[[], T], what: str, *, bound_s: float = 120.0) -> T:
    """``condition()``'s first true value, polled; ``bound_s`` only ends a wait for one that
    never comes (AssertionError naming ``what``)."""
    deadline = time.monotonic() + bound_s
    while not (value := condition()):
        assert time.monotonic() < deadline, f"waited {bound_s:g} s in vain for {what}"
        time.sleep(0.05)
    return value


def queued_messages(broker: str) -> int:
    """How many tasks the Redis at ``broker`` holds: queued, or taken and not acknowledged."""
    client = redis.Redis(unix_socket_path=broker.removeprefix("redis+socket://"))
    try:
        return int(client.llen(DEFAULT_QUEUE)) + int(client.hlen("unacked"))
    finally:
        client.close()


def swarm_env() -> dict[str, str]:
    """The environment of a child ``swarm``: none of the test session's SWARM_ settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SWARM_")}
    env["PYTHONPATH"] = str(REPO)
    return env


def swarm(*args: str) -> list[str]:
    """The command line of ``swarm ARGS`` in this interpreter."""
    return [sys.executable, "-m", "swarm_runtime.cli.main", *args]


class Workers:
    """``swarm worker`` processes on one broker and runs dir; all stopped at the end."""

    def __init__(self, broker: str, runs_dir: Path, lease_s: float) -> None:
        self.broker = broker
        self.runs_dir = runs_dir
        self.lease_s = lease_s
        self.procs: list[subprocess.Popen[str]] = []
        self.drains: dict[int, threading.Thread] = {}
        self.said: dict[int, list[str]] = {}
        """What each worker wrote to stderr, by pid."""

    def start(
        self,
        concurrency: int = 1,
        *more: str,
        env: dict[str, str] | None = None,
        broker_flag: bool = True,
    ) -> subprocess.Popen[str]:
        """One more worker (with flags ``more``), once it says it is ready
        (``broker_flag=False``: the broker comes from ``env``'s ``SWARM_BROKER_URL``)."""
        args = ["worker", "--runs-dir", str(self.runs_dir), "--concurrency", str(concurrency)]
        args += ["--lease", f"{self.lease_s:g}", *more]
        args += ["--broker", self.broker] if broker_flag else []
        proc = self.spawn(args, env)
        assert proc.stderr is not None
        for line in proc.stderr:  # blocks until the worker says it is ready
            if line.startswith("swarm worker: ready"):
                break
        else:
            raise AssertionError(f"swarm worker ended ({proc.wait()}) before it was ready")
        self.adopt(proc)
        return proc

    @staticmethod
    def spawn(args: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[str]:
        """``swarm ARGS`` in a session of its own, its stderr a pipe (not yet read)."""
        return subprocess.Popen(
            swarm(*args),
            env=swarm_env() if env is None else env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )

    def adopt(self, proc: subprocess.Popen[str]) -> None:
        """Keep what ``proc`` says from now on (so it never blocks) and stop it at the end."""
        assert proc.stderr is not None
        said = self.said.setdefault(proc.pid, [])
        drain = threading.Thread(target=said.extend, args=(proc.stderr,), daemon=True)
        drain.start()
        self.drains[proc.pid] = drain
        self.procs.append(proc)

    def wait_said(self, proc: subprocess.Popen[str], needle: str) -> str:
        """The first line a worker adopted here said holding ``needle``, once it is said."""
        said = self.said[proc.pid]

        def found() -> str | None:
            assert proc.poll() is None, f"the worker ended ({proc.returncode}): {said}"
            return next((line for line in list(said) if needle in line), None)

        line = wait_until(found, f"the worker to say {needle!r}: {said}")
        assert line is not None
        return line

    def holding(self, run_dir: Path) -> subprocess.Popen[str]:
        """The worker whose process (its own, or a pool process in its group) holds the
        run's lease now."""
        from swarm_runtime.storage.lock import read_holder

        holder = read_holder(run_dir)
        assert holder is not None, f"nothing holds {run_dir.name}"
        group = os.getpgid(holder.pid)
        (worker,) = [proc for proc in self.procs if proc.pid == group]
        return worker

    def kill(self, proc: subprocess.Popen[str]) -> None:
        """SIGKILL a worker (its whole process group), as a lost machine would go."""
        os.killpg(proc.pid, signal.SIGKILL)
        self._reap(proc)
        self.procs.remove(proc)

    def _reap(self, proc: subprocess.Popen[str]) -> None:
        proc.wait()
        self.drains.pop(proc.pid).join()
        assert proc.stderr is not None
        proc.stderr.close()

    def stop_all(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
            self._reap(proc)
        self.procs.clear()


@pytest.fixture
def workers(redis_url: str, tmp_path: Path) -> Iterator[Workers]:
    """A pool of workers on a fresh Redis and ``tmp_path/runs`` (made), lease 2 s."""
    runs = tmp_path / "runs"
    runs.mkdir()
    pool = Workers(redis_url, runs, lease_s=2.0)
    try:
        yield pool
    finally:
        pool.stop_all()

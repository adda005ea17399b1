"""Running a CLI as a child process: argv as a list, prompt on stdin, stdout read line by line.

The child gets its own process group, so a timeout (or a run that is stopped) ends the CLI
and everything it started: SIGTERM to the group, then SIGKILL after a grace period. A
process that left the group (a daemon a tool started: double fork and ``setsid``) is found
by the token the CLI's environment carries (:data:`STEP_MARK`, inherited by everything it
starts) and killed when the step ends; a process that is a child subreaper
(:mod:`.subreaper`) also collects its exit status. Lines
are handed to a callback as they arrive; the callback raises :class:`StreamBroken` for a
line it cannot read, which ends the process the same way. Nothing here waits longer than
the timeout plus the grace period, whatever the child does.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from swarm_runtime.engines.subreaper import take_orphans
from swarm_runtime.record import Record

MAX_LINE_BYTES = 16 * 1024 * 1024
"""A stream line longer than this is not a line of a CLI's JSON stream."""
STDERR_TAIL_BYTES = 16 * 1024
_POLL_S = 0.2
STEP_MARK = "SWARM_STEP_PROCESS"
"""Set in a CLI's environment to a token of its launch: every process the CLI starts
inherits it, so one that left its process group is still found (on Linux, through /proc)."""


class StreamBroken(Exception):
    """A line of the child's output could not be read; the process is ended."""


class ProcessEnd(Record):
    """How the child ended."""

    exit_code: int | None
    """The exit status; a negative number is the signal that ended it."""
    timed_out: bool = False
    broken: str | None = None
    """Why reading its output stopped, when a line could not be read."""
    stderr: str = ""
    """The last part of what it wrote to stderr."""
    killed: bool = False
    """It had to be killed with SIGKILL (it ignored SIGTERM)."""


def _signal_group(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # the group is gone
        os.killpg(pid, sig)


def _end_group(process: subprocess.Popen[bytes], grace_s: float) -> bool:
    """SIGTERM the child's group, SIGKILL it after ``grace_s``; True when SIGKILL was needed."""
    if process.poll() is None:
        _signal_group(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            _signal_group(process.pid, signal.SIGKILL)
            process.wait()
            return True
    _signal_group(process.pid, signal.SIGKILL)  # whatever it started and left behind
    return False


class _Pipes:
    """The child's three pipes, served by one loop: no thread ever blocks on one of them.

    The prompt is written to stdin as the child takes it, stdout is read line by line and
    the tail of stderr is kept. All three are raw descriptors, non-blocking: when a process
    the child started in a session of its own (out of reach of the group kill) keeps them
    open after the child has exited, nothing waits for it. Reading stops once the child is
    gone and nothing is left to read, and closing a descriptor never blocks.
    """

    def __init__(self, process: subprocess.Popen[bytes], data: bytes) -> None:
        assert process.stdin and process.stdout and process.stderr
        self.process = process
        self.files = (process.stdin, process.stdout, process.stderr)
        self.stdin, self.stdout, self.stderr = (f.fileno() for f in self.files)
        for fd in (self.stdin, self.stdout, self.stderr):
            os.set_blocking(fd, False)
        self.pending = memoryview(data)
        self.tail = bytearray()
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.stdout, selectors.EVENT_READ)
        self.selector.register(self.stderr, selectors.EVENT_READ)
        if self.pending:
            self.selector.register(self.stdin, selectors.EVENT_WRITE)
        else:
            self._close_stdin()

    def pump(
        self, deadline: float, on_line: Callable[[str], None], clock: Callable[[], float]
    ) -> tuple[str | None, bool]:
        """Serve the pipes until stdout ends or the deadline: (why reading broke, timed out)."""
        buffer = bytearray()
        while True:
            remaining = deadline - clock()
            if remaining <= 0:
                return None, True
            ready = {key.fd for key, _ in self.selector.select(min(remaining, _POLL_S))}
            if self.stdin in ready:
                self._write()
            if self.stderr in ready:
                self._read_stderr()
            if self.stdout not in ready:
                if self.process.poll() is not None and not _has_data(self.stdout):
                    # It exited, but something it started may still hold the pipe open.
                    return _last_line(buffer, on_line), False
                continue
            try:
                chunk = os.read(self.stdout, 65536)
            except BlockingIOError:
                continue
            if not chunk:
                return _last_line(buffer, on_line), False
            buffer += chunk
            *lines, rest = buffer.split(b"\n")
            buffer = bytearray(rest)
            if len(buffer) > MAX_LINE_BYTES:
                return f"an output line is longer than {MAX_LINE_BYTES} bytes", False
            try:
                for line in lines:
                    if line.strip():
                        on_line(line.decode("utf-8", "replace"))
            except StreamBroken as exc:
                return str(exc), False

    def _write(self) -> None:
        try:
            written = os.write(self.stdin, self.pending[:65536])
        except BlockingIOError:
            return
        except OSError:  # the child closed its stdin: its exit says why
            written = len(self.pending)
        self.pending = self.pending[written:]
        if not self.pending:
            self._close_stdin()

    def _close_stdin(self) -> None:
        with contextlib.suppress(KeyError, ValueError):
            self.selector.unregister(self.stdin)
        with contextlib.suppress(OSError, ValueError):
            self.files[0].close()

    def _read_stderr(self) -> bool:
        """Read what stderr has now into the tail; False when it had nothing (or ended)."""
        try:
            chunk = os.read(self.stderr, 65536)
        except OSError:  # BlockingIOError too: nothing there just now
            return False
        if not chunk:
            with contextlib.suppress(KeyError, ValueError):
                self.selector.unregister(self.stderr)
            return False
        self.tail += chunk
        if len(self.tail) > STDERR_TAIL_BYTES:
            del self.tail[: len(self.tail) - STDERR_TAIL_BYTES]
        return True

    def close(self) -> str:
        """Take what stderr has at hand (never waiting for more), close every pipe; the tail."""
        while self._read_stderr():
            pass
        self.selector.close()
        for pipe in self.files:
            with contextlib.suppress(OSError, ValueError):
                pipe.close()  # raw and non-blocking: no buffer lock, no wait
        return bytes(self.tail).decode("utf-8", "replace")


def run_process(
    argv: Sequence[str],
    *,
    stdin: str,
    env: Mapping[str, str],
    cwd: Path,
    timeout_s: float,
    grace_s: float,
    on_line: Callable[[str], None],
    clock: Callable[[], float] = time.monotonic,
) -> ProcessEnd:
    """Run ``argv``, hand each stdout line to ``on_line``, and say how it ended.

    Raises OSError when the executable cannot be started (missing, not executable).
    """
    token = os.urandom(8).hex()
    take_orphans()
    process = subprocess.Popen(
        list(argv),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        bufsize=0,
        env={**env, STEP_MARK: token},
        cwd=cwd,
        start_new_session=True,
    )
    deadline = clock() + timeout_s
    pipes = _Pipes(process, stdin.encode("utf-8"))
    timed_out = killed = False
    broken: str | None = None
    try:
        broken, timed_out = pipes.pump(deadline, on_line, clock)
        if broken is None and not timed_out:
            try:
                process.wait(timeout=max(0.0, deadline - clock()))
            except subprocess.TimeoutExpired:
                timed_out = True
    finally:
        killed = _end_group(process, grace_s)
        text = pipes.close()
        end_marked(token, grace_s)
    return ProcessEnd(
        exit_code=process.returncode,
        timed_out=timed_out,
        broken=broken,
        stderr=text,
        killed=killed,
    )


def _has_data(fd: int) -> bool:
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        return bool(selector.select(0))


def _last_line(buffer: bytearray, on_line: Callable[[str], None]) -> str | None:
    """The output's last line when it has no newline at its end."""
    if not buffer.strip():
        return None
    try:
        on_line(buffer.decode("utf-8", "replace"))
    except StreamBroken as exc:
        return str(exc)
    return None


def marked(token: str) -> list[int]:
    """The live processes whose environment carries ``token`` as :data:`STEP_MARK`.

    Read from /proc (Linux): where there is none, or a process's environment cannot be
    read (another user's), nothing is found.
    """
    needle = f"{STEP_MARK}={token}".encode()
    found: list[int] = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as handle:
                environ = handle.read()
        except OSError:  # gone, or not ours to read
            continue
        if needle in environ.split(b"\0"):  # a zombie's is empty: it has ended
            found.append(int(name))
    return found


def end_marked(token: str, grace_s: float) -> list[int]:
    """SIGKILL every process left with ``token`` and reap those that are our children.

    Looked for again until none is left (one may start another before it is killed), for
    at most ``grace_s`` (at least a second). The pids killed.
    """
    killed: list[int] = []
    deadline = time.monotonic() + max(grace_s, 1.0)
    while (pids := marked(token)) and time.monotonic() < deadline:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        killed.extend(pid for pid in pids if pid not in killed)
        _reap(pids, deadline)
        time.sleep(0.01)  # one that is not our child dies within moments too
    return killed


def _reap(pids: Sequence[int], deadline: float) -> None:
    """Collect the exit status of those of ``pids`` that are our children (until ``deadline``)."""
    waiting = list(pids)
    while waiting and time.monotonic() < deadline:
        for pid in list(waiting):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:  # not ours: its own parent (or init) reaps it
                done = pid
            if done:
                waiting.remove(pid)
        if waiting:
            time.sleep(0.01)  # SIGKILL lands within moments

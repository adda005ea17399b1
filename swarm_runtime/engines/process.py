"""Running a CLI as a child process: argv as a list, prompt on stdin, stdout read line by line.

The child gets its own process group, so a timeout (or a run that is stopped) ends the CLI
and everything it started: SIGTERM to the group, then SIGKILL after a grace period. Lines
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
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from swarm_runtime.record import Record

__all__ = ["MAX_LINE_BYTES", "ProcessEnd", "StreamBroken", "run_process"]

MAX_LINE_BYTES = 16 * 1024 * 1024
"""A stream line longer than this is not a line of a CLI's JSON stream."""
STDERR_TAIL_BYTES = 16 * 1024
_POLL_S = 0.2


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


class _Tail:
    """The last bytes a pipe carried, read in a thread."""

    def __init__(self, pipe: object) -> None:
        self.data = bytearray()
        self._thread = threading.Thread(target=self._read, args=(pipe,), daemon=True)
        self._thread.start()

    def _read(self, pipe: object) -> None:
        read = pipe.read1  # type: ignore[attr-defined]
        while chunk := read(65536):
            self.data += chunk
            if len(self.data) > STDERR_TAIL_BYTES:
                del self.data[: len(self.data) - STDERR_TAIL_BYTES]

    def text(self) -> str:
        self._thread.join(timeout=1.0)
        return bytes(self.data).decode("utf-8", "replace")


def _feed(pipe: object, data: bytes) -> None:
    try:
        pipe.write(data)  # type: ignore[attr-defined]
        pipe.close()  # type: ignore[attr-defined]
    except (BrokenPipeError, OSError, ValueError):
        pass  # the child stopped reading; its exit says why


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
    process = subprocess.Popen(
        list(argv),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(env),
        cwd=cwd,
        start_new_session=True,
    )
    deadline = clock() + timeout_s
    assert process.stdin is not None and process.stdout is not None
    writer = threading.Thread(
        target=_feed, args=(process.stdin, stdin.encode("utf-8")), daemon=True
    )
    writer.start()
    stderr = _Tail(process.stderr)
    timed_out = killed = False
    broken: str | None = None
    try:
        broken, timed_out = _read_lines(process, deadline, on_line, clock)
        if broken is None and not timed_out:
            try:
                process.wait(timeout=max(0.0, deadline - clock()))
            except subprocess.TimeoutExpired:
                timed_out = True
    finally:
        killed = _end_group(process, grace_s)
        writer.join(timeout=1.0)
        text = stderr.text()
        for pipe in (process.stdin, process.stdout, process.stderr):
            with contextlib.suppress(OSError, ValueError):
                pipe.close()  # type: ignore[union-attr]
    return ProcessEnd(
        exit_code=process.returncode,
        timed_out=timed_out,
        broken=broken,
        stderr=text,
        killed=killed,
    )


def _read_lines(
    process: subprocess.Popen[bytes],
    deadline: float,
    on_line: Callable[[str], None],
    clock: Callable[[], float],
) -> tuple[str | None, bool]:
    """Read stdout to its end or the deadline: (why reading broke off, whether it timed out)."""
    assert process.stdout is not None
    fd = process.stdout.fileno()
    os.set_blocking(fd, False)
    buffer = bytearray()
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while True:
            remaining = deadline - clock()
            if remaining <= 0:
                return None, True
            if not selector.select(min(remaining, _POLL_S)):
                if process.poll() is not None and not _has_data(fd):
                    # It exited, but something it started still holds the pipe open.
                    return _last_line(buffer, on_line), False
                continue
            try:
                chunk = os.read(fd, 65536)
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

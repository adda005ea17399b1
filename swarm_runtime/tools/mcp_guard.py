"""The guard an MCP server runs under: it ends with the run, and takes the server with it.

:class:`~swarm_runtime.tools.mcp.McpServers` starts each server as
``python -I mcp_guard.py RUN_PID GRACE_S -- COMMAND ARGS…`` (a file run by path, the
standard library only, so it needs nothing of the run's environment). The guard starts the
server on the pipes it was given, in its own process group (the one the MCP client made
for the guard), then hands its copies of stdin and stdout back so the server's exit reaches
the client as the end of its stdout. The server, and everything it starts, carries
:data:`MARK` in its environment.

The guard ends the server and everything it started (SIGTERM to each, SIGKILL after the
grace) when the server exits, when the guard is told to stop (SIGTERM, SIGHUP, SIGINT) and
when the run dies, even by SIGKILL: on Linux through ``PR_SET_PDEATHSIG``, elsewhere by
noticing within a second that its parent changed. On Linux it is also a child subreaper,
so what a launcher (``npx``, a shell) leaves when it exits stays the guard's to end, and a
process that left the group (a daemon, ``setsid``) is still found by its mark in /proc.
Elsewhere the group is what it ends. Before it exits it writes one line to stderr saying
how the server ended (:data:`SAYS`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterable

MARK = "SWARM_MCP_SERVER"
"""Set in a server's environment to a token of its start; every process it starts has it."""
SAYS = "swarm-mcp-guard:"
"""How the guard's own lines on stderr begin."""
_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
_PARENT_CHECK_S = 1.0
_STOPS = tuple(
    getattr(signal, name) for name in ("SIGTERM", "SIGHUP", "SIGINT") if hasattr(signal, name)
)


class _Stop(Exception):
    """The guard was told to stop, or the run is gone."""


def _prctl(option: int, value: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(option, value, 0, 0, 0) == 0)
    except (OSError, AttributeError):  # no libc or no prctl: the parent check only
        return False


def _say(text: str) -> None:
    with contextlib.suppress(OSError):
        os.write(2, f"{SAYS} {text}\n".encode())


def _stat(pid: str) -> tuple[str, int] | None:
    """(state, process group) of ``pid`` from /proc, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields[0].decode(), int(fields[2])


def _carries(pid: str, needle: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            return needle in handle.read().split(b"\0")
    except OSError:  # gone, or not ours to read
        return False


def marked(tokens: Iterable[str], group: int | None = None) -> list[int] | None:
    """Live processes (not this one) marked with one of ``tokens`` or in group ``group``.

    Marked: :data:`MARK` set to the token in its environment. None where there is no /proc.
    """
    needles = [f"{MARK}={token}".encode() for token in tokens]
    try:
        names = os.listdir("/proc")
    except OSError:
        return None
    me = os.getpid()
    found: list[int] = []
    for name in names:
        if not name.isdigit() or int(name) == me:
            continue
        stat = _stat(name)
        if stat is None or stat[0] in ("Z", "X"):  # gone, or ended and not yet reaped
            continue
        if stat[1] == group or any(_carries(name, needle) for needle in needles):
            found.append(int(name))
    return found


def kill(pids: Iterable[int], sig: int) -> None:
    """Send ``sig`` to each of ``pids`` that is still there."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def _reap() -> None:
    """Collect the exit status of every child that has ended (orphans included)."""
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass


def end_all(token: str, grace_s: float) -> None:
    """SIGTERM the guard's group and everything marked ``token``; SIGKILL what is left."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {*_STOPS, signal.SIGALRM})
    group = os.getpgrp()
    left = marked([token], group)
    if left is None:  # no /proc: the group is all that can be found
        with contextlib.suppress(OSError):
            os.killpg(group, signal.SIGTERM)  # blocked here: the guard goes on
        time.sleep(min(grace_s, 0.2))
        _reap()
        os.killpg(group, signal.SIGKILL)  # the guard too: it has nothing left to do
        return
    kill(left, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while left and time.monotonic() < deadline:
        time.sleep(0.02)  # a process given SIGTERM ends within moments
        _reap()
        left = marked([token], group) or []
    deadline = time.monotonic() + max(grace_s, 1.0)
    while left and time.monotonic() < deadline:  # one may start another meanwhile
        kill(left, signal.SIGKILL)
        time.sleep(0.01)
        _reap()
        left = marked([token], group) or []
    _reap()


def _stop(signum: int, frame: object) -> None:
    raise _Stop


def _check_parent(parent: int) -> None:
    if os.getppid() != parent:
        raise _Stop


def _ended(status: int) -> str:
    code = os.waitstatus_to_exitcode(status)
    return f"was killed by signal {-code}" if code < 0 else f"exited with status {code}"


def main(argv: list[str]) -> int:
    """Run the server ``argv`` names and end it as the module docstring says."""
    try:
        split = argv.index("--")
        parent, grace_s = int(argv[0]), float(argv[1])
        command = argv[split + 1 :]
    except (ValueError, IndexError):
        _say("usage: mcp_guard.py RUN_PID GRACE_S -- COMMAND [ARGS…]")
        return 2
    if not command:
        _say("no command to run")
        return 2
    with contextlib.suppress(OSError):  # a session (and group) of its own, unless it has one
        os.setsid()
    _prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    token = os.environ.setdefault(MARK, os.urandom(8).hex())
    for sig in _STOPS:
        signal.signal(sig, _stop)
    status: int | None = None
    try:
        _check_parent(parent)  # the run may have died before PR_SET_PDEATHSIG was set
        try:
            child = subprocess.Popen(command)
        except OSError as exc:
            _say(f"cannot start {command[0]!r}: {exc.strerror or exc}")
            return 127
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)  # only the server holds the pipes now: its exit is their end
        os.dup2(null, 1)
        signal.signal(signal.SIGALRM, lambda signum, frame: _check_parent(parent))
        signal.setitimer(signal.ITIMER_REAL, _PARENT_CHECK_S, _PARENT_CHECK_S)
        status = os.waitpid(child.pid, 0)[1]
    except _Stop:
        pass
    finally:
        end_all(token, grace_s)
        signal.setitimer(signal.ITIMER_REAL, 0)
    if status is None:
        _say("stopped the server")
        return 0
    _say(f"the server {_ended(status)}")
    code = os.waitstatus_to_exitcode(status)
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

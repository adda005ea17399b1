"""A run's status as seen from outside: ``meta.json``, corrected by its lock and its log.

A run whose ``meta.json`` says ``pending`` or ``running`` but whose lock holder is gone
(or that has no lock) was killed: it is ``crashed``, and ``swarm resume`` continues it;
unless its log ends with ``run_paused`` (killed after pausing, before ``meta.json`` said
so: the log is written first), when it is ``paused``. A run handed to the workers that none
has taken yet is ``queued``, one a worker would not run (another version, its flows not
there) ``refused`` (docs/run-control.md#runs-across-machines).

A run that has just paused is still held for a moment by the process that paused it (it
closes its files, then lets go of the lock): :func:`wait_for_pauser` lets a resume asked
for at that instant wait for it instead of failing.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

from swarm_runtime.errors import RunControlError
from swarm_runtime.inputs.files import read_run_text
from swarm_runtime.inputs.json_input import load_json
from swarm_runtime.storage.lock import live_holder
from swarm_runtime.storage.queued import QUEUED_NAME, REFUSED_NAME

TAIL_BYTES = 1 << 16
"""How much of the end of ``events.jsonl`` is read for its last event."""
PAUSER_PATIENCE_S = 30.0
"""How long a resume waits for the process that paused the run to let go of it."""
PAUSER_POLL_S = 0.05


def read_meta(run_dir: Path) -> dict[str, Any] | None:
    """meta.json as a mapping, or None when it is missing, unreadable or not a mapping."""
    try:
        meta = load_json(read_run_text(run_dir / "meta.json"))
    except (OSError, ValueError):
        return None
    return meta if isinstance(meta, dict) else None


def last_event_kind(run_dir: Path) -> str | None:
    """The kind of the last whole event of ``events.jsonl`` (None: none, or unreadable).

    Only the end of the log is read; never through a symlink, never from a FIFO.
    """
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(run_dir / "events.jsonl", flags)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None
        os.lseek(fd, max(0, info.st_size - TAIL_BYTES), os.SEEK_SET)
        tail = os.read(fd, TAIL_BYTES)
    except OSError:
        return None
    finally:
        os.close(fd)
    # What follows the last newline is a torn line, if anything.
    whole = [line for line in tail.split(b"\n")[:-1] if line.strip()]
    if not whole:
        return None
    try:
        kind = load_json(whole[-1]).get("kind")
    except (ValueError, AttributeError):
        return None
    return kind if isinstance(kind, str) else None


def observed_status(run_dir: Path, meta: dict[str, Any] | None = None) -> str:
    """``meta.json``'s status, or what a run nobody runs that it claims live really is.

    ``crashed``, or ``paused`` when its log ends with ``run_paused``.
    """
    meta = read_meta(run_dir) if meta is None else meta
    status = str(meta.get("status", "?")) if meta is not None else "?"
    if status in ("succeeded", "failed") or live_holder(run_dir) is not None:
        return status
    for marker, seen_as in ((QUEUED_NAME, "queued"), (REFUSED_NAME, "refused")):
        if (run_dir / marker).exists():
            return seen_as
    if status in ("pending", "running"):
        return "paused" if last_event_kind(run_dir) == "run_paused" else "crashed"
    return status


def wait_for_pauser(
    run_dir: Path,
    *,
    sleep: Callable[[float], None],
    notice: Callable[[str], None],
    patience_s: float = PAUSER_PATIENCE_S,
) -> None:
    """Wait while the process that has just paused the run still holds it, saying so.

    That is a live holder of a run whose log ends with ``run_paused``: it closes its files
    and lets go of the lock next. RunControlError when it still holds the run after
    ``patience_s`` (counted in the ``sleep`` calls made). Any other holder is left to the
    lock, which refuses it by name.
    """
    holder = live_holder(run_dir)
    if holder is None or last_event_kind(run_dir) != "run_paused":
        return
    notice(
        f"run {run_dir.name} has just paused; waiting for {holder.describe()}, which paused "
        "it, to let go of it"
    )
    waited = 0.0
    while waited < patience_s:
        sleep(PAUSER_POLL_S)
        waited += PAUSER_POLL_S
        now = live_holder(run_dir)
        if now is None or now.token != holder.token:
            return
    raise RunControlError(
        f"run {run_dir.name} is paused, but {holder.describe()}, which paused it, still holds "
        f"it after {patience_s:g} s; try 'swarm resume {run_dir.name}' again once it has ended"
    )

"""``<run>/queued.json``: a run handed to the workers, waiting for one to take it.

``swarm run --backend celery`` (and a resume sent to the workers) writes it with a fresh
*ticket* before the task goes to the broker; the task carries the same ticket. A worker runs
the run only for the ticket it finds here (or to resume a crashed run), and the marker is
removed under the run's lock as the run goes on, so a task delivered twice runs it once.

See docs/run-control.md#runs-across-machines.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from pathlib import Path
from typing import Any

from swarm_runtime.inputs.files import read_run_text
from swarm_runtime.inputs.json_input import load_json

QUEUED_NAME = "queued.json"
REFUSED_NAME = "refused.json"
"""Why no worker will run the run (another package version): the submitter reports it."""


def new_ticket() -> str:
    """A fresh ticket for one hand-over of a run to the workers."""
    return uuid.uuid4().hex


def write_queued(run_dir: Path, ticket: str, *, queue: str, since: str) -> None:
    """Mark ``run_dir`` as waiting for a worker, under ``ticket``."""
    from swarm_runtime.storage.store import write_json_atomic

    with contextlib.suppress(FileNotFoundError):
        os.unlink(run_dir / REFUSED_NAME)  # an earlier refusal no longer holds
    write_json_atomic(run_dir / QUEUED_NAME, {"ticket": ticket, "queue": queue, "since": since})


def read_queued(run_dir: Path) -> dict[str, Any] | None:
    """The queued marker of ``run_dir``, or None when it is not waiting for a worker."""
    return _read(run_dir / QUEUED_NAME)


def clear_queued(run_dir: Path) -> bool:
    """Remove the queued marker (under the run's lock); whether there was one."""
    return _remove(run_dir / QUEUED_NAME)


def clear_handed_over(run_dir: Path) -> bool:
    """As a run goes on (under its lock), remove its queued and refused markers.

    Whether there was one: a run made for the workers (not begun if it has no events).
    """
    queued = _remove(run_dir / QUEUED_NAME)
    return _remove(run_dir / REFUSED_NAME) or queued


def _remove(path: Path) -> bool:
    try:
        os.unlink(path)
    except FileNotFoundError:
        return False
    return True


def write_refused(run_dir: Path, message: str, *, host: str) -> None:
    """Say why no worker runs the run; the queued marker goes, the run is left as it was."""
    from swarm_runtime.storage.store import write_json_atomic

    write_json_atomic(run_dir / REFUSED_NAME, {"message": message, "host": host})
    clear_queued(run_dir)


def read_refused(run_dir: Path) -> str | None:
    """Why a worker refused the run, or None."""
    found = _read(run_dir / REFUSED_NAME)
    return str(found.get("message", "refused by a worker")) if found is not None else None


def _read(path: Path) -> dict[str, Any] | None:
    try:
        found = load_json(read_run_text(path, 1 << 16))
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None

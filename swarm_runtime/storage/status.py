"""A run's status as seen from outside: ``meta.json``, corrected by its lock.

A run whose ``meta.json`` says ``pending`` or ``running`` but whose lock holder is gone
(or that has no lock) was killed: it is ``crashed``, and ``swarm resume`` continues it.
A run handed to the workers that none has taken yet is ``queued``, one a worker would not
run (another version, its flows not there) ``refused`` (SPEC §8.3).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from swarm_runtime.inputs.files import read_run_text
from swarm_runtime.inputs.json_input import load_json
from swarm_runtime.storage.lock import live_holder
from swarm_runtime.storage.queued import QUEUED_NAME, REFUSED_NAME


def read_meta(run_dir: Path) -> dict[str, Any] | None:
    """meta.json as a mapping, or None when it is missing, unreadable or not a mapping."""
    try:
        meta = load_json(read_run_text(run_dir / "meta.json"))
    except (OSError, ValueError):
        return None
    return meta if isinstance(meta, dict) else None


def observed_status(run_dir: Path, meta: dict[str, Any] | None = None) -> str:
    """``meta.json``'s status, or ``crashed`` when it claims a live run nobody runs."""
    meta = read_meta(run_dir) if meta is None else meta
    status = str(meta.get("status", "?")) if meta is not None else "?"
    if status in ("succeeded", "failed") or live_holder(run_dir) is not None:
        return status
    for marker, seen_as in ((QUEUED_NAME, "queued"), (REFUSED_NAME, "refused")):
        if (run_dir / marker).exists():
            return seen_as
    return "crashed" if status in ("pending", "running") else status

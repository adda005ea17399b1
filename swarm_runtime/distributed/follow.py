"""Following a run that a worker runs: its events as they are written, then how it ended.

``swarm run --backend celery`` shows the same progress and table as a local run by
reading the run dir (shared storage), never the broker: the lines come from the events,
the table from ``meta.json``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from swarm_runtime.errors import ConfigError
from swarm_runtime.orchestrator.plan import RunOutcome
from swarm_runtime.storage.queued import read_queued, read_refused
from swarm_runtime.storage.status import observed_status, read_meta

ENDED = ("succeeded", "failed", "stopped")


class RunRefused(ConfigError):
    """No worker will run the run (another version, or its flows are not there)."""


class EventTail:
    """Reads the events appended to a run's ``events.jsonl`` since the last read."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.partial = b""

    def read(self) -> list[dict[str, Any]]:
        """The whole events written since the last call (a torn last line waits)."""
        try:
            with open(self.path, "rb") as stream:
                stream.seek(self.offset)
                data = stream.read()
        except FileNotFoundError:
            return []
        self.offset += len(data)
        lines = (self.partial + data).split(b"\n")
        self.partial = lines.pop()
        events = []
        for line in lines:
            try:
                event = json.loads(line)
            except ValueError:
                continue  # a line cut back by a resume; the resumed run writes it again
            if isinstance(event, dict):
                events.append(event)
        return events


def follow(
    run_dir: Path,
    *,
    observer: Callable[[dict[str, Any]], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    poll_s: float = 0.1,
    timeout: float | None = None,
) -> RunOutcome:
    """Show the run's events as they come until it ends or pauses; how it ended.

    RunRefused when a worker refuses it; TimeoutError after ``timeout`` seconds.
    """
    tail = EventTail(run_dir / "events.jsonl")
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        for event in tail.read():
            if observer is not None:
                observer(event)
        meta = read_meta(run_dir) or {}
        status = meta.get("status")
        ended = (status in ENDED and meta.get("completed_at")) or status == "paused"
        # Not ended after all: handed over again (queued), or a holder is at it (a worker
        # that took it up again and has not yet said so in meta.json).
        if ended and read_queued(run_dir) is None and not _held(run_dir):
            for event in tail.read():  # what was written after the last look
                if observer is not None:
                    observer(event)
            return outcome_of(run_dir, meta)
        refused = read_refused(run_dir)
        if refused is not None:
            raise RunRefused(refused)
        if deadline is not None and time.monotonic() > deadline:
            raise TimeoutError(f"run {run_dir.name} is still {observed_status(run_dir)}")
        sleep(poll_s)


def _held(run_dir: Path) -> bool:
    from swarm_runtime.storage.lock import read_holder

    holder = read_holder(run_dir)
    return holder is not None and holder.alive


def outcome_of(run_dir: Path, meta: dict[str, Any]) -> RunOutcome:
    """How the run stands, as a local run's outcome says it (for the same report)."""
    status = str(meta.get("status"))
    paused = status == "paused"
    return RunOutcome(
        run_id=run_dir.name,
        status=status,
        error=meta.get("error") if not paused else None,
        path=run_dir,
        summary=meta,
        interrupted=status in ("stopped", "paused"),
        paused=paused,
        blocked=meta.get("error") if paused and meta.get("error") else None,
    )

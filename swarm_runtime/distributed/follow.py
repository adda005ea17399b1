"""Following a run that a worker runs: its events as they are written, then how it ended.

``swarm run --backend celery`` shows the same progress and table as a local run by
reading the run dir (shared storage), never the broker: the lines come from the events,
the table from ``meta.json``. What is followed is told to the follower's listeners (its
progress lines, a ``conftest.py``'s) as it is read, with ``followed=True``; the workers'
own listeners hear the run where it is executed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from swarm_runtime.errors import ConfigError
from swarm_runtime.orchestrator.state import RunOutcome
from swarm_runtime.record import Record
from swarm_runtime.storage.lock import live_holder
from swarm_runtime.storage.queued import read_queued, read_refused
from swarm_runtime.storage.status import observed_status, read_meta

if TYPE_CHECKING:
    from swarm_runtime.plugins import SwarmPlugins

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
    plugins: SwarmPlugins | None = None,
    sleep: Callable[[float], None] = time.sleep,
    poll_s: float = 0.1,
    timeout: float | None = None,
    patience: Patience | None = None,
) -> RunOutcome:
    """Show the run's events as they come until it ends or pauses; how it ended.

    RunRefused when a worker refuses it; TimeoutError after ``timeout`` seconds. With
    ``patience``, a run left queued or crashed with nothing new for a while is said once.
    ``plugins`` (default: the process's) hear each event and the end, as followed.
    """
    from swarm_runtime.plugins import process_plugins

    listeners = (plugins or process_plugins()).for_run(followed=True)
    tail = EventTail(run_dir / "events.jsonl")
    deadline = None if timeout is None else time.monotonic() + timeout
    waiting = patience.start() if patience is not None else None
    while True:
        for event in tail.read():
            if waiting is not None:
                waiting.heard()
            listeners.event(event, run_dir)
        meta = read_meta(run_dir) or {}
        status = meta.get("status")
        ended = (status in ENDED and meta.get("completed_at")) or status == "paused"
        # Not ended after all: handed over again (queued), or a holder is at it (a worker
        # that took it up again and has not yet said so in meta.json).
        if ended and read_queued(run_dir) is None and live_holder(run_dir) is None:
            for event in tail.read():  # what was written after the last look
                listeners.event(event, run_dir)
            outcome = outcome_of(run_dir, meta)
            listeners.run_end(outcome)
            return outcome
        refused = read_refused(run_dir)
        if refused is not None:
            raise RunRefused(refused)
        if deadline is not None and time.monotonic() > deadline:
            raise TimeoutError(f"run {run_dir.name} is still {observed_status(run_dir)}")
        if waiting is not None:
            waiting.look(run_dir)
        sleep(poll_s)


class Patience(Record):
    """After how long with nothing new a follower says what the run waits for."""

    notice: Callable[[str], None]
    after_s: float = 30.0
    clock: Callable[[], float] = time.monotonic

    def start(self) -> _Waiting:
        """The watch of one follow, begun now."""
        return _Waiting(self)


class _Waiting:
    def __init__(self, patience: Patience) -> None:
        self.patience = patience
        self.since = patience.clock()
        self.said = False

    def heard(self) -> None:
        """An event came: the run is going."""
        self.since = self.patience.clock()
        self.said = False

    def look(self, run_dir: Path) -> None:
        """Nothing new for long, and no worker at the run: say so, once."""
        patience = self.patience
        if self.said or patience.clock() - self.since < patience.after_s:
            return
        status, quiet = observed_status(run_dir), f"{patience.after_s:g} s"
        if status == "queued":
            self.said = True
            patience.notice(
                f"run {run_dir.name} is still queued after {quiet}: no worker has taken it; "
                "is a 'swarm worker' running on this broker and queue, with this runs dir?"
            )
        elif status == "crashed":
            self.said = True
            patience.notice(
                f"run {run_dir.name} crashed (its worker was lost) and nothing has taken it "
                f"up again for {quiet}; a worker resumes it when the broker gives its task "
                f"again (within about a lease), or: swarm resume {run_dir.name}"
            )


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

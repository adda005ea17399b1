"""A run's ``meta.json`` and the events that open and end it, for flow runs and plan cycles.

Every run, whatever runs its steps, opens the same way (``meta.json`` pending,
``run_created``, running, ``run_started``) and ends the same way (``run_completed``, then
the final ``meta.json``); :class:`RunBook` does both, so each is built in one place.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import msgspec

from swarm_runtime.documents.run import RunStatus, RunSummary
from swarm_runtime.documents.run_events import Ended, RunCreated, RunStarted
from swarm_runtime.orchestrator.recorder import RunRecorder
from swarm_runtime.orchestrator.state import RunState
from swarm_runtime.record import Record
from swarm_runtime.timeutil import Clock, format_ts

if TYPE_CHECKING:
    from swarm_runtime.orchestrator.plan import RunOutcome


class RunHeader(Record):
    """What a run's ``meta.json`` and ``run_created`` say of it besides its counters."""

    flows: Sequence[str]
    backend: str
    mode: str
    engine: str
    initiator: str


class RunBook:
    """Writes one run's ``meta.json`` and its opening and closing events."""

    def __init__(
        self, recorder: RunRecorder, state: RunState, header: RunHeader, clock: Clock
    ) -> None:
        self.recorder = recorder
        self.state = state
        self.header = header
        self.clock = clock
        self.created_at = format_ts(clock())
        """When the run was made (a resumed run keeps its first attempt's)."""

    def summary(self, completed_at: str | None = None) -> RunSummary:
        """``meta.json`` as the run stands."""
        header = self.header
        return self.state.summary(
            self.recorder.run_id,
            header.flows,
            (header.backend, header.mode, header.engine),
            self.created_at,
            completed_at,
        )

    def set_status(self, status: RunStatus, completed_at: str | None = None) -> None:
        """A new status, into ``meta.json`` at once."""
        self.state.status = status
        self.recorder.write_meta(self.summary(completed_at))

    def created(self) -> None:
        """``run_created``: the run's flows, its backend and who started it."""
        header = self.header
        self.recorder.emit(
            RunCreated(
                flows=list(header.flows),
                backend=header.backend,
                initiator=header.initiator,
                stepwise=True,
            )
        )

    def open(self) -> None:
        """A new run: ``meta.json`` pending, ``run_created``, running, ``run_started``."""
        self.set_status("pending")
        self.created()
        self.set_status("running")
        self.recorder.emit(RunStarted(mode="stepwise", routing_enabled=True))

    def emit_completed(self, status: Ended) -> None:
        """``run_completed`` of this attempt, ending with ``status``."""
        self.recorder.emit(self.state.completed(status))

    def finish(self, status: Ended) -> str:
        """The final ``meta.json`` after ``run_completed``; when the attempt ended."""
        completed = format_ts(self.clock())
        self.set_status(status, completed)
        return completed

    def tell_end(self, outcome: RunOutcome | None) -> None:
        """The run's listeners hear how its attempt ended (None: by an exception, as left)."""
        listeners = self.recorder.listeners
        if listeners is None:
            return
        if outcome is None:
            from swarm_runtime.orchestrator.plan import RunOutcome

            state = self.state
            outcome = RunOutcome(
                run_id=self.recorder.run_id,
                status=state.status,
                error=state.error,
                path=self.recorder.layout.root,
                summary=msgspec.to_builtins(self.summary()),
            )
        listeners.run_end(outcome)

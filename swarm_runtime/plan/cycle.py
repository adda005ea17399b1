"""What names a cycle's run, and the run of a plan refused before any step ran.

A cycle is a run of one flow, ``cycle``, whose steps are the plan's, run by the kernel
(:mod:`swarm_runtime.plan.kernel`). A plan that breaks a rule has no step to run: its
cycle is still a run, ``run_created``, ``run_started`` and one ``run_completed{failed}``
naming the rule, opened and closed by the kernel's :class:`RunBook`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from swarm_runtime.credentials import Credentials
from swarm_runtime.orchestrator.context import HistoryBudget
from swarm_runtime.orchestrator.recorder import RunRecorder
from swarm_runtime.orchestrator.run import RunBook, RunHeader
from swarm_runtime.orchestrator.state import RunState
from swarm_runtime.record import Record
from swarm_runtime.timeutil import Clock

if TYPE_CHECKING:
    from swarm_runtime.documents.run import RunSpecDocument
    from swarm_runtime.plugins import RunListeners

CYCLE_FLOW = "cycle"
"""The flow key of a cycle's steps in its run (``<run>/cycle/receipts/…``)."""
PLAN_BACKEND = "plan-executor"
"""The backend a cycle's ``spec.json`` and ``meta.json`` name."""
LOCAL_ENGINE = "plan-handler"
"""The engine of a step whose handler called no model."""


class RefusedRun(Record):
    """Where the run of a refused plan goes, and what writes it."""

    runs_dir: Path
    clock: Clock
    rand: Any
    durable: bool
    credentials: Credentials
    listeners: RunListeners | None


def refused_cycle(where: RefusedRun, spec: RunSpecDocument, why: str) -> tuple[str, Path]:
    """The run of a cycle whose plan was refused: opened and failed; its id and directory."""
    state = RunState(HistoryBudget())
    state.flow(CYCLE_FLOW)  # meta.json lists the cycle's totals, as a cycle that ran does
    recorder = RunRecorder.create(
        where.runs_dir,
        spec,
        state,
        clock=where.clock,
        rand=where.rand,
        durable=where.durable,
        credentials=where.credentials,
        listeners=where.listeners,
    )
    try:
        book = RunBook(
            recorder,
            state,
            RunHeader([CYCLE_FLOW], PLAN_BACKEND, spec.mode, spec.engine, spec.initiator),
            where.clock,
        )
        book.open()
        state.status, state.error = "failed", why
        book.emit_completed("failed")
        book.finish("failed")
    finally:
        recorder.close()
    return recorder.run_id, recorder.layout.root

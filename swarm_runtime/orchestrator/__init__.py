"""The orchestrator: the run loop and its rooms (plan, control, recorder, step, routing)."""

from __future__ import annotations

from swarm_runtime.orchestrator.assembly import build_orchestrator
from swarm_runtime.orchestrator.history import HistoryBudget
from swarm_runtime.orchestrator.loops import LoopCounters
from swarm_runtime.orchestrator.runner import Orchestrator, RunOutcome, RunSpec

__all__ = [
    "HistoryBudget",
    "LoopCounters",
    "Orchestrator",
    "RunOutcome",
    "RunSpec",
    "build_orchestrator",
]

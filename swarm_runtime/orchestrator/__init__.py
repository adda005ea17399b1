"""The orchestrator: routing, prompts, history, and the run loop."""

from __future__ import annotations

from swarm_runtime.orchestrator.history import HistoryBudget
from swarm_runtime.orchestrator.runner import Orchestrator, RunOutcome, RunSpec

__all__ = ["HistoryBudget", "Orchestrator", "RunOutcome", "RunSpec"]

"""The run-level documents: ``spec.json`` (RunSpec) and ``meta.json`` (RunSummary)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from swarm_runtime.contracts.base import Contract, Timestamp
from swarm_runtime.contracts.receipt import Tokens

__all__ = ["FlowTotals", "RunSpecDocument", "RunSummary"]


class RunSpecDocument(Contract):
    """``spec.json``: what was asked for, written once when the run is created."""

    flows: list[str] = Field(min_length=1)
    params: dict[str, Any]
    backend: str
    initiator: str
    mode: str
    engine: str
    start_step: str | None = None
    end_step: str | None = None


class FlowTotals(Contract):
    """One flow's share of a run."""

    steps_executed: int = Field(ge=0)
    loop_iterations: int = Field(ge=0)
    tokens: int = Field(ge=0)
    cost_usd: float = Field(default=0.0, ge=0)
    duration_ms: int = Field(ge=0)
    """Wall time from the flow's first step start to its last step end."""


class RunSummary(Contract):
    """``meta.json``: the run's status and totals, rewritten on every status change."""

    run_id: str
    status: Literal["pending", "running", "paused", "succeeded", "failed", "stopped"]
    flows: list[str]
    backend: str
    mode: str
    engine: str
    created_at: Timestamp
    completed_at: Timestamp | None
    error: str | None
    steps_completed: int = Field(ge=0)
    total_steps_executed: int = Field(ge=0)
    loop_iterations: int = Field(ge=0)
    tokens: Tokens
    cost_usd: float = Field(ge=0)
    flow_totals: dict[str, FlowTotals] = Field(default_factory=dict)
    """Per flow: steps executed, loop iterations, tokens, time spent in steps."""

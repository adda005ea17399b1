"""The run-level documents: ``spec.json`` (RunSpec) and ``meta.json`` (RunSummary)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from swarm_runtime.contracts.base import Contract, SchemaVersion, Timestamp
from swarm_runtime.contracts.receipt import Tokens


class RunSpecDocument(Contract):
    """``spec.json``: what was asked for, written once when the run is created."""

    schema_version: SchemaVersion = "1"
    flows: list[str] = Field(min_length=1)
    params: dict[str, Any]
    backend: str
    initiator: str
    mode: str
    engine: str
    start_step: str | None = None
    end_step: str | None = None
    origin: dict[str, Any] | None = None
    """How the run was made besides the spec (flows dir, scenario, config), so ``swarm
    resume`` needs nothing else; paths are of the machine that made it."""


class FlowTotals(Contract):
    """One flow's share of a run."""

    steps_executed: int = Field(ge=0)
    loop_iterations: int = Field(ge=0)
    tokens: int = Field(ge=0)
    cost_usd: float | None = Field(default=0.0, ge=0)
    """None when the cost of any of the flow's calls is unknown."""
    steps_without_cost: int = Field(default=0, ge=0)
    """Calls of the flow whose cost is unknown (a model missing from the price table)."""
    duration_ms: int = Field(ge=0)
    """Wall time from the flow's first step start to its last step end."""


class RunSummary(Contract):
    """``meta.json``: the run's status and totals, rewritten on every status change."""

    schema_version: SchemaVersion = "1"
    run_id: str
    status: Literal["pending", "running", "paused", "succeeded", "failed", "stopped"]
    flows: list[str]
    """The flows the run runs: the spec's, less those a ``--from``/``--to`` slice leaves out."""
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
    cost_usd: float | None = Field(ge=0)
    """Total USD; None when the cost of any call is unknown (never a guess)."""
    steps_without_cost: int = Field(default=0, ge=0)
    """Calls whose cost is unknown (a model missing from the price table)."""
    flow_totals: dict[str, FlowTotals] = Field(default_factory=dict)
    """Per flow: steps executed, loop iterations, tokens, time spent in steps."""

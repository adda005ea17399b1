"""The run-level documents, declared once: ``spec.json`` and ``meta.json``.

See docs/contract/run-dir.md.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, Meta, UnsetType

from swarm_runtime.documents.base import (
    CURRENT_VERSION,
    Document,
    Problem,
    SchemaVersion,
    Timestamp,
    timestamp_problems,
)
from swarm_runtime.documents.receipt import Tokens

NonNegative = Annotated[int, Meta(ge=0)]
RunStatus = Literal["pending", "running", "paused", "succeeded", "failed", "stopped"]
"""Where a run stands, as ``meta.json`` says."""


class RunSpecDocument(Document, kw_only=True):
    """``spec.json``: what was asked for, written once when the run is created."""

    schema_version: SchemaVersion = CURRENT_VERSION
    """The contract version the document follows."""
    flows: Annotated[list[str], Meta(min_length=1)]
    """The flows asked for, in order."""
    params: dict[str, Any]
    """The run's params (what its prompts and conditions read)."""
    backend: str
    """What runs it: ``claude-step-orchestrator`` (``swarm run``, pytest and the API by default),
    ``gemini-step-orchestrator``, ``celery`` (on ``swarm worker`` processes),
    ``plan-executor`` (a cycle of an execution plan) or the id of a backend added with
    ``register_backend``."""
    initiator: str
    """Who started it."""
    mode: str
    """How models are called (``stub``, ``sdk``, ``cli``, ``replay`` …)."""
    engine: str
    """The engine chosen for the run."""
    start_step: str | None = None
    """The step a ``--from`` slice starts at."""
    end_step: str | None = None
    """The step a ``--to`` slice ends at."""
    origin: dict[str, Any] | UnsetType | None = UNSET
    """How the run was made besides the spec (flows dir, scenario, config), so ``swarm
    resume`` needs nothing else; paths are of the machine that made it."""


class FlowTotals(Document, kw_only=True):
    """One flow's share of a run."""

    steps_executed: NonNegative
    """Step executions begun in the flow."""
    loop_iterations: NonNegative
    """Loops taken back in the flow."""
    tokens: NonNegative
    """Tokens of its calls."""
    cost_usd: Annotated[float, Meta(ge=0)] | None = 0.0
    """None when the cost of any of the flow's calls is unknown."""
    steps_without_cost: NonNegative = 0
    """Calls of the flow whose cost is unknown (a model missing from the price table)."""
    duration_ms: NonNegative
    """Wall time from the flow's first step start to its last step end."""


class RunSummary(Document, kw_only=True):
    """``meta.json``: the run's status and totals, rewritten on every status change."""

    schema_version: SchemaVersion = CURRENT_VERSION
    """The contract version the document follows."""
    run_id: str
    """The run."""
    status: RunStatus
    """Where it stands."""
    flows: list[str]
    """The flows the run runs: the spec's, less those a ``--from``/``--to`` slice leaves out."""
    backend: str
    """What runs it."""
    mode: str
    """How models are called."""
    engine: str
    """The run's engine."""
    created_at: Timestamp
    """When the run was made."""
    completed_at: Timestamp | None
    """When its last attempt ended (null while it runs)."""
    error: str | None
    """Why it did not succeed."""
    steps_completed: NonNegative
    """Step executions that succeeded."""
    total_steps_executed: NonNegative
    """Step executions begun."""
    loop_iterations: NonNegative
    """Loops taken back."""
    tokens: Tokens
    """Tokens of every call."""
    cost_usd: Annotated[float, Meta(ge=0)] | None
    """Total USD; None when the cost of any call is unknown (never a guess)."""
    steps_without_cost: NonNegative = 0
    """Calls whose cost is unknown (a model missing from the price table)."""
    flow_totals: dict[str, FlowTotals] = msgspec.field(default_factory=dict)
    """Per flow: steps executed, loop iterations, tokens, time spent in steps."""

    def problems(self) -> list[Problem]:
        """Its timestamps and its token sum."""
        stamps = timestamp_problems(
            (), ("created_at", self.created_at), ("completed_at", self.completed_at)
        )
        return stamps + [(("tokens", *where), what) for where, what in self.tokens.problems()]

"""The receipt of one step execution (SPEC §3.1)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from swarm_runtime.contracts.base import Contract, SchemaVersion, Timestamp
from swarm_runtime.contracts.envelope import ArtifactRef, Timing
from swarm_runtime.timeutil import parse_ts


class Tokens(Contract):
    """Token usage of the step's call."""

    prompt: int = Field(ge=0)
    completion: int = Field(ge=0)
    total: int = Field(ge=0)
    """Always prompt + completion."""

    @model_validator(mode="after")
    def _total_is_sum(self) -> Tokens:
        if self.total != self.prompt + self.completion:
            raise ValueError(
                f"tokens.total is {self.total} but prompt + completion is "
                f"{self.prompt + self.completion}"
            )
        return self


class ReceiptRouting(Contract):
    """The routing decision taken after the step (SPEC §4.4)."""

    decision: Literal["loop", "advance", "terminate", "pending"]
    reason: str
    loop_iteration: int | None = Field(default=None, ge=0)
    """0-based iteration of a microloop."""
    max_iterations: int | None = Field(default=None, ge=1)


class ContextTruncation(Contract):
    """What was cut from the step's history (SPEC §6.3)."""

    items_dropped: int = Field(ge=0)
    chars_dropped: int = Field(ge=0)


class Receipt(Contract):
    """Written to ``<flow>/receipts/<step>-<agent>.json``."""

    schema_version: SchemaVersion = "1"
    """The contract version the receipt follows (files written before it existed: none)."""
    engine: str = Field(min_length=1)
    """``claude-step``, ``gemini-step`` or a registered engine id."""
    mode: Literal["stub", "sdk", "cli", "local"]
    """How the model was called; ``local``: an execution-plan step whose handler called none."""
    provider: str = Field(pattern=r"^[a-z][a-z0-9_]{0,63}$")
    """Whom the model was called at (``anthropic``, ``anthropic_compat``, ``gemini``, or a
    registered engine's provider); ``none`` when no model was called."""
    model: str
    step_id: str
    flow_key: str
    run_id: str
    agent_key: str
    started_at: Timestamp
    completed_at: Timestamp
    duration_ms: int = Field(ge=0)
    status: Literal["succeeded", "failed"]
    tokens: Tokens
    transcript_path: str
    """Relative to the flow's run_base."""
    error: str | None = None
    routing: ReceiptRouting | None = None
    tools_allowed: list[str] | None = None
    handoff: dict[str, Any] | None = None
    attempt: int | None = Field(default=None, ge=1)
    max_attempts: int | None = Field(default=None, ge=1)
    timing: Timing | None = None
    """Where the step's time went (SPEC §7.2), from its StepOutput."""
    cost: dict[str, Any] | None = None
    artifacts: list[ArtifactRef] | None = None
    """What the step wrote under ``<flow>/artifacts/`` (SPEC §7.4)."""
    context_truncation: ContextTruncation | None = None
    iteration: int | None = Field(default=None, ge=0)
    """0-based count of earlier executions of this step in the run."""
    result_code: Literal["ok", "retryable", "fatal", "blocked", "skipped"] | None = None
    cassette: str | None = None
    """For a replayed sdk call: the cassette it was served from."""
    request_sha256: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")
    """The sha256 hex of the normalised request the engine sent (SPEC §10.7): for an sdk
    call its JSON body with sorted keys; runs written before it existed have none."""

    @model_validator(mode="after")
    def _consistent(self) -> Receipt:
        started = parse_ts(self.started_at)
        completed = parse_ts(self.completed_at)
        if completed < started:
            raise ValueError("completed_at is before started_at")
        elapsed = (completed - started).total_seconds() * 1000
        if abs(elapsed - self.duration_ms) > 1.0:
            raise ValueError(
                f"duration_ms is {self.duration_ms} but the timestamps are {elapsed:.3f} ms apart"
            )
        if self.status == "failed" and not self.error:
            raise ValueError("a failed receipt needs 'error'")
        return self

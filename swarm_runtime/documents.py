"""The write side of the run files: the documents a run writes, as typed mappings.

A run writes plain dicts (pydantic costs more to import than a small run takes); these
``TypedDict`` shapes let mypy check every dict literal of the write path against the
contracts, at no cost at run time. The pydantic models of :mod:`swarm_runtime.contracts`
are the read side; a test keeps the two key for key in step.

Every document carries ``schema_version``, the version of the contracts it follows.
"""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict


class TokensDoc(TypedDict):
    """A receipt's or summary's ``tokens``."""

    prompt: int
    completion: int
    total: int


class CostTokensDoc(TypedDict):
    """The ``cost.tokens`` of a receipt (SPEC §7.2)."""

    input: int
    output: int
    total: int


class CostDoc(TypedDict):
    """A receipt's ``cost`` (SPEC §7.2): what the call cost, ``None`` when unknown."""

    model: str
    provider: str
    tokens: CostTokensDoc
    estimatedCostUsd: float | None


class RoutingDoc(TypedDict):
    """A receipt's ``routing`` (SPEC §4.4)."""

    decision: str
    reason: str
    loop_iteration: NotRequired[int]
    max_iterations: NotRequired[int]


class ReceiptDoc(TypedDict):
    """``<flow>/receipts/<step>-<agent>.json`` (SPEC §3.1)."""

    schema_version: str
    engine: str
    mode: str
    provider: str
    model: str
    step_id: str
    flow_key: str
    run_id: str
    agent_key: str
    started_at: str
    completed_at: str
    duration_ms: int
    status: str
    tokens: TokensDoc
    transcript_path: str
    iteration: int
    result_code: str
    attempt: int
    max_attempts: int
    error: NotRequired[str]
    routing: NotRequired[RoutingDoc]
    handoff: NotRequired[dict[str, Any]]
    context_truncation: NotRequired[dict[str, int]]
    cost: NotRequired[CostDoc]
    cassette: NotRequired[str]
    request_sha256: NotRequired[str]
    tools_allowed: NotRequired[list[str]]
    timing: NotRequired[dict[str, Any]]
    artifacts: NotRequired[list[dict[str, Any]]]


class RunSpecDoc(TypedDict):
    """``spec.json``: what was asked for."""

    schema_version: str
    flows: list[str]
    params: dict[str, Any]
    backend: str
    initiator: str
    mode: str
    engine: str
    start_step: str | None
    end_step: str | None
    origin: NotRequired[dict[str, Any]]


class FlowTotalsDoc(TypedDict):
    """One flow's share of a run in ``meta.json``."""

    steps_executed: int
    loop_iterations: int
    tokens: int
    cost_usd: float | None
    steps_without_cost: int
    duration_ms: int


class RunSummaryDoc(TypedDict):
    """``meta.json``: status and totals."""

    schema_version: str
    run_id: str
    status: str
    flows: list[str]
    backend: str
    mode: str
    engine: str
    created_at: str
    completed_at: str | None
    error: str | None
    steps_completed: int
    total_steps_executed: int
    loop_iterations: int
    tokens: TokensDoc
    cost_usd: float | None
    steps_without_cost: int
    flow_totals: dict[str, FlowTotalsDoc]


class EventDoc(TypedDict):
    """One line of ``events.jsonl`` (SPEC §3.3)."""

    run_id: str
    seq: int
    ts: str
    kind: str
    flow_key: str | None
    step_id: str | None
    agent_key: str | None
    payload: dict[str, Any]

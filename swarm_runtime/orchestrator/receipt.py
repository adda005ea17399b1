"""A step execution's receipt (SPEC §3.1): built once, when its verdict is known.

What the engine answered (the :class:`Call`, after its retries), where the time went and
what the step wrote make an :class:`Execution`; with its :class:`Verdict` (the route it
took, or why it failed) it becomes the one immutable
:class:`~swarm_runtime.documents.receipt.Receipt` (:func:`build_receipt`) that is written.
A routing condition that reads ``receipt`` sees the receipt the step would have if it
succeeded (:class:`ReceiptSoFar`), made only when a condition reads it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import Any, cast

import msgspec
from msgspec import UNSET

from swarm_runtime.documents.receipt import (
    Artifact,
    ContextTruncation,
    Cost,
    CostTokens,
    Mode,
    Receipt,
    ReceiptRouting,
    Timing,
    Tokens,
)
from swarm_runtime.engines.base import StepEngine, StepOutcome, TokenUsage
from swarm_runtime.flow.spec import FlowSpec, StepSpec
from swarm_runtime.orchestrator.history import RenderedHistory
from swarm_runtime.record import Record
from swarm_runtime.timeutil import format_ts, ms_between


class Call(Record):
    """The engine's answer for one step execution, after its retries."""

    outcome: StepOutcome
    error: str | None
    """Why the call failed outside the step contract (an engine that raised, a
    ``retry-after`` too long to wait for)."""
    attempt: int
    max_attempts: int
    llm_ms: int = 0
    """Time spent inside the engine's calls, all attempts together."""
    waited_ms: int = 0
    """Time spent waiting between attempts."""
    earlier_tokens: TokenUsage = TokenUsage()
    """Tokens of the attempts before the last (a ``retryable`` answer may report some)."""
    earlier_cost_usd: float = 0.0
    """The known cost of the attempts before the last."""

    @property
    def tokens(self) -> TokenUsage:
        """Tokens of every attempt of the execution (its budgets and totals count them all)."""
        last, earlier = self.outcome.tokens, self.earlier_tokens
        if not earlier.total:
            return last
        return TokenUsage(last.prompt + earlier.prompt, last.completion + earlier.completion)

    @property
    def cost_usd(self) -> float | None:
        """Cost of every attempt; None when the last one's is unknown."""
        cost = self.outcome.cost_usd
        return cost if cost is None or not self.earlier_cost_usd else cost + self.earlier_cost_usd


class Execution(Record):
    """A step execution whose engine call is over: everything its receipt says but the verdict."""

    run_id: str
    flow: FlowSpec
    step: StepSpec
    engine: StepEngine
    call: Call
    iteration: int
    rendered: RenderedHistory
    """The history its prompt carried (what was cut from it)."""
    timing: Timing
    artifacts: list[Artifact]
    """What it wrote under ``<flow>/artifacts/``."""


class Verdict(Record):
    """How an execution ends: the route it took, or why it failed."""

    error: str | None = None
    routing: ReceiptRouting | None = None
    over_budget: bool = False
    """It broke a budget: a fatal failure whatever the engine answered (SPEC §10.7)."""


def build_receipt(made: Execution, verdict: Verdict) -> Receipt:
    """The receipt of an execution (SPEC §3.1), from its StepOutput's parts and its verdict."""
    call, step, engine, timing = made.call, made.step, made.engine, made.timing
    outcome = call.outcome
    agent = step.primary_agent
    return Receipt(
        engine=engine.engine_id,
        mode=cast(Mode, outcome.mode),  # an engine's; a reader refuses one SPEC §3.1 has not
        provider=outcome.provider,
        model=outcome.model,
        step_id=step.id,
        flow_key=made.flow.key,
        run_id=made.run_id,
        agent_key=agent,
        started_at=timing.started_at,
        completed_at=timing.completed_at,
        duration_ms=timing.duration_ms,
        status="succeeded" if verdict.error is None else "failed",
        tokens=tokens_of(outcome.tokens),
        transcript_path=f"llm/{step.id}-{agent}-{engine.engine_short}.jsonl",
        iteration=made.iteration,
        result_code="fatal" if verdict.over_budget else outcome.result_code,
        attempt=call.attempt,
        max_attempts=call.max_attempts,
        error=UNSET if verdict.error is None else verdict.error,
        routing=UNSET if verdict.routing is None else verdict.routing,
        timing=timing,
        handoff=UNSET if outcome.handoff is None else outcome.handoff,
        context_truncation=(
            ContextTruncation(**made.rendered.truncation) if made.rendered.truncation else UNSET
        ),
        # A provider was called: what it cost, if known.
        cost=(
            UNSET
            if outcome.provider == "none"
            else cost_of(outcome, outcome.tokens, outcome.cost_usd)
        ),
        artifacts=made.artifacts or UNSET,
        cassette=UNSET if outcome.cassette is None else outcome.cassette,
        request_sha256=UNSET if outcome.request_sha256 is None else outcome.request_sha256,
        tools_allowed=UNSET if step.tools is None else list(step.tools),
    )


class ReceiptSoFar(Mapping[str, Any]):
    """The receipt of an execution as routing reads it: as if it succeeded, made on first read."""

    def __init__(self, made: Execution) -> None:
        self._made = made
        self._fields: dict[str, Any] | None = None

    def _read(self) -> dict[str, Any]:
        if self._fields is None:
            self._fields = msgspec.to_builtins(build_receipt(self._made, Verdict()))
        return self._fields

    def __getitem__(self, name: str) -> Any:
        return self._read()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._read())

    def __len__(self) -> int:
        return len(self._read())


def tokens_of(usage: TokenUsage) -> Tokens:
    """A receipt's ``tokens``."""
    return Tokens(prompt=usage.prompt, completion=usage.completion, total=usage.total)


def cost_of(outcome: StepOutcome, tokens: TokenUsage, cost_usd: float | None) -> Cost:
    """A receipt's ``cost`` (SPEC §7.2): the call's model and provider, its tokens and USD."""
    return Cost(
        model=outcome.model,
        provider=outcome.provider,
        tokens=CostTokens(input=tokens.prompt, output=tokens.completion, total=tokens.total),
        estimated_cost_usd=cost_usd,
    )


def step_timing(span: tuple[datetime, datetime], call: Call) -> Timing:
    """The ``timing`` of an execution (SPEC §7.2).

    ``ioMs`` is the rest of its time (files, events, prompt), retry waits left out.
    """
    started, completed = span
    duration = ms_between(started, completed)
    tools = min(call.outcome.tool_call_ms, call.llm_ms)
    return Timing(
        started_at=format_ts(started),
        completed_at=format_ts(completed),
        duration_ms=duration,
        llm_wait_ms=call.llm_ms - tools,
        tool_call_ms=tools,
        io_ms=max(0, duration - call.llm_ms - call.waited_ms),
    )

"""The receipt of one step execution, declared once: written, read, schema.

A receipt is built once, when its verdict is known (:mod:`swarm_runtime.orchestrator.context`
for flow steps, :mod:`swarm_runtime.plan.cycle` for plan steps), written as it is, and read
back by ``swarm runs validate`` with :func:`~swarm_runtime.documents.base.read`. Fields a
receipt may leave out are ``UNSET`` (absent from its JSON); its ``timing``, ``cost`` and
``artifacts`` are the StepOutput envelope's (docs/contract/steps.md#timing-and-cost,
docs/contract/steps.md#artifacts), camelCase as there.

See docs/contract/receipt.md.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from msgspec import UNSET, Meta, UnsetType

from swarm_runtime.documents.base import (
    CURRENT_VERSION,
    Document,
    Location,
    Problem,
    SchemaVersion,
    Timestamp,
    elapsed_problems,
    timestamp_problems,
)
from swarm_runtime.documents.run_events import RouteMove

NonNegative = Annotated[int, Meta(ge=0)]
Mode = Literal["stub", "sdk", "cli", "local"]
"""How a step's model was called; ``local``: an execution-plan step whose handler called none."""
ResultCode = Literal["ok", "retryable", "fatal", "blocked", "skipped"]
"""How an engine answered (docs/contract/steps.md#result-codes)."""
INLINE_LIMIT = 64 * 1024
"""An inline artifact's content stays under this many bytes; larger ones are pointers."""


class Tokens(Document):
    """Token usage of the step's call (or of a run, in ``meta.json``)."""

    prompt: NonNegative
    """Tokens sent."""
    completion: NonNegative
    """Tokens received."""
    total: NonNegative
    """Always prompt + completion."""

    def problems(self) -> list[Problem]:
        """The total is the sum."""
        if self.total != self.prompt + self.completion:
            return [
                (
                    ("total",),
                    f"total is {self.total} but prompt + completion is "
                    f"{self.prompt + self.completion}",
                )
            ]
        return []


class ReceiptRouting(Document):
    """The routing decision taken after the step (docs/flows.md#decisions)."""

    decision: RouteMove
    """loop, advance, terminate (or pending)."""
    reason: str
    """Why."""
    loop_iteration: NonNegative | UnsetType | None = UNSET
    """0-based iteration of a microloop."""
    max_iterations: Annotated[int, Meta(ge=1)] | UnsetType | None = UNSET
    """The loop's bound."""


class ContextTruncation(Document):
    """What was cut from the step's history (docs/flows.md#truncation)."""

    items_dropped: NonNegative
    """History items left out whole."""
    chars_dropped: NonNegative
    """Characters cut, in all."""


class Timing(Document, rename="camel"):
    """Where a step's time went (docs/contract/steps.md#timing-and-cost)."""

    started_at: Timestamp
    """When the step started."""
    completed_at: Timestamp
    """When it ended (>= startedAt)."""
    duration_ms: NonNegative
    """completedAt - startedAt, in whole ms."""
    llm_wait_ms: NonNegative
    """Time spent waiting for the model."""
    tool_call_ms: NonNegative
    """Time spent in tool calls."""
    io_ms: NonNegative
    """Time spent writing the step's files."""

    def problems(self) -> list[Problem]:
        """Its timestamps, and its duration between them."""
        names = ("startedAt", "completedAt", "durationMs")
        return timestamp_problems(
            (), ("startedAt", self.started_at), ("completedAt", self.completed_at)
        ) or elapsed_problems((), self.started_at, self.completed_at, self.duration_ms, names)


class CostTokens(Document):
    """Tokens of a call, as its cost counts them."""

    input: NonNegative
    """Prompt tokens."""
    output: NonNegative
    """Completion tokens."""
    total: NonNegative
    """input + output."""


class Cost(Document, rename="camel"):
    """What a step cost (docs/contract/steps.md#timing-and-cost)."""

    model: str
    """The model called."""
    provider: str
    """Who served it."""
    tokens: CostTokens
    """Its tokens."""
    estimated_cost_usd: Annotated[float, Meta(ge=0)] | None
    """USD from the price table; null for a model it does not list (never a guess)."""


class InlineArtifact(Document, rename="camel", tag_field="kind", tag="inline"):
    """A small artifact carried in the document itself."""

    name: str
    """What the artifact is called."""
    content_type: str
    """Its media type."""
    content: str
    """The content itself, under 64 KB."""

    def problems(self) -> list[Problem]:
        """Small enough to carry."""
        if len(self.content.encode("utf-8")) >= INLINE_LIMIT:
            return [(("content",), "an inline artifact must be under 64 KB; use a pointer")]
        return []


class PointerArtifact(Document, rename="camel", tag_field="kind", tag="pointer"):
    """An artifact stored elsewhere: a file in the run dir, or an object in a bucket."""

    name: str
    """What the artifact is called."""
    uri: str
    """A path relative to the run dir for a file inside it (so a moved or copied run dir
    still verifies), or ``gs://`` / ``s3://``; an absolute ``file://`` URI of an older run
    is still read."""
    content_type: str
    """Its media type."""
    size_bytes: NonNegative
    """Its size."""
    sha256: Annotated[str, Meta(pattern=r"^[0-9a-f]{64}$")]
    """Its SHA-256, 64 lowercase hex characters."""

    def problems(self) -> list[Problem]:
        """A run-relative path without ``..``, or a ``file://``, ``gs://`` or ``s3://`` URI."""
        uri = self.uri
        if uri.startswith(("gs://", "s3://", "file://")) and len(uri.split("://", 1)[1]) > 0:
            return []
        parts = uri.split("/")
        if not uri or uri.startswith("/") or ":" in parts[0] or ".." in parts or "" in parts:
            return [
                (
                    ("uri",),
                    f"{uri!r} is not a path inside the run dir (relative, no '..') nor a "
                    "gs://, s3:// or file:// URI",
                )
            ]
        return []


Artifact = InlineArtifact | PointerArtifact


class ReceiptJudgement(Document):
    """A judge's verdict on the execution, as its ``judgement`` event says it.

    See docs/judges.md#judges.
    """

    name: str
    """The judge."""
    score: Annotated[float, Meta(ge=0, le=1)] | None
    """What it gave, from 0 to 1; null when its reply held no score it could read."""
    threshold: Annotated[float, Meta(ge=0, le=1)]
    """The lowest score that passes."""
    passed: bool
    """score >= threshold."""
    reason: str
    """Why."""
    engine: str
    """The engine that graded."""
    model: str
    """The model it called."""
    tokens: NonNegative
    """Tokens of the judge's call (prompt + completion)."""
    cost_usd: Annotated[float, Meta(ge=0)] | None
    """What the call cost; null when unknown."""
    error: str | UnsetType = UNSET
    """Why the judge's call failed, when it did: no verdict was given (score null)."""


class Receipt(Document, kw_only=True):
    """``<flow>/receipts/<step>-<agent>.json``: one step execution and its verdict."""

    schema_version: SchemaVersion = CURRENT_VERSION
    """The contract version the receipt follows."""
    engine: Annotated[str, Meta(min_length=1)]
    """``claude-step``, ``gemini-step``, ``openai-step``, ``plan-handler`` (an execution-plan
    step whose handler called no model) or a registered engine id."""
    mode: Mode
    """How the model was called; ``local``: an execution-plan step whose handler called none."""
    provider: Annotated[str, Meta(pattern=r"^[a-z][a-z0-9_]{0,63}$")]
    """Whom the model was called at (``anthropic``, ``anthropic_compat``, ``gemini``,
    ``openai``, ``openai_compat``, or a registered engine's provider); ``none`` when no model
    was called (the stub, a plan handler). ``_compat``: a server at another base URL."""
    model: str
    """The model called (``none`` when none was)."""
    step_id: str
    """The step."""
    flow_key: str
    """Its flow."""
    run_id: str
    """Its run."""
    agent_key: str
    """Its primary agent (the receipt's file is named after it)."""
    started_at: Timestamp
    """When the execution started."""
    completed_at: Timestamp
    """When it ended."""
    duration_ms: NonNegative
    """completed_at - started_at, in ms."""
    status: Literal["succeeded", "failed"]
    """How the execution ended."""
    tokens: Tokens
    """Tokens of every attempt of the execution."""
    transcript_path: str
    """Relative to the flow's run_base."""
    error: str | UnsetType | None = UNSET
    """Why it failed (a failed receipt has one)."""
    routing: ReceiptRouting | UnsetType | None = UNSET
    """Where the run went after it."""
    tools_allowed: list[str] | UnsetType | None = UNSET
    """The tools the step may use (its ``tools:``)."""
    handoff: dict[str, Any] | UnsetType | None = UNSET
    """What the step handed on (docs/engines.md#the-engine-contract)."""
    attempt: Annotated[int, Meta(ge=1)] | UnsetType | None = UNSET
    """The attempt that ended the execution."""
    max_attempts: Annotated[int, Meta(ge=1)] | UnsetType | None = UNSET
    """How many attempts it had."""
    timing: Timing | UnsetType | None = UNSET
    """Where the step's time went (docs/contract/steps.md#timing-and-cost), from its StepOutput."""
    cost: Cost | UnsetType | None = UNSET
    """What the call cost (docs/contract/steps.md#timing-and-cost), when a provider was called."""
    artifacts: list[Artifact] | UnsetType | None = UNSET
    """What the step wrote under ``<flow>/artifacts/`` (docs/contract/steps.md#artifacts)."""
    context_truncation: ContextTruncation | UnsetType | None = UNSET
    """What was cut from its history."""
    iteration: NonNegative | UnsetType | None = UNSET
    """0-based count of earlier executions of this step in the run."""
    judgements: list[ReceiptJudgement] | UnsetType | None = UNSET
    """What the step's judges made of its reply (docs/judges.md#judges), in declared order."""
    result_code: ResultCode | UnsetType | None = UNSET
    """How the engine answered, or ``fatal`` for a broken budget
    (docs/contract/steps.md#result-codes, docs/budgets.md)."""
    cassette: str | UnsetType | None = UNSET
    """For a replayed sdk call: the cassette it was served from."""
    request_sha256: Annotated[str, Meta(pattern=r"^[0-9a-f]{64}$")] | UnsetType | None = UNSET
    """The sha256 hex of the normalised request the engine sent
    (docs/record-replay.md#stale-cassettes): for an sdk call its JSON body with sorted keys; runs
    written before it existed have none."""

    def problems(self) -> list[Problem]:
        """Timestamps, the duration between them, sums, and an error on a failure."""
        found = timestamp_problems(
            (), ("started_at", self.started_at), ("completed_at", self.completed_at)
        )
        if not found:
            names = ("started_at", "completed_at", "duration_ms")
            found += elapsed_problems(
                (), self.started_at, self.completed_at, self.duration_ms, names
            )
        found += _within(("tokens",), self.tokens.problems())
        if isinstance(self.timing, Timing):
            found += _within(("timing",), self.timing.problems())
        for number, artifact in enumerate(self.artifacts or ()):
            found += _within(("artifacts", number), artifact.problems())
        if self.status == "failed" and not self.error:
            found.append((("error",), "a failed receipt needs 'error'"))
        return found


def _within(where: Location, problems: list[Problem]) -> list[Problem]:
    """Problems of a part, placed under ``where``."""
    return [((*where, *place), what) for place, what in problems]

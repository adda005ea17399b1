"""The step envelopes: StepInput, StepOutput and their parts.

JSON is camelCase, Python attributes snake_case. Beyond the schema, every rule reports
the JSON path it concerns: ``timing.completedAt`` >= ``timing.startedAt`` and
``timing.durationMs`` consistent with them (within 1 ms); ``error`` present iff the result
code is ``retryable`` or ``fatal``; ``error.retryAfterMs`` only on ``retryable``;
1 <= ``attemptNumber`` <= ``maxAttempts``; an output's ``stepId`` and ``runId`` equal its
input's (:func:`check_pair`). :func:`validate_partial` checks an envelope being built,
field by field, without asking for what is not there yet.

See docs/contract/steps.md#envelopes, docs/contract/steps.md#timing-and-cost and
docs/contract/steps.md#artifacts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)
from pydantic.alias_generators import to_camel

from swarm_runtime.contracts.base import Timestamp
from swarm_runtime.record import Record
from swarm_runtime.timeutil import parse_ts

INLINE_LIMIT = 64 * 1024
"""An inline artifact's content stays under this many bytes; larger ones are pointers."""


class _Envelope(BaseModel):
    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=True,
        protected_namespaces=(),
    )


class EnvelopeIssue(Record):
    """One problem of an envelope, at a JSON path (camelCase, ``a.b[0].c``)."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class StepError(_Envelope):
    """Why a step did not succeed."""

    message: str
    """What went wrong, for a person."""
    code: str | None = None
    """A machine-readable code (e.g. the provider's error type)."""
    retry_after_ms: int | None = Field(default=None, ge=0)
    """How long to wait before retrying (only with ``retryable``)."""


class Timing(_Envelope):
    """Where a step's time went (docs/contract/steps.md#timing-and-cost)."""

    started_at: Timestamp
    """When the step started."""
    completed_at: Timestamp
    """When it ended (>= started_at)."""
    duration_ms: int = Field(ge=0)
    """completedAt - startedAt, in whole ms."""
    llm_wait_ms: int = Field(ge=0)
    """Time spent waiting for the model."""
    tool_call_ms: int = Field(ge=0)
    """Time spent in tool calls."""
    io_ms: int = Field(ge=0)
    """Time spent writing the step's files."""

    @model_validator(mode="after")
    def _consistent(self) -> Timing:
        issues = _timing_issues(self.started_at, self.completed_at, self.duration_ms, "")
        if issues:
            raise ValueError("; ".join(map(str, issues)))
        return self


class CostTokens(_Envelope):
    """Tokens of a call."""

    input: int = Field(ge=0)
    """Prompt tokens."""
    output: int = Field(ge=0)
    """Completion tokens."""
    total: int = Field(ge=0)
    """input + output."""


class Cost(_Envelope):
    """What a step cost (docs/contract/steps.md#timing-and-cost)."""

    model: str
    """The model called."""
    provider: str
    """Who served it."""
    tokens: CostTokens
    """Its tokens."""
    estimated_cost_usd: float | None = Field(ge=0)
    """USD from the price table; None for a model it does not list (never a guess)."""


class InlineArtifact(_Envelope):
    """A small artifact carried in the envelope itself."""

    kind: Literal["inline"] = "inline"
    """Discriminator."""
    name: str
    """What the artifact is called."""
    content_type: str
    """Its media type."""
    content: str
    """The content itself, under 64 KB."""

    @model_validator(mode="after")
    def _small(self) -> InlineArtifact:
        if len(self.content.encode("utf-8")) >= INLINE_LIMIT:
            raise ValueError("content: an inline artifact must be under 64 KB; use a pointer")
        return self


def _artifact_uri(uri: str) -> str:
    """A run-relative path without ``..``, or a ``file://``, ``gs://`` or ``s3://`` URI."""
    if uri.startswith(("gs://", "s3://", "file://")) and len(uri.split("://", 1)[1]) > 0:
        return uri
    parts = uri.split("/")
    if not uri or uri.startswith("/") or ":" in parts[0] or ".." in parts or "" in parts:
        raise ValueError(
            f"{uri!r} is not a path inside the run dir (relative, no '..') nor a "
            "gs://, s3:// or file:// URI"
        )
    return uri


class PointerArtifact(_Envelope):
    """An artifact stored elsewhere: a file in the run dir, or an object in a bucket."""

    kind: Literal["pointer"] = "pointer"
    """Discriminator."""
    name: str
    """What the artifact is called."""
    uri: Annotated[str, AfterValidator(_artifact_uri)]
    """A path relative to the run dir for a file inside it (so a moved or copied run dir
    still verifies), or ``gs://`` / ``s3://``; an absolute ``file://`` URI of an older run
    is still read."""
    content_type: str
    """Its media type."""
    size_bytes: int = Field(ge=0)
    """Its size."""
    sha256: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    """Its SHA-256, 64 lowercase hex characters."""


ArtifactRef = Annotated[InlineArtifact | PointerArtifact, Field(discriminator="kind")]

StepType = Literal["triage", "plan", "code", "resolve", "review", "apply"]
RiskMode = Literal["comment_only", "suggest_patch", "auto_patch", "auto_push"]
CapabilitiesMode = Literal["comment-only", "patch-only", "commit-after-approval"]
ResultCode = Literal["ok", "retryable", "fatal", "blocked", "skipped"]


class StepInput(_Envelope):
    """A step request for callers outside the runtime (docs/contract/steps.md#envelopes).

    The runtime never builds one: an engine is given a ``StepContext``. This envelope is
    for a system that queues steps of a code-change pipeline and hands them to a runner;
    the runtime only prints its schema and checks it.
    """

    run_id: str
    """The run."""
    step_id: str
    """The step."""
    tenant_id: str
    """Whose run it is: the account or team a shared service runs it for."""
    repo: str
    """The repository worked on."""
    pr: int | None = None
    """The pull request number the step works on, if any."""
    issue: int | None = None
    """The issue number the step works on, if any."""
    step_type: StepType
    """Which stage of the pipeline: triage an issue, plan, write code, resolve, review, apply."""
    risk_mode: RiskMode
    """How far the step may go: comment only, suggest a patch, apply it, or push it."""
    capabilities_mode: CapabilitiesMode
    """What the step may do to the repository: comment, patch, or commit once approved."""
    previous_output: dict[str, Any] | None = None
    """The previous step's StepOutput."""
    artifacts: list[ArtifactRef] | None = None
    """Artifacts handed in."""
    model_config_: dict[str, Any] | None = Field(default=None, alias="modelConfig")
    """Model settings for the step."""
    params: dict[str, Any] | None = None
    """Anything else the step is given."""
    queued_at: Timestamp
    """When the step was queued."""
    attempt_number: int
    """This attempt, 1-based."""
    max_attempts: int
    """Attempts allowed."""

    @model_validator(mode="after")
    def _attempts(self) -> StepInput:
        issues = _attempt_issues(self.attempt_number, self.max_attempts)
        if issues:
            raise ValueError("; ".join(map(str, issues)))
        return self


class StepOutput(_Envelope):
    """What a step produced; the receipt and StepResult derive from it.

    See docs/contract/steps.md#envelopes.
    """

    run_id: str
    """The run (equal to the input's)."""
    step_id: str
    """The step (equal to the input's)."""
    result_code: ResultCode
    """What the orchestrator does next (docs/contract/steps.md#result-codes)."""
    summary: str
    """One line on what happened."""
    data: dict[str, Any] | None = None
    """Structured output (e.g. the handoff)."""
    error: StepError | None = None
    """Present exactly when resultCode is retryable or fatal."""
    artifacts: list[ArtifactRef] | None = None
    """Artifacts the step wrote."""
    timing: Timing
    """Where the time went."""
    cost: Cost | None = None
    """What it cost."""
    suggested_next_step: str | None = None
    """A step the engine proposes to go to."""
    requires_approval: bool
    """Whether a person must approve before the next step."""
    proposed_changes: list[dict[str, Any]] | None = None
    """Changes the step proposes."""

    @model_validator(mode="after")
    def _rules(self) -> StepOutput:
        retry_after = self.error.retry_after_ms if self.error is not None else None
        issues = _error_issues(self.result_code, self.error is not None, retry_after)
        if issues:
            raise ValueError("; ".join(map(str, issues)))
        return self


def _timing_issues(started: Any, completed: Any, duration: Any, at: str) -> list[EnvelopeIssue]:
    try:
        begin, end = parse_ts(str(started)), parse_ts(str(completed))
    except ValueError:
        return []  # the schema reports a malformed timestamp
    issues = []
    if end < begin:
        issues.append(
            EnvelopeIssue(f"{at}completedAt", f"{completed} is before startedAt {started}")
        )
    elif isinstance(duration, int):
        span = (end - begin).total_seconds() * 1000
        if abs(span - duration) > 1:
            issues.append(
                EnvelopeIssue(
                    f"{at}durationMs",
                    f"{duration} does not match completedAt - startedAt ({span:.0f} ms)",
                )
            )
    return issues


def _attempt_issues(attempt: Any, maximum: Any) -> list[EnvelopeIssue]:
    if not isinstance(attempt, int) or not isinstance(maximum, int):
        return []
    if attempt < 1 or attempt > maximum:
        return [
            EnvelopeIssue("attemptNumber", f"{attempt} is not within 1..maxAttempts ({maximum})")
        ]
    return []


def _error_issues(code: Any, has_error: bool, retry_after: Any) -> list[EnvelopeIssue]:
    issues = []
    if code in ("retryable", "fatal") and not has_error:
        issues.append(EnvelopeIssue("error", f"required when resultCode is {code}"))
    elif code not in ("retryable", "fatal") and has_error:
        issues.append(EnvelopeIssue("error", f"only with retryable or fatal, not {code}"))
    if retry_after is not None and code != "retryable":
        issues.append(EnvelopeIssue("error.retryAfterMs", f"only with retryable, not {code}"))
    return issues


def _issues_of(exc: ValidationError) -> list[EnvelopeIssue]:
    found = []
    for error in exc.errors():
        loc = error.get("loc", ())
        path = ""
        for part in loc:
            if isinstance(part, int):
                path += f"[{part}]"
            elif part not in ("inline", "pointer"):  # union branch names are not JSON
                path += f".{part}" if path else str(part)
        message = str(error.get("msg", "invalid")).removeprefix("Value error, ")
        if ": " in message and " " not in message.split(": ", 1)[0]:
            sub, message = message.split(": ", 1)  # our own rules name their field
            path = f"{path}.{sub}" if path else sub
        found.append(EnvelopeIssue(path or "(root)", message))
    return found


def _validate(model: type[_Envelope], data: Mapping[str, Any]) -> list[EnvelopeIssue]:
    try:
        model.model_validate(dict(data))
    except ValidationError as exc:
        return _issues_of(exc)
    return []


def validate_step_input(data: Mapping[str, Any]) -> list[EnvelopeIssue]:
    """Every problem of a StepInput document (never raises)."""
    return _validate(StepInput, data)


def validate_step_output(data: Mapping[str, Any]) -> list[EnvelopeIssue]:
    """Every problem of a StepOutput document (never raises)."""
    return _validate(StepOutput, data)


def check_pair(step_input: StepInput, step_output: StepOutput) -> list[EnvelopeIssue]:
    """An output must answer its input: same ``stepId`` and ``runId``."""
    issues = []
    for path, mine, theirs in (
        ("stepId", step_output.step_id, step_input.step_id),
        ("runId", step_output.run_id, step_input.run_id),
    ):
        if mine != theirs:
            issues.append(EnvelopeIssue(path, f"{mine!r} differs from the input's {theirs!r}"))
    return issues


def validate_partial(
    kind: Literal["step_input", "step_output"], data: Mapping[str, Any]
) -> list[EnvelopeIssue]:
    """Problems of an envelope being built: only the fields present are checked."""
    model: type[_Envelope] = StepInput if kind == "step_input" else StepOutput
    try:
        model.model_validate(dict(data))
    except ValidationError as exc:
        issues = [i for i in _issues_of(exc) if not _missing(exc, i.path) and i.path != "(root)"]
    else:
        return []
    # Cross-field rules whose fields are all there (the model skipped them on errors).
    timing = data.get("timing")
    if isinstance(timing, Mapping) and {"startedAt", "completedAt"} <= set(timing):
        issues += _timing_issues(
            timing["startedAt"], timing["completedAt"], timing.get("durationMs"), "timing."
        )
    if "attemptNumber" in data and "maxAttempts" in data:
        issues += _attempt_issues(data["attemptNumber"], data["maxAttempts"])
    if "resultCode" in data:
        error = data.get("error")
        retry_after = error.get("retryAfterMs") if isinstance(error, Mapping) else None
        code_issues = _error_issues(data["resultCode"], error is not None, retry_after)
        issues += [i for i in code_issues if "required" not in i.message or "error" in data]
    unique = {(i.path, i.message): i for i in issues}
    return list(unique.values())


def _missing(exc: ValidationError, path: str) -> bool:
    return any(
        e.get("type") == "missing" and ".".join(str(p) for p in e.get("loc", ())) == path
        for e in exc.errors()
    )

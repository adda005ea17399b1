"""Execution plans, v1 (docs/plans.md): a flat list of typed steps, and their results.

Field names are those of the plan document (``topK``, ``llmMs``, ``step_contract_version``),
so a plan reads the same in JSON and in Python. The models fix the shape; the ordering
rules of docs/plans.md (canonical order, mandatory types, unique ids, ``topK``) are checked by
:func:`swarm_runtime.plan.validate.plan_violations`, which names the rule and the step.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import Field

from swarm_runtime.contracts.base import Contract, OpenContract

StepType = Literal[
    "RepoScan",
    "ContextSelect",
    "RetrieveMemory",
    "PromptAssemble",
    "LLMCall",
    "SummarizeMemory",
    "PersistMemory",
    "PersistSession",
]
STEP_TYPES: tuple[str, ...] = get_args(StepType)
"""The v1 step types, in their canonical order."""


class PlanTimeouts(Contract):
    """Limits of one call, in milliseconds."""

    llmMs: int | None = Field(default=None, ge=1)
    """An ``LLMCall`` that takes longer fails its cycle."""
    ioMs: int | None = Field(default=None, ge=1)
    """A scan, a selection, a memory or session read or write that takes longer fails."""


class PlanBudgets(Contract):
    """What a cycle may spend."""

    promptTokens: int | None = Field(default=None, ge=1)
    """An ``LLMCall`` whose prompt is larger (ceil(chars / 4)) fails its cycle uncalled."""


class PlanMetadata(Contract):
    """The plan's common metadata; step-specific settings go here, never into a step."""

    topK: int | None = Field(default=None, ge=1)
    """Memories a ``RetrieveMemory`` step may return at most (required when it is present)."""
    timeouts: PlanTimeouts | None = None
    budgets: PlanBudgets | None = None
    policyProfile: str
    """The policy that made the plan (recorded, not interpreted)."""
    mode: str
    """The policy's mode (recorded, not interpreted)."""


class StepDefinition(Contract):
    """One step: an id unique in the plan, a v1 type, and the payload its handler reads."""

    id: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    """Names the step's receipt and transcript files, as a flow step's id does."""
    type: StepType
    payload: Any
    """Handed to the step's handler as written; what it means is the handler's business."""


class ExecutionPlan(Contract):
    """Typed steps fixed ahead of time by the plan's author; the executor runs them in order.

    The author is you, or a program of yours that decides what to run (docs/plans.md).
    """

    step_contract_version: Literal["1"]
    extensions: list[Any] = Field(max_length=0)
    """Reserved for v2; empty in v1."""
    metadata: PlanMetadata
    steps: list[StepDefinition] = Field(min_length=1)


# -- results: what each type's handler returns (extra fields are kept) ---------------------


class RepoScanResult(OpenContract):
    """``RepoScan``."""

    versionId: str = Field(min_length=1)
    """``git:<HEAD>`` in a git work tree, else ``sha256:<hash of names and contents>``."""
    fileCount: int = Field(ge=0)


class ContextSelectResult(OpenContract):
    """``ContextSelect``."""

    selectedContext: list[Any]


class MemoryItem(OpenContract):
    """One memory retrieved."""

    id: str
    summary: str
    timestamp: str


class RetrieveMemoryResult(OpenContract):
    """``RetrieveMemory``: 0 to ``topK`` items, best match first."""

    items: list[MemoryItem]


class PromptAssembleResult(OpenContract):
    """``PromptAssemble``."""

    prompt: str


class LLMCallResult(OpenContract):
    """``LLMCall``."""

    response: str


class SummarizeMemoryResult(OpenContract):
    """``SummarizeMemory``."""

    summary: str
    keywords: list[str]


class PersistMemoryResult(OpenContract):
    """``PersistMemory``."""

    id: str = Field(min_length=1)


class PersistSessionResult(OpenContract):
    """``PersistSession``."""

    status: str = Field(min_length=1)


RESULT_MODELS: dict[str, type[OpenContract]] = {
    "RepoScan": RepoScanResult,
    "ContextSelect": ContextSelectResult,
    "RetrieveMemory": RetrieveMemoryResult,
    "PromptAssemble": PromptAssembleResult,
    "LLMCall": LLMCallResult,
    "SummarizeMemory": SummarizeMemoryResult,
    "PersistMemory": PersistMemoryResult,
    "PersistSession": PersistSessionResult,
}


def result_problem(step_type: str, result: Any) -> str | None:
    """Why a handler's result breaks its type's contract, or None."""
    from pydantic import ValidationError

    model = RESULT_MODELS[step_type]
    try:
        model.model_validate(result)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(part) for part in first["loc"]) or "(result)"
        return f"{where}: {first['msg']}"
    return None

"""The v1 step types in one table: order, whether mandatory, failure class, limit, agent.

Everything the executor knows about a type is its row here (docs/plans.md); adding a type in a
later version is one row, and nothing else in the core changes.
"""

from __future__ import annotations

from typing import Literal

from swarm_runtime.record import Record


class StepKind(Record):
    """One v1 step type as the core sees it."""

    name: str
    mandatory: bool
    failure: Literal["CycleFail", "FailFast"]
    """CycleFail ends this cycle; FailFast stops the runtime (stored data is at stake)."""
    limit: Literal["llmMs", "ioMs"] | None
    """The ``metadata.timeouts`` entry that bounds one call of its handler."""
    agent: str
    """The agent key its receipt and transcript are named by."""
    role: str
    """What the step does, as its ``step_start`` event says."""


KINDS: dict[str, StepKind] = {
    kind.name: kind
    for kind in (
        StepKind("RepoScan", False, "CycleFail", "ioMs", "repo-scan", "scan the repository"),
        StepKind(
            "ContextSelect", True, "CycleFail", "ioMs", "context-select", "select the context"
        ),
        StepKind(
            "RetrieveMemory", False, "CycleFail", "ioMs", "retrieve-memory", "retrieve memories"
        ),
        StepKind(
            "PromptAssemble", True, "CycleFail", None, "prompt-assemble", "assemble the prompt"
        ),
        StepKind("LLMCall", True, "CycleFail", "llmMs", "llm-call", "call the model"),
        StepKind(
            "SummarizeMemory", False, "CycleFail", None, "summarize-memory", "summarise the reply"
        ),
        StepKind("PersistMemory", False, "FailFast", "ioMs", "persist-memory", "store the memory"),
        StepKind(
            "PersistSession", True, "FailFast", "ioMs", "persist-session", "store the session"
        ),
    )
}
"""The v1 types, in canonical order."""

CANONICAL_ORDER: tuple[str, ...] = tuple(KINDS)

"""The verdict on an engine's answer: does it fail the step, and how long to wait to retry.

SPEC §7.3: ``fatal`` and ``blocked`` fail the step, ``retryable`` is retried within the
execution (``retry-after`` or equal-jitter backoff) until its attempts run out, and a step
that breaks its budget fails however the engine answered.
"""

from __future__ import annotations

from swarm_runtime.engines.base import StepOutcome, TokenUsage
from swarm_runtime.flow.spec import StepSpec

BACKOFF_BASE_S = 0.5
"""The first retry waits about this long (SPEC §7.3: 0.5 s × 2ⁿ)."""
BACKOFF_CAP_S = 30.0
"""No retry waits longer, unless the provider's ``retry-after`` says so."""


def backoff_delay(attempt: int, retry_after_ms: int | None, jitter: float) -> float:
    """Seconds to wait after failed ``attempt``: ``retry-after`` if given, else equal jitter."""
    if retry_after_ms is not None:
        return retry_after_ms / 1000.0
    base: float = min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2.0 ** (attempt - 1))
    return base / 2 + base / 2 * jitter


def budget_error(
    step: StepSpec, tokens: TokenUsage, duration_ms: int, cost_usd: float | None
) -> str | None:
    """Why the execution broke its step's budget, or None."""
    budget = step.budget
    if budget is None:
        return None
    if budget.tokens is not None and tokens.total > budget.tokens:
        return f"token budget exceeded: used {tokens.total}, budget {budget.tokens}"
    if budget.cost_usd is not None and cost_usd is not None and cost_usd > budget.cost_usd:
        return f"cost budget exceeded: spent ${cost_usd:.6f}, budget ${budget.cost_usd:.6f}"
    if budget.duration_ms is not None and duration_ms > budget.duration_ms:
        return f"duration budget exceeded: took {duration_ms} ms, budget {budget.duration_ms} ms"
    return None


def outcome_error(step: StepSpec, outcome: StepOutcome, max_attempts: int) -> str | None:
    """Why the engine's answer fails the step (SPEC §7.3), or None."""
    code = outcome.result_code
    result = outcome.result
    if result.step_id != step.id:
        return f"engine returned a result for step '{result.step_id}' while running '{step.id}'"
    detail = result.error or "no detail"
    if code == "fatal":
        return result.error or "fatal error"
    if code == "retryable":
        return f"still failing after {max_attempts} attempt(s): {detail}"
    if code == "blocked":
        return (
            f"step returned result_code 'blocked' ({detail}); pausing for external input "
            "is not supported in this version, so the step fails"
        )
    if result.status == "failed":
        return result.error or "the engine reported a failure without a message"
    return None

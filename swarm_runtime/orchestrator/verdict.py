"""The verdict on an engine's answer: does it fail the step, and how long to wait to retry.

SPEC §7.3: ``fatal`` and ``blocked`` fail the step, ``retryable`` is retried within the
execution (``retry-after`` or equal-jitter backoff) until its attempts run out; a server
that asks for a longer wait than ``max_retry_after_s`` is not waited for. Budgets
(a step that breaks one fails however the engine answered) are in :mod:`.budgets`.
"""

from __future__ import annotations

from swarm_runtime.engines.base import StepOutcome
from swarm_runtime.flow.spec import StepSpec

BACKOFF_BASE_S = 0.5
"""The first retry waits about this long (SPEC §7.3: 0.5 s × 2ⁿ)."""
BACKOFF_CAP_S = 30.0
"""No backoff waits longer."""


def backoff_delay(attempt: int, retry_after_ms: int | None, jitter: float) -> float:
    """Seconds to wait after failed ``attempt``: ``retry-after`` if given, else equal jitter."""
    if retry_after_ms is not None:
        return retry_after_ms / 1000.0
    base: float = min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2.0 ** (attempt - 1))
    return base / 2 + base / 2 * jitter


def retry_after_refused(outcome: StepOutcome, attempt: int, max_retry_after_s: float) -> str | None:
    """Why a ``retryable`` answer is not retried: its ``retry-after`` is too long; or None."""
    asked = outcome.retry_after_ms
    if asked is None or asked <= max_retry_after_s * 1000:
        return None
    return (
        f"not retried after attempt {attempt}: the server asked to wait {asked / 1000:.15g} s "
        f"(retry-after), longer than max_retry_after_s = {max_retry_after_s:g} s "
        "(runtime.yaml max_retry_after_s or SWARM_MAX_RETRY_AFTER_S raises it): "
        f"{outcome.result.error or 'no detail'}"
    )


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

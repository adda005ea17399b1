"""How a provider's HTTP status maps to a result code, for every live engine.

See docs/contract/steps.md#result-codes.
"""

from __future__ import annotations

from swarm_runtime.engines.base import ResultCode

RETRYABLE_STATUS = frozenset({408, 409, 429, 529})
FATAL_STATUS = frozenset({400, 401, 403, 404, 413, 422})


def code_for_status(status: int) -> ResultCode:
    """``retryable`` for 408, 409, 429, 5xx and 529; ``fatal`` for the rest."""
    if status in FATAL_STATUS:
        return "fatal"
    if status in RETRYABLE_STATUS or status >= 500:
        return "retryable"
    return "fatal"

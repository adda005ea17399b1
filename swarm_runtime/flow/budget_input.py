"""A run budget as a user gives it (docs/budgets.md): ``--budget``, runtime.yaml, a marker.

``swarm run --budget tokens=N,cost_usd=X,duration_ms=M`` (any subset), the same keys under
``budget:`` in runtime.yaml, and ``@pytest.mark.swarm_budget(tokens=…)`` all become one
:class:`~swarm_runtime.flow.spec.Budget`; a bad key or value is a :class:`ConfigError`
that names it and says what is allowed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from swarm_runtime.errors import ConfigError
from swarm_runtime.flow.spec import Budget

BUDGET_KEYS = ("tokens", "cost_usd", "duration_ms")
ALLOWED = (
    "tokens (a whole number >= 1), cost_usd (a number >= 0) and duration_ms (a whole number >= 1)"
)
"""What a budget may hold, for messages."""


def budget_from_text(text: str, where: str = "--budget") -> Budget:
    """``tokens=N,cost_usd=X,duration_ms=M`` (any subset, at least one) as a Budget."""
    raw: dict[str, Any] = {}
    for part in text.split(","):
        key, sep, value = part.strip().partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(
                f"{where} {text!r}: {part.strip()!r} is not KEY=VALUE; give "
                f"tokens=N,cost_usd=X,duration_ms=M (any of them): {ALLOWED}"
            )
        if key in raw:
            raise ConfigError(f"{where} {text!r}: '{key}' is given twice")
        raw[key] = _number(value.strip())
    return budget_from_mapping(raw, where)


def budget_from_mapping(raw: Mapping[str, Any], where: str) -> Budget:
    """A mapping of budget keys (runtime.yaml's ``budget:``, a marker's kwargs) as a Budget."""
    if not isinstance(raw, Mapping) or not raw:
        raise ConfigError(f"{where}: a budget is a mapping of one or more of {ALLOWED}")
    values: dict[str, Any] = {}
    for key, value in raw.items():
        if key not in BUDGET_KEYS:
            raise ConfigError(f"{where}: unknown budget key {key!r} (allowed: {ALLOWED})")
        values[key] = _checked(key, value, where)
    return Budget(**values)


def budget_document(budget: Budget) -> dict[str, int | float]:
    """The keys a budget sets, as kept in a run's ``spec.json`` (``origin.budget``)."""
    return {key: getattr(budget, key) for key in BUDGET_KEYS if getattr(budget, key) is not None}


def _checked(key: str, value: Any, where: str) -> int | float:
    whole = isinstance(value, int) and not isinstance(value, bool)
    if key == "cost_usd":
        if (whole or isinstance(value, float)) and math.isfinite(value) and value >= 0:
            return float(value)
        raise ConfigError(f"{where}: cost_usd must be a number >= 0 (USD), got {value!r}")
    if whole and value >= 1:
        return int(value)
    raise ConfigError(f"{where}: {key} must be a whole number >= 1, got {value!r}")


def _number(text: str) -> int | float | str:
    """A value of ``--budget`` as a number when it is one (else the text, refused later)."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text

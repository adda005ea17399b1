"""Execution plans (docs/plans.md): a flat list of typed steps run in order by a neutral core.

Names are imported on first use, so importing the package costs nothing until a plan
is read or run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from swarm_runtime.lazy import lazy_names as _lazy_names

if TYPE_CHECKING:
    from swarm_runtime.plan.builtins import default_handlers
    from swarm_runtime.plan.executor import CycleResult, PlanPaths, PlanRuntime
    from swarm_runtime.plan.handlers import (
        Handler,
        HandlerError,
        HandlerRegistry,
        LLMReply,
        StepCall,
    )
    from swarm_runtime.plan.kinds import CANONICAL_ORDER, KINDS, StepKind
    from swarm_runtime.plan.memory_store import MemoryStore
    from swarm_runtime.plan.validate import (
        RULES,
        PlanViolation,
        checked_plan,
        plan_violations,
        read_plan_file,
    )

__all__ = [
    "CANONICAL_ORDER",
    "KINDS",
    "RULES",
    "CycleResult",
    "Handler",
    "HandlerError",
    "HandlerRegistry",
    "LLMReply",
    "MemoryStore",
    "PlanPaths",
    "PlanRuntime",
    "PlanViolation",
    "StepCall",
    "StepKind",
    "checked_plan",
    "default_handlers",
    "plan_violations",
    "read_plan_file",
]

_HOMES = {
    "CycleResult": "executor",
    "PlanPaths": "executor",
    "PlanRuntime": "executor",
    "Handler": "handlers",
    "HandlerError": "handlers",
    "HandlerRegistry": "handlers",
    "LLMReply": "handlers",
    "StepCall": "handlers",
    "default_handlers": "builtins",
    "CANONICAL_ORDER": "kinds",
    "KINDS": "kinds",
    "StepKind": "kinds",
    "MemoryStore": "memory_store",
    "RULES": "validate",
    "PlanViolation": "validate",
    "checked_plan": "validate",
    "plan_violations": "validate",
    "read_plan_file": "validate",
}


__getattr__ = _lazy_names(__name__, {k: f".{v}" for k, v in _HOMES.items()}, globals())

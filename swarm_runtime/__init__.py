"""swarm-stepwise: run LLM agent flows one step at a time.

Every step is one LLM call with a receipt, a transcript and events. The contracts
(pydantic models) live in :mod:`swarm_runtime.contracts` and are imported on demand, so
running flows does not pay for them. The names below are imported on first use too, so
importing one module of the package (as the pytest plugin does at start-up) costs only
that module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from swarm_runtime.lazy import lazy_names as _lazy_names
from swarm_runtime.versions import PACKAGE_VERSION as _PACKAGE_VERSION

if TYPE_CHECKING:
    from swarm_runtime.engines import (
        EngineOptions,
        EngineRegistry,
        Scenario,
        StepContext,
        StepEngine,
        StepOutcome,
        StepResult,
        StubEngine,
        TokenUsage,
        default_registry,
    )
    from swarm_runtime.errors import (
        ConfigError,
        CredentialLeak,
        EngineError,
        FlowDefinitionError,
        HandoffError,
        ReplayDivergence,
        RoutingError,
        RunControlError,
        ScenarioError,
        StorageError,
        SwarmError,
        SwarmRunError,
        SwarmUsageError,
    )
    from swarm_runtime.flow import FlowRegistry, load_flow
    from swarm_runtime.orchestrator import HistoryBudget, Orchestrator, RunOutcome, RunSpec
    from swarm_runtime.orchestrator.deps import EngineChoice, RunDeps, RunLimits
    from swarm_runtime.service import Backend, get_backend, register_backend

__all__ = [
    "Backend",
    "ConfigError",
    "CredentialLeak",
    "EngineChoice",
    "EngineError",
    "EngineOptions",
    "EngineRegistry",
    "FlowDefinitionError",
    "FlowRegistry",
    "HandoffError",
    "HistoryBudget",
    "Orchestrator",
    "ReplayDivergence",
    "RoutingError",
    "RunControlError",
    "RunDeps",
    "RunLimits",
    "RunOutcome",
    "RunSpec",
    "Scenario",
    "ScenarioError",
    "StepContext",
    "StepEngine",
    "StepOutcome",
    "StepResult",
    "StorageError",
    "StubEngine",
    "SwarmError",
    "SwarmRunError",
    "SwarmUsageError",
    "TokenUsage",
    "default_registry",
    "get_backend",
    "load_flow",
    "register_backend",
]
__version__ = _PACKAGE_VERSION

_LAZY = {
    "Backend": "swarm_runtime.service",
    "get_backend": "swarm_runtime.service",
    "register_backend": "swarm_runtime.service",
    "RunControlError": "swarm_runtime.errors",
    "ConfigError": "swarm_runtime.errors",
    "CredentialLeak": "swarm_runtime.errors",
    "HandoffError": "swarm_runtime.errors",
    "ReplayDivergence": "swarm_runtime.errors",
    "EngineError": "swarm_runtime.errors",
    "FlowDefinitionError": "swarm_runtime.errors",
    "FlowRegistry": "swarm_runtime.flow",
    "HistoryBudget": "swarm_runtime.orchestrator",
    "Orchestrator": "swarm_runtime.orchestrator",
    "RoutingError": "swarm_runtime.errors",
    "RunOutcome": "swarm_runtime.orchestrator",
    "RunSpec": "swarm_runtime.orchestrator",
    "Scenario": "swarm_runtime.engines",
    "ScenarioError": "swarm_runtime.errors",
    "StepContext": "swarm_runtime.engines",
    "StepEngine": "swarm_runtime.engines",
    "StepResult": "swarm_runtime.engines",
    "StorageError": "swarm_runtime.errors",
    "SwarmError": "swarm_runtime.errors",
    "SwarmRunError": "swarm_runtime.errors",
    "SwarmUsageError": "swarm_runtime.errors",
    "default_registry": "swarm_runtime.engines",
    "load_flow": "swarm_runtime.flow",
    "EngineOptions": "swarm_runtime.engines",
    "EngineRegistry": "swarm_runtime.engines",
    "StepOutcome": "swarm_runtime.engines",
    "StubEngine": "swarm_runtime.engines",
    "TokenUsage": "swarm_runtime.engines",
    "EngineChoice": "swarm_runtime.orchestrator.deps",
    "RunDeps": "swarm_runtime.orchestrator.deps",
    "RunLimits": "swarm_runtime.orchestrator.deps",
}


__getattr__ = _lazy_names(__name__, _LAZY, globals())


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])

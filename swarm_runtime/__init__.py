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
        Scenario,
        StepContext,
        StepEngine,
        StepResult,
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
    from swarm_runtime.service import Backend, get_backend, register_backend

__all__ = [
    "Backend",
    "ConfigError",
    "CredentialLeak",
    "EngineError",
    "FlowDefinitionError",
    "FlowRegistry",
    "HandoffError",
    "HistoryBudget",
    "Orchestrator",
    "ReplayDivergence",
    "RoutingError",
    "RunControlError",
    "RunOutcome",
    "RunSpec",
    "Scenario",
    "ScenarioError",
    "StepContext",
    "StepEngine",
    "StepResult",
    "StorageError",
    "SwarmError",
    "SwarmRunError",
    "SwarmUsageError",
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
}


__getattr__ = _lazy_names(__name__, _LAZY, globals())


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])

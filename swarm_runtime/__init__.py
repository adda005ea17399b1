"""swarm-stepwise: run LLM agent flows one step at a time.

Every step is one LLM call with a receipt, a transcript and events. The contracts
(pydantic models) live in :mod:`swarm_runtime.contracts` and are imported on demand, so
running flows does not pay for them. The names below are imported on first use too, so
importing one module of the package (as the pytest plugin does at start-up) costs only
that module.
"""

from __future__ import annotations

from swarm_runtime.lazy import lazy_names as _lazy_names
from swarm_runtime.versions import PACKAGE_VERSION as _PACKAGE_VERSION

TYPE_CHECKING = False  # not typing's: the ``swarm`` command imports this before its first line
if TYPE_CHECKING:
    from swarm_runtime.engines.base import (
        StepContext,
        StepEngine,
        StepOutcome,
        StepResult,
        TokenUsage,
    )
    from swarm_runtime.engines.options import EngineOptions
    from swarm_runtime.engines.registry import EngineRegistry, default_registry
    from swarm_runtime.engines.scenario import Scenario
    from swarm_runtime.engines.stub import StubEngine
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
    from swarm_runtime.flow.loader import load_flow
    from swarm_runtime.flow.registry import FlowRegistry
    from swarm_runtime.orchestrator.context import HistoryBudget
    from swarm_runtime.orchestrator.plan import EngineChoice, RunDeps, RunLimits, RunSpec
    from swarm_runtime.orchestrator.run import Orchestrator
    from swarm_runtime.orchestrator.state import RunOutcome
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
    "FlowRegistry": "swarm_runtime.flow.registry",
    "HistoryBudget": "swarm_runtime.orchestrator.context",
    "Orchestrator": "swarm_runtime.orchestrator.run",
    "RoutingError": "swarm_runtime.errors",
    "RunOutcome": "swarm_runtime.orchestrator.state",
    "RunSpec": "swarm_runtime.orchestrator.plan",
    "Scenario": "swarm_runtime.engines.scenario",
    "ScenarioError": "swarm_runtime.errors",
    "StepContext": "swarm_runtime.engines.base",
    "StepEngine": "swarm_runtime.engines.base",
    "StepResult": "swarm_runtime.engines.base",
    "StorageError": "swarm_runtime.errors",
    "SwarmError": "swarm_runtime.errors",
    "SwarmRunError": "swarm_runtime.errors",
    "SwarmUsageError": "swarm_runtime.errors",
    "default_registry": "swarm_runtime.engines.registry",
    "load_flow": "swarm_runtime.flow.loader",
    "EngineOptions": "swarm_runtime.engines.options",
    "EngineRegistry": "swarm_runtime.engines.registry",
    "StepOutcome": "swarm_runtime.engines.base",
    "StubEngine": "swarm_runtime.engines.stub",
    "TokenUsage": "swarm_runtime.engines.base",
    "EngineChoice": "swarm_runtime.orchestrator.plan",
    "RunDeps": "swarm_runtime.orchestrator.plan",
    "RunLimits": "swarm_runtime.orchestrator.plan",
}


__getattr__ = _lazy_names(__name__, _LAZY, globals())


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])

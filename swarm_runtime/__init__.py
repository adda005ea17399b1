"""swarm-stepwise: run LLM agent flows one step at a time.

Every step is one LLM call with a receipt, a transcript and events. The contracts
(pydantic models) live in :mod:`swarm_runtime.contracts` and are imported on demand, so
running flows does not pay for them.
"""

from __future__ import annotations

from swarm_runtime.engines import Scenario, StepContext, StepEngine, StepResult, default_registry
from swarm_runtime.errors import (
    ConfigError,
    EngineError,
    FlowDefinitionError,
    RoutingError,
    ScenarioError,
    StorageError,
    SwarmError,
    SwarmRunError,
    SwarmUsageError,
)
from swarm_runtime.flow import FlowRegistry, load_flow
from swarm_runtime.orchestrator import HistoryBudget, Orchestrator, RunOutcome, RunSpec

__all__ = [
    "ConfigError",
    "EngineError",
    "FlowDefinitionError",
    "FlowRegistry",
    "HistoryBudget",
    "Orchestrator",
    "RoutingError",
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
    "load_flow",
]
__version__ = "0.1.0"

"""Step engines: the interface, the registry and the built-in engines."""

from __future__ import annotations

from swarm_runtime.engines.base import (
    Prompt,
    RunEvent,
    StepContext,
    StepEngine,
    StepOutcome,
    StepResult,
    TokenUsage,
)
from swarm_runtime.engines.registry import EngineOptions, EngineRegistry, default_registry
from swarm_runtime.engines.scenario import Outcome, Scenario, ToolCall
from swarm_runtime.engines.stub import StubEngine

__all__ = [
    "EngineOptions",
    "EngineRegistry",
    "Outcome",
    "Prompt",
    "RunEvent",
    "Scenario",
    "StepContext",
    "StepEngine",
    "StepOutcome",
    "StepResult",
    "StubEngine",
    "TokenUsage",
    "ToolCall",
    "default_registry",
]

"""Flows: the YAML graphs of agent steps, their loading and validation."""

from __future__ import annotations

from swarm_runtime.flow.loader import check_flow_file, load_flow
from swarm_runtime.flow.registry import FlowRegistry
from swarm_runtime.flow.spec import Budget, FlowSpec, RoutingSpec, StepSpec, TeachingNotes

__all__ = [
    "Budget",
    "FlowRegistry",
    "FlowSpec",
    "RoutingSpec",
    "StepSpec",
    "TeachingNotes",
    "check_flow_file",
    "load_flow",
]

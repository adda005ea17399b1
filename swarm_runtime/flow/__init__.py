"""Flows: the YAML graphs of agent steps, their loading and validation.

The names below are imported on first use, so that importing a submodule (the records
of :mod:`swarm_runtime.flow.spec`, say) does not import the YAML loader.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from swarm_runtime.lazy import lazy_names as _lazy_names

if TYPE_CHECKING:
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

_HOMES = {
    "Budget": "spec",
    "FlowRegistry": "registry",
    "FlowSpec": "spec",
    "RoutingSpec": "spec",
    "StepSpec": "spec",
    "TeachingNotes": "spec",
    "check_flow_file": "loader",
    "load_flow": "loader",
}


__getattr__ = _lazy_names(__name__, {k: f".{v}" for k, v in _HOMES.items()}, globals())

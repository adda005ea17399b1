"""Tools a step's model may call: Python functions and MCP servers' tools (SPEC §5.8)."""

from __future__ import annotations

from swarm_runtime.tools.registry import ToolRegistry, ToolSpec, tool

__all__ = ["ToolRegistry", "ToolSpec", "tool"]

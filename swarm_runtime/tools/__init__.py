"""Tools a step's model may call: Python functions and MCP servers' tools (docs/tools.md)."""

from __future__ import annotations

from swarm_runtime.tools.registry import ToolRegistry, ToolSpec, tool

__all__ = ["ToolRegistry", "ToolSpec", "tool"]

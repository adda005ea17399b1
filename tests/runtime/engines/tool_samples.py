"""Python tools the cli-mode tool tests give a run, and how a run is given them.

The tools are defined at the top level of this module, so the ``swarm`` tools server a
CLI starts can import them by reference (``note=tests.runtime.engines.tool_samples:note``).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from swarm_runtime.orchestrator.plan import EngineChoice
from swarm_runtime.record import replace
from swarm_runtime.tools import ToolRegistry
from swarm_runtime.tools.box import ToolBox
from swarm_runtime.tools.config import McpServerConfig, ToolSettings

RELEASE = threading.Event()
"""What :func:`wait` waits for (a test sets it once the deadline has passed)."""


def note(path: str, text: str) -> str:
    """Write ``text`` to the file at ``path``."""
    Path(path).write_text(text, encoding="utf-8")
    return f"noted {len(text)} chars"


def lookup(key: str) -> dict[str, Any]:
    """Look ``key`` up."""
    return {"key": key, "value": len(key)}


def explode(reason: str) -> str:
    """Fail with ``reason``."""
    raise RuntimeError(reason)


def opaque() -> object:
    """Return what JSON cannot hold."""
    return {1, 2}


def wide(size: int) -> str:
    """Return ``size`` characters."""
    return "x" * size


def wait() -> str:
    """Wait until the test releases it."""
    RELEASE.wait()
    return "released"


def tool_box(*functions: Any, servers: dict[str, McpServerConfig] | None = None) -> ToolBox:
    """A run's tools: ``functions`` as Python tools, ``servers`` as its MCP servers."""
    registry = ToolRegistry()
    for function in functions:
        registry.register(function)
    return ToolBox(registry, ToolSettings(mcp_servers=dict(servers or {})))


def with_tools(choice: EngineChoice, box: ToolBox) -> EngineChoice:
    """``choice`` with ``box``'s Python tools and MCP servers, as a run is given those of
    runtime.yaml and its plugins (``EngineChoice.tools`` and ``tool_registry``)."""
    return replace(choice, tools=box.settings, tool_registry=box.registry)

"""MCP servers over stdio through the official ``mcp`` SDK (the ``[mcp]`` extra, imported lazily).

(Interface; the implementation follows.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from swarm_runtime.errors import SwarmRunError
from swarm_runtime.tools.config import McpServerConfig
from swarm_runtime.tools.registry import ToolSpec

if TYPE_CHECKING:
    from swarm_runtime.credentials import Credentials


class McpServerError(SwarmRunError):
    """An MCP server would not start, died, or answered what is not MCP: names the server."""


class McpServers:
    """The MCP servers of one run: each started on first use, all stopped by :meth:`close`."""

    def __init__(
        self, configs: dict[str, McpServerConfig], *, credentials: Credentials | None = None
    ) -> None:
        self.configs = configs
        self.credentials = credentials

    def specs(self, server: str) -> list[ToolSpec]:
        """The tools of ``server`` as ``server.tool`` (starting it, once)."""
        raise McpServerError(f"MCP server {server!r}: MCP servers are not supported yet")

    def call(self, server: str, tool: str, arguments: dict[str, Any], timeout_s: float) -> Any:
        """The text ``tool`` of ``server`` answers for ``arguments``."""
        raise McpServerError(f"MCP server {server!r}: MCP servers are not supported yet")

    def close(self) -> None:
        """Stop every server started."""

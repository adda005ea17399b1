"""The tools of one run: its Python tools and its MCP servers, and one way to call any of them.

A :class:`ToolBox` is made where a run is assembled and closed when the run ends: an MCP
server is started the first time a step needs one of its tools (once per run) and stopped
at the end (:meth:`ToolBox.close`). A call of a tool runs under its deadline in a thread of
its own; a call past it is abandoned (a Python function cannot be stopped from outside) and
answered as a timeout.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from swarm_runtime.tools.config import ToolSettings
from swarm_runtime.tools.registry import ToolRegistry, ToolSpec
from swarm_runtime.tools.registry import ToolTimeout as ToolTimeout

if TYPE_CHECKING:
    from swarm_runtime.credentials import Credentials
    from swarm_runtime.tools.mcp import McpServers


class UnknownTool(Exception):
    """No tool of that name: neither a Python tool nor a tool of a declared MCP server."""


class ToolBox:
    """The run's tools, by name: ``name`` for a Python tool, ``server.tool`` for an MCP one."""

    def __init__(
        self,
        registry: ToolRegistry | None = None,
        settings: ToolSettings | None = None,
        *,
        credentials: Credentials | None = None,
    ) -> None:
        self.registry = registry if registry is not None else ToolRegistry()
        self.settings = settings if settings is not None else ToolSettings()
        self.credentials = credentials
        self._mcp: McpServers | None = None
        self._lock = threading.Lock()

    @property
    def mcp(self) -> McpServers:
        """The run's MCP servers (none started until a step needs one)."""
        with self._lock:
            if self._mcp is None:
                from swarm_runtime.tools.mcp import McpServers

                self._mcp = McpServers(self.settings.mcp_servers, credentials=self.credentials)
            return self._mcp

    def spec(self, name: str) -> ToolSpec:
        """What the model is told of ``name``; UnknownTool when there is no such tool.

        A tool of an MCP server starts that server (once per run); a server that cannot
        start raises McpServerError naming it.
        """
        python = self.registry.get(name)
        if python is not None:
            return python.spec
        server, dot, tool_name = name.partition(".")
        if dot and server in self.settings.mcp_servers:
            for spec in self.mcp.specs(server):
                if spec.name == name:
                    return spec
            raise UnknownTool(f"MCP server {server!r} has no tool {tool_name!r}")
        raise UnknownTool(self.unknown(name))

    def unknown(self, name: str) -> str:
        """What to say of a tool name that is not one of the run's tools."""
        known = self.registry.names()
        servers = [f"{server}.<tool>" for server in self.settings.mcp_servers]
        offered = ", ".join([*known, *servers]) or "none are registered"
        return (
            f"there is no tool {name!r} (the run's tools: {offered}; register Python tools in "
            "runtime.yaml tools:, MCP servers in mcp_servers:)"
        )

    def call(self, spec: ToolSpec, arguments: dict[str, Any]) -> Any:
        """What the tool returns for ``arguments`` within its deadline.

        Raises what the tool raised (ToolInputError for arguments that do not fit its
        schema), ToolTimeout past the deadline, McpServerError when its server fails.
        """
        timeout = spec.timeout_s if spec.timeout_s is not None else self.settings.tool_timeout_s
        python = self.registry.get(spec.name)
        if python is not None:
            return _within(timeout, spec.name, lambda: python.call(arguments))
        server, _, tool_name = spec.name.partition(".")
        return self.mcp.call(server, tool_name, arguments, timeout)

    def close(self) -> None:
        """Stop every MCP server the run started."""
        with self._lock:
            mcp, self._mcp = self._mcp, None
        if mcp is not None:
            mcp.close()


def _within(timeout: float, name: str, call: Any) -> Any:
    """``call()`` in a thread of its own, or ToolTimeout when it takes longer than ``timeout``."""
    answer: dict[str, Any] = {}

    def run() -> None:
        try:
            answer["value"] = call()
        except BaseException as exc:  # handed to the caller's thread
            answer["error"] = exc

    worker = threading.Thread(target=run, name=f"swarm-tool-{name}", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        raise ToolTimeout(f"{name} did not answer within {timeout:g} s and was abandoned")
    if "error" in answer:
        raise answer["error"]
    return answer.get("value")

"""What runtime.yaml says of tools: ``tools``, ``mcp_servers`` and the limits of tool calls.

Every bad value is a ConfigError naming the file, the key and what is allowed.
"""

from __future__ import annotations

import re
from typing import Any

from swarm_runtime.errors import ConfigError
from swarm_runtime.record import Record, field
from swarm_runtime.tools.registry import DEFAULT_TOOL_TIMEOUT_S

TOOL_KEYS = ("tools", "mcp_servers", "max_tool_calls", "tool_timeout_s", "tool_output_chars")
"""runtime.yaml's top-level keys about tools."""
DEFAULT_MAX_TOOL_CALLS = 20
"""How many tool calls one step execution may make, unless its step, flow or runtime.yaml says."""
MAX_TOOL_CALLS_LIMIT = 10_000
DEFAULT_TOOL_OUTPUT_CHARS = 50_000
"""How much of one tool's output reaches the model; the rest is cut with a visible marker."""
SERVER_RE = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,31}")
"""An MCP server's name in ``mcp_servers`` (its tools are ``NAME.tool``)."""
SERVER_KEYS = ("command", "args", "env", "cwd", "pure_tools")


class McpServerConfig(Record):
    """One ``mcp_servers`` entry: how to start the server (stdio), and which tools are pure."""

    name: str
    command: str
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    """Set for the server on top of a minimal environment (PATH, HOME, …)."""
    cwd: str | None = None
    pure_tools: tuple[str, ...] = ()
    """Tools of the server safe to run again (replay runs them and compares)."""


class ToolSettings(Record):
    """The tool settings of a run (runtime.yaml), as checked."""

    references: tuple[str, ...] = ()
    """``tools:``: Python tools as ``module:function`` or ``name=module:function``."""
    mcp_servers: dict[str, McpServerConfig] = field(default_factory=dict)
    max_tool_calls: int = DEFAULT_MAX_TOOL_CALLS
    tool_timeout_s: float = DEFAULT_TOOL_TIMEOUT_S
    tool_output_chars: int = DEFAULT_TOOL_OUTPUT_CHARS

    def as_mapping(self) -> dict[str, Any]:
        """The settings as runtime.yaml writes them (for a run's spec)."""
        return {
            "tools": list(self.references),
            "mcp_servers": {
                name: {
                    "command": server.command,
                    "args": list(server.args),
                    "env": dict(server.env),
                    "cwd": server.cwd,
                    "pure_tools": list(server.pure_tools),
                }
                for name, server in self.mcp_servers.items()
            },
            "max_tool_calls": self.max_tool_calls,
            "tool_timeout_s": self.tool_timeout_s,
            "tool_output_chars": self.tool_output_chars,
        }


def _strings(value: Any, where: str, what: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
        raise ConfigError(f"{where} must be a list of {what}, got {value!r:.80}")
    return tuple(value)


def check_count(value: Any, where: str, low: int = 1, high: int = MAX_TOOL_CALLS_LIMIT) -> int:
    """A whole number from ``low`` to ``high``; ConfigError naming ``where``."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ConfigError(f"{where} must be a whole number from {low} to {high}, got {value!r:.40}")
    return value


def parse_mcp_server(name: Any, raw: Any, where: str) -> McpServerConfig:
    """One entry of ``mcp_servers``."""
    if not isinstance(name, str) or not SERVER_RE.fullmatch(name):
        raise ConfigError(
            f"{where}: the server name {name!r} must be letters, digits, '_' and '-', starting "
            "with a letter, at most 32 (its tools are NAME.tool)"
        )
    spot = f"{where}.{name}"
    if not isinstance(raw, dict):
        raise ConfigError(f"{spot} must be a mapping {{command, args, env, cwd, pure_tools}}")
    for key in raw:
        if key not in SERVER_KEYS:
            raise ConfigError(f"{spot}: unknown key {key!r} (allowed: {', '.join(SERVER_KEYS)})")
    command = raw.get("command")
    if not isinstance(command, str) or not command.strip():
        raise ConfigError(f"{spot}.command must name the program that starts the server")
    env = raw.get("env") or {}
    if not isinstance(env, dict) or not all(
        isinstance(key, str) and isinstance(v, str | int | float) and not isinstance(v, bool)
        for key, v in env.items()
    ):
        raise ConfigError(f"{spot}.env must map variable names to text values")
    cwd = raw.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        raise ConfigError(f"{spot}.cwd must be a directory path")
    return McpServerConfig(
        name=name,
        command=command,
        args=_strings(raw.get("args") or [], f"{spot}.args", "text arguments"),
        env={key: str(value) for key, value in env.items()},
        cwd=cwd,
        pure_tools=_strings(raw.get("pure_tools") or [], f"{spot}.pure_tools", "tool names"),
    )


def tool_settings(raw: dict[str, Any], where: str) -> ToolSettings:
    """The tool settings of a runtime.yaml mapping (``where``: its path, for messages)."""
    references = _strings(raw.get("tools") or [], f"{where}: 'tools'", "module:function")
    servers = raw.get("mcp_servers") or {}
    if not isinstance(servers, dict):
        raise ConfigError(f"{where}: 'mcp_servers' must map a name to {{command, args, env}}")
    spot = f"{where}: mcp_servers"
    parsed = {name: parse_mcp_server(name, body, spot) for name, body in servers.items()}
    timeout = raw.get("tool_timeout_s", DEFAULT_TOOL_TIMEOUT_S)
    number = isinstance(timeout, int | float) and not isinstance(timeout, bool)
    if not number or not 0 < timeout <= 86400:
        raise ConfigError(
            f"{where}: 'tool_timeout_s' must be seconds above 0 and at most 86400, got {timeout!r}"
        )
    return ToolSettings(
        references=references,
        mcp_servers=parsed,
        max_tool_calls=check_count(
            raw.get("max_tool_calls", DEFAULT_MAX_TOOL_CALLS), f"{where}: 'max_tool_calls'"
        ),
        tool_timeout_s=float(timeout),
        tool_output_chars=check_count(
            raw.get("tool_output_chars", DEFAULT_TOOL_OUTPUT_CHARS),
            f"{where}: 'tool_output_chars'",
            100,
            10_000_000,
        ),
    )

"""A step's tools as a CLI knows them: its own tools, MCP servers' tools, the run's Python tools.

A step's ``tools:`` names tools of the run (docs/tools.md#tools): a Python tool (``lookup``), a tool
of an MCP server declared in runtime.yaml's ``mcp_servers`` (``fs.write_file``), or the
CLI's own tool (``Read``, ``Bash(git:*)``): anything that is neither passes through as
written. A CLI runs tools in its own process, so the MCP servers a step uses are declared
to it in an MCP config (``{"mcpServers": {NAME: {command, args, env}}}``), and the step's
Python tools reach it as the tools of an MCP server of our own, ``swarm``
(:mod:`swarm_runtime.tools.serve`), started with this interpreter and the run's import
path. Each CLI names an MCP tool its own way (Claude Code ``mcp__fs__write_file``, the
Gemini CLI ``mcp_fs_write_file``); events and transcripts name it as the flow does.

The config holds what a server's ``env`` gives it (often a secret): it is written to a
private file (0600) in the engine's scratch dir, outside the run dir, and removed after
the call (:func:`private_file`).
"""

from __future__ import annotations

import importlib
import json
import os
import re
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from swarm_runtime.errors import ConfigError
from swarm_runtime.record import Record, field
from swarm_runtime.tools.serve import MODULE as SERVE_MODULE
from swarm_runtime.tools.serve import SERVER_NAME

if TYPE_CHECKING:
    from swarm_runtime.tools.box import ToolBox
    from swarm_runtime.tools.config import McpServerConfig

McpName = Callable[[str, str], str]
"""How a CLI names tool ``tool`` of MCP server ``server``."""
_CHDIR = "import os, sys; os.chdir(sys.argv[1]); os.execvp(sys.argv[2], sys.argv[2:])"
"""Starts a server in its ``cwd`` for a CLI whose MCP config has no such key."""


def claude_mcp_name(server: str, tool: str) -> str:
    """Claude Code's name of an MCP tool: ``mcp__<server>__<tool>``."""
    return f"mcp__{_valid(server)}__{_valid(tool)}"


def gemini_mcp_name(server: str, tool: str) -> str:
    """The Gemini CLI's name of an MCP tool: ``mcp_<server>_<tool>``."""
    name = re.sub(r"[^A-Za-z0-9_\-.:]", "_", f"mcp_{server}_{tool}")
    return name if len(name) <= 63 else f"{name[:30]}...{name[-30:]}"


def _valid(part: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", part)


class CliTools(Record):
    """One step's tools, ready for a CLI."""

    native: tuple[str, ...] = ()
    """The CLI's own tools, as the step wrote them."""
    allowed: tuple[str, ...] = ()
    """Every tool of the step as the CLI names it (what it may call)."""
    servers: dict[str, dict[str, Any]] = field(default_factory=dict)
    """The MCP servers the step uses, as an MCP config declares them (with ``cwd`` if set)."""
    names: dict[str, str] = field(default_factory=dict)
    """The CLI's name of an MCP tool -> the flow's: ``mcp__fs__write_file`` -> ``fs.write_file``."""

    def config(self, *, cwd_key: bool) -> dict[str, Any]:
        """The MCP config (``{"mcpServers": {NAME: {command, args, env}}}``).

        Without ``cwd_key`` (Claude Code's config has no such key) a server with a ``cwd``
        is started there by a small launcher.
        """
        servers: dict[str, Any] = {}
        for name, entry in self.servers.items():
            entry = dict(entry)
            cwd = entry.pop("cwd", None)
            if cwd is not None and cwd_key:
                entry["cwd"] = cwd
            elif cwd is not None:
                entry["args"] = ["-c", _CHDIR, cwd, entry["command"], *entry["args"]]
                entry["command"] = sys.executable
            servers[name] = entry
        return {"mcpServers": servers}


def cli_tools(
    tools: Sequence[str],
    box: ToolBox | None,
    mcp_name: McpName,
    *,
    python: str = sys.executable,
    path: Sequence[str] | None = None,
) -> CliTools:
    """The step's ``tools`` for a CLI that names MCP tools by ``mcp_name``.

    ``box`` holds the run's Python tools and MCP servers (None: every name is the CLI's
    own). ``python`` and ``path`` start the ``swarm`` server (default: this interpreter and
    its import path). ConfigError when a Python tool cannot be served to the CLI.
    """
    if box is None or not tools:
        return CliTools(native=tuple(tools), allowed=tuple(tools))
    native: list[str] = []
    allowed: list[str] = []
    names: dict[str, str] = {}
    used: dict[str, McpServerConfig] = {}
    python_tools: list[str] = []
    declared = box.settings.mcp_servers
    for name in tools:
        server, dot, tool = name.partition(".")
        if name in box.registry:
            cli_name = mcp_name(SERVER_NAME, name)
            python_tools.append(_reference(box, name))
        elif dot and server in declared:
            cli_name = mcp_name(server, tool)
            used[server] = declared[server]
        else:
            native.append(name)
            allowed.append(name)
            continue
        allowed.append(cli_name)
        names[cli_name] = name
    servers = {
        server: {
            "command": config.command,
            "args": list(config.args),
            "env": dict(config.env),
            **({"cwd": config.cwd} if config.cwd else {}),
        }
        for server, config in used.items()
    }
    if python_tools:
        if SERVER_NAME in declared:
            raise ConfigError(
                f"mcp_servers declares a server named {SERVER_NAME!r}, the name cli mode gives "
                "the run's Python tools; rename that server"
            )
        settings = box.settings
        args = ["-m", SERVE_MODULE, "--timeout-s", f"{settings.tool_timeout_s:g}"]
        args += ["--output-chars", str(settings.tool_output_chars)]
        for reference in python_tools:
            args += ["--tool", reference]
        for entry in _import_path(sys.path if path is None else path):
            args += ["--path", entry]
        servers[SERVER_NAME] = {"command": python, "args": args, "env": {}}
    return CliTools(native=tuple(native), allowed=tuple(allowed), servers=servers, names=names)


def _reference(box: ToolBox, name: str) -> str:
    """``name=module:qualname`` of a Python tool, checked to import as the same function."""
    python = box.registry.get(name)
    assert python is not None
    function = python.function
    module = getattr(function, "__module__", None)
    qualname = getattr(function, "__qualname__", "")
    reason = ""
    if not module or module == "__main__" or "<" in qualname:
        reason = f"it is defined in {module or '?'} as {qualname or '?'}"
    else:
        try:
            found: Any = importlib.import_module(module)
            for part in qualname.split("."):
                found = getattr(found, part)
        except (ImportError, AttributeError) as exc:
            reason = f"{module}:{qualname} does not import ({type(exc).__name__})"
        else:
            if found is not function:
                reason = f"{module}:{qualname} imports as another object"
    if reason:
        raise ConfigError(
            f"tool {name!r} ({python.spec.source}) cannot be served to the CLI, which calls "
            f"it from a process of its own: {reason}; define it at the top level of a module"
        )
    return f"{name}={module}:{qualname}"


def _import_path(path: Sequence[str]) -> list[str]:
    """The entries of ``path`` the tools server needs: those outside this Python's own dirs."""
    own = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    entries: list[str] = []
    for entry in path:
        entry = os.path.abspath(entry or os.getcwd())
        real = os.path.realpath(entry)
        if not os.path.isdir(entry) or any(real.startswith(p + os.sep) for p in own):
            continue
        if entry not in entries:
            entries.append(entry)
    return entries


@contextmanager
def private_file(directory: Path, document: dict[str, Any], name: str = "") -> Iterator[Path]:
    """``document`` as JSON in a file only this user may read, removed on leaving.

    ``name`` gives the file's name in ``directory`` (which must exist); default: a fresh one.
    """
    if name:
        path = directory / name
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.fchmod(descriptor, 0o600)
    else:
        descriptor, raw = tempfile.mkstemp(prefix="mcp-", suffix=".json", dir=directory)
        path = Path(raw)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            json.dump(document, handle)
        yield path
    finally:
        path.unlink(missing_ok=True)

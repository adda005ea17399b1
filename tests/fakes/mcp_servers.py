"""MCP servers for tests: the real filesystem server (installed by scripts/install-mcp-servers)
and the fake of ``mcp_server.py``, as runtime.yaml would declare them, and a count of the
processes a test's servers left, found by a mark in their environment."""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

import pytest

from swarm_runtime.tools.config import McpServerConfig

FAKE = Path(__file__).with_name("mcp_server.py")
LAUNCHER = Path(__file__).with_name("mcp_launcher.py")
FILESYSTEM = "@modelcontextprotocol/server-filesystem"
MARK = "SWARM_TEST_MCP_MARK"
"""Set in a test server's ``env``: it and everything it starts carry it."""


def mcp_cache() -> Path:
    """Where scripts/install-mcp-servers installs (``$SWARM_MCP_CACHE`` or the user's cache)."""
    if os.environ.get("SWARM_MCP_CACHE"):
        return Path(os.environ["SWARM_MCP_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "swarm-stepwise" / "mcp"


def filesystem_server() -> Path:
    """The installed filesystem server's ``dist/index.js``.

    Missing (or no ``node``): the test is skipped, or fails when ``SWARM_MCP_REQUIRED=1``
    (CI sets it, so CI never passes without running these tests).
    """
    index = mcp_cache() / "node_modules" / FILESYSTEM / "dist" / "index.js"
    reason = None
    if shutil.which("node") is None:
        reason = "node is not installed"
    elif not index.is_file():
        reason = f"{FILESYSTEM} is not in {mcp_cache()} (run scripts/install-mcp-servers)"
    if reason is not None:
        if os.environ.get("SWARM_MCP_REQUIRED") == "1":
            pytest.fail(f"SWARM_MCP_REQUIRED=1 but {reason}")
        pytest.skip(reason)
    return index


def fs_config(
    allowed: Path, *, mark: str, name: str = "fs", launched: bool = False, **more: object
) -> McpServerConfig:
    """The filesystem server allowed ``allowed``, run by ``node`` (by a launcher first)."""
    command = ["node", str(filesystem_server()), str(allowed)]
    if launched:
        command = [sys.executable, str(LAUNCHER), "--", *command]
    return McpServerConfig(
        name=name, command=command[0], args=tuple(command[1:]), env={MARK: mark}, **more
    )


def fake_config(
    *args: str,
    mark: str,
    name: str = "fake",
    env: dict[str, str] | None = None,
    setsid_launcher: bool = False,
    **more: object,
) -> McpServerConfig:
    """The fake server in mode ``args`` (``serve`` when none); behind a launcher that starts
    it in a session of its own with ``setsid_launcher``."""
    command = [sys.executable, str(FAKE), *args]
    if setsid_launcher:
        command = [sys.executable, str(LAUNCHER), "--setsid", "--", *command]
    return McpServerConfig(
        name=name,
        command=command[0],
        args=tuple(command[1:]),
        env={MARK: mark, **(env or {})},
        **more,
    )


def marked(mark: str) -> list[int]:
    """The live processes whose environment has :data:`MARK` set to ``mark`` (from /proc)."""
    needle = f"{MARK}={mark}".encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as handle:
                environ = handle.read()
        except OSError:
            continue
        if needle in environ.split(b"\0"):  # a zombie's is empty: it has ended
            found.append(int(name))
    return found


def wait_gone(mark: str, cap_s: float = 30.0) -> list[int]:
    """The processes marked ``mark`` left once they are all gone, or when ``cap_s`` ran out."""
    deadline = time.monotonic() + cap_s
    left = marked(mark)
    while left and time.monotonic() < deadline:
        time.sleep(0.05)  # each is being ended by its guard: wait for that, with a cap
        left = marked(mark)
    return left

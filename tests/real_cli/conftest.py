"""The real_cli tier: the real Claude Code and Gemini CLIs against loopback servers.

The CLIs come from ``scripts/install-clis`` (the npm registry, into a cache dir) or from
``SWARM_CLAUDE_CLI`` / ``SWARM_GEMINI_CLI``. When one is missing its tests skip, saying
how to install it; with ``SWARM_REAL_CLI_REQUIRED=1`` (CI sets it) they fail instead, so
the tier cannot pass by not running. Every run gets its own HOME and fake keys, so no
login or setting of the machine leaks in and nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.anthropic_server import AnthropicServer
from tests.fakes.gemini_server import GeminiServer

REPO = Path(__file__).resolve().parents[2]
FAKE_ANTHROPIC_KEY = "sk-ant-fake-real-cli-0000"
FAKE_GEMINI_KEY = "fake-gemini-key-real-cli-0000"
INSTALL = "scripts/install-clis"


def _cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(os.environ.get("SWARM_CLI_CACHE") or Path(base) / "swarm-stepwise" / "clis")


def _find(name: str, variable: str) -> str:
    given = os.environ.get(variable)
    path = given or str(_cache() / "node_modules" / ".bin" / name)
    if shutil.which(path):
        return path
    reason = (
        f"the real {name} CLI is not installed ({variable} unset, nothing in {_cache()}); "
        f"install it with: {INSTALL}"
    )
    if os.environ.get("SWARM_REAL_CLI_REQUIRED") == "1":
        pytest.fail(f"SWARM_REAL_CLI_REQUIRED=1 but {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def claude_cli() -> str:
    """The path of a real ``claude`` executable."""
    return _find("claude", "SWARM_CLAUDE_CLI")


@pytest.fixture(scope="session")
def gemini_cli() -> str:
    """The path of a real ``gemini`` executable."""
    return _find("gemini", "SWARM_GEMINI_CLI")


@pytest.fixture
def gemini_server() -> Iterator[GeminiServer]:
    """A local Gemini API on 127.0.0.1 (see tests/fakes/gemini_server.py)."""
    from tests.fakes.gemini_server import running_gemini_server

    yield from running_gemini_server()


def quiet_env(home: Path, **extra: str) -> dict[str, str]:
    """An environment for a swarm process: PATH, a HOME of its own, no inherited keys."""
    keep = ("PATH", "LANG", "LC_ALL", "SYSTEMROOT", "TMPDIR")
    env = {k: v for k, v in os.environ.items() if k in keep}
    env["HOME"] = str(home)
    env.update(extra)
    return env


def claude_env(home: Path, server: AnthropicServer, cli: str) -> dict[str, str]:
    """What `swarm run --mode cli` needs to run claude against the local server."""
    return quiet_env(
        home,
        ANTHROPIC_BASE_URL=server.url,
        ANTHROPIC_API_KEY=FAKE_ANTHROPIC_KEY,
        SWARM_CLAUDE_CLI=cli,
    )


def gemini_env(home: Path, server: GeminiServer, cli: str) -> dict[str, str]:
    """What a gemini-step run needs to run gemini against the local server."""
    return quiet_env(
        home,
        GOOGLE_GEMINI_BASE_URL=server.url,
        GEMINI_API_KEY=FAKE_GEMINI_KEY,
        SWARM_GEMINI_CLI=cli,
        SWARM_GEMINI_STUB="0",
    )

"""The user-facing examples under examples/ pass as a user would run them, in every mode:
stub, replay of their committed recordings, and record (against the local fake servers, in
a copy) followed by a replay of what was recorded. examples/ is the support-triage project;
examples/openai-compat/ is a project of its own whose steps run on openai-step and
claude-step."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.fakes.anthropic_server import AnthropicServer

pytestmark = pytest.mark.swarm_modes("stub")  # each mode is run inside

OPENAI_COMPAT = REPO / "examples" / "openai-compat"


def _pytest(cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SWARM_", "PYTEST_ADDOPTS", "ANTHROPIC_", "OPENAI_", "PYTEST_XDIST"))
    }
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=cwd,
        env={**clean, **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_the_example_passes_in_stub_mode() -> None:
    out = _pytest(REPO / "examples")
    assert "9 passed" in out and "mode stub:" in out


def test_the_example_replays_its_recordings_with_the_network_blocked() -> None:
    out = _pytest(REPO / "examples", "--swarm-mode=replay")
    assert "4 passed, 5 skipped" in out
    assert "goldens: 1 compared" in out and "stub-only: 5 test(s) skipped" in out


def test_the_example_records_against_a_server_then_replays(tmp_path: Path) -> None:
    project = tmp_path / "examples"
    shutil.copytree(REPO / "examples", project)
    shutil.rmtree(project / "golden" / "cassettes")
    server = AnthropicServer().start()
    try:
        env = {"ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": "sk-ant-example-fake"}
        recorded = _pytest(project, "--swarm-mode=record", "--snapshot-update", env=env)
    finally:
        server.stop()
    assert "4 passed, 5 skipped" in recorded
    replayed = _pytest(project, "--swarm-mode=replay")
    assert "4 passed, 5 skipped" in replayed


def test_the_openai_compatible_example_passes_in_stub_mode() -> None:
    out = _pytest(OPENAI_COMPAT)
    assert "5 passed" in out and "mode stub:" in out
    assert "goldens: 1 compared" in out

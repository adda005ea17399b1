"""The user-facing examples under examples/ pass as a user would run them, in every mode:
stub, replay of their committed recordings (with no network), and record (against the local
fake servers, in a copy) followed by a replay of what was recorded. examples/ is the
support-triage project; examples/openai-compat/ is a project of its own whose steps run on
openai-step and claude-step."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.fakes.anthropic_server import AnthropicServer
from tests.fakes.openai_server import OpenAIServer

pytestmark = pytest.mark.swarm_modes("stub")  # each mode is run inside

OPENAI_COMPAT = REPO / "examples" / "openai-compat"


def _offline(command: list[str]) -> list[str]:
    """``command`` with no network at all (a fresh network namespace), where the machine
    allows one; elsewhere as is, and replay relies on vcrpy refusing unrecorded calls."""
    probe = subprocess.run(["unshare", "-n", "true"], capture_output=True, check=False)
    return ["unshare", "-n", *command] if probe.returncode == 0 else command


def _pytest(cwd: Path, *args: str, env: dict[str, str] | None = None, offline: bool = False) -> str:
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SWARM_", "PYTEST_ADDOPTS", "ANTHROPIC_", "OPENAI_", "PYTEST_XDIST"))
    }
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]
    result = subprocess.run(
        _offline(command) if offline else command,
        cwd=cwd,
        # The examples live in this checkout: their sessions keep no results file in it.
        env={**clean, "SWARM_RESULTS": "none", **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_the_example_passes_in_stub_mode() -> None:
    out = _pytest(REPO / "examples")
    assert "9 passed" in out and "mode stub:" in out
    assert not (REPO / "examples" / "swarm-results.jsonl").exists(), "the checkout was written to"


def test_the_example_replays_its_recordings_with_the_network_blocked() -> None:
    out = _pytest(REPO / "examples", "--swarm-mode=replay", offline=True)
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
    replayed = _pytest(project, "--swarm-mode=replay", offline=True)
    assert "4 passed, 5 skipped" in replayed


def test_the_openai_compatible_example_passes_in_stub_mode() -> None:
    out = _pytest(OPENAI_COMPAT)
    assert "5 passed" in out and "mode stub:" in out
    assert "goldens: 1 compared" in out


def test_the_openai_compatible_example_replays_its_recordings_with_no_network() -> None:
    out = _pytest(OPENAI_COMPAT, "--swarm-mode=replay", offline=True)
    assert "3 passed, 2 skipped" in out
    assert "goldens: 1 compared, 0 updated, 0 drifted" in out
    assert "cassettes: 15 played, 0 recorded, 0 unplayed" in out


def test_the_openai_compatible_example_records_against_both_servers_then_replays(
    tmp_path: Path, openai_server: OpenAIServer, anthropic_server: AnthropicServer
) -> None:
    project = tmp_path / "openai-compat"
    shutil.copytree(OPENAI_COMPAT, project)
    shutil.rmtree(project / "golden" / "cassettes")
    shutil.rmtree(project / "golden" / "faq-answer.replay")
    keys = {
        "OPENAI_API_KEY": "sk-fake-openai-example-0000",
        "ANTHROPIC_API_KEY": "sk-ant-fake-example-0000",
    }
    openai_server.echo_key_header = anthropic_server.echo_key_header = "x-echoed-key"
    env = {
        **keys,
        "OPENAI_BASE_URL": openai_server.url + "/v1",  # over runtime.yaml's base_url
        "ANTHROPIC_BASE_URL": anthropic_server.url,
    }
    recorded = _pytest(project, "--swarm-mode=record", "--snapshot-update", env=env)
    assert "3 passed, 2 skipped" in recorded
    # 3 runs: find_pages and two drafts on the local model, two checks on Claude
    assert len(openai_server.requests) == 9 and len(anthropic_server.requests) == 6
    assert {r["body"]["model"] for r in openai_server.requests} == {"llama-3.1-8b-instruct"}
    cassettes = sorted((project / "golden" / "cassettes").rglob("*.yaml"))
    engines = {(path.name.split("-")[0], path.read_text().splitlines()[0]) for path in cassettes}
    assert engines == {
        ("find_pages", "engine: openai-step"),
        ("draft_answer", "engine: openai-step"),
        ("check_answer", "engine: claude-step"),
    }
    assert not any(key in recorded for key in keys.values())
    for path in project.rglob("*"):
        if path.is_file():
            content = path.read_bytes()
            assert not any(key.encode() in content for key in keys.values()), path
    replayed = _pytest(project, "--swarm-mode=replay", offline=True)
    assert "3 passed, 2 skipped" in replayed
    assert "goldens: 1 compared, 0 updated, 0 drifted" in replayed
    assert "cassettes: 15 played, 0 recorded, 0 unplayed" in replayed

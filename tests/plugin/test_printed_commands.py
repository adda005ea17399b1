"""Every command the plugin prints works verbatim: run in a shell as a user would, then the
replay (or the plain run), and both pass.

A user project (its own flow, tests written from the docs) recorded against a local
Anthropic-compatible server; each printed command is taken from pytest's output and run
with ``sh -c`` in the project, with only the server's address (and a fake key) set.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.anthropic_server import AnthropicServer
from tests.runtime.helpers import step_yaml, write_flow

TESTS = """
import pytest

@pytest.mark.parametrize("ticket", ["I was charged twice."])
def test_triage(flow_runner, swarm_golden, ticket):
    record = flow_runner("triage", ticket=ticket)
    assert record.status == "succeeded"
    swarm_golden(record, "triage")
"""


@pytest.fixture
def project(swarm_pytester: pytest.Pytester) -> pytest.Pytester:
    write_flow(swarm_pytester.path / "flows", "triage", [step_yaml("read"), step_yaml("reply")])
    swarm_pytester.makepyfile(test_triage=TESTS)
    return swarm_pytester


@pytest.fixture
def server() -> Iterator[AnthropicServer]:
    running = AnthropicServer().start()
    yield running
    running.stop()


def _env(server: AnthropicServer | None) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SWARM_", "ANTHROPIC_", "PYTEST_XDIST", "PYTEST_ADDOPTS"))
    }
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    if server is not None:
        env.update(ANTHROPIC_BASE_URL=server.url, ANTHROPIC_API_KEY="sk-ant-printed-fake")
    return env


def _shell(project: pytest.Pytester, command: str, server: AnthropicServer | None = None) -> str:
    """Run ``command`` as printed, in the project; its output (it must pass)."""
    done = subprocess.run(
        ["sh", "-c", command],
        cwd=project.path,
        env=_env(server),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
    return done.stdout


def _pytest(project: pytest.Pytester, *args: str, server: AnthropicServer | None = None) -> Any:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=project.path,
        env=_env(server),
        capture_output=True,
        text=True,
        timeout=300,
    )


def _printed(output: str, lead: str) -> str:
    """The command printed after ``lead`` (on the same line, or the next)."""
    match = re.search(re.escape(lead) + r"\s*\n?(?:E)?\s*(pytest [^\n]+)", output)
    assert match, f"no command after {lead!r} in:\n{output}"
    return match.group(1).strip()


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_a_printed_re_record_command_records_again_and_the_replay_passes(
    project: pytest.Pytester, server: AnthropicServer, workers: list[str]
) -> None:
    recorded = _pytest(project, "--swarm-mode=record", "--snapshot-update", server=server)
    assert recorded.returncode == 0, recorded.stdout
    flow = project.path / "flows" / "triage.yaml"
    flow.write_text(flow.read_text().replace("role: ", "role: Now ", 1))
    replay = _pytest(project, "--swarm-mode=replay", *workers)
    assert replay.returncode == 1
    command = _printed(replay.stdout, "Re-record with:")
    assert "--snapshot-update" in command  # the test compares a golden
    _shell(project, command, server)
    again = _pytest(project, "--swarm-mode=replay", *workers)
    assert again.returncode == 0, again.stdout


def test_a_missing_replay_golden_is_written_by_the_printed_command(
    project: pytest.Pytester, server: AnthropicServer
) -> None:
    recorded = _pytest(project, "--swarm-mode=record", "--snapshot-update", server=server)
    assert recorded.returncode == 0, recorded.stdout
    import shutil

    shutil.rmtree(project.path / "golden" / "triage.replay")
    replay = _pytest(project, "--swarm-mode=replay")
    assert replay.returncode == 1
    command = _printed(replay.stdout, "create it with")
    assert "--swarm-mode=replay" in command
    _shell(project, command)  # no server: written from the recording
    assert _pytest(project, "--swarm-mode=replay").returncode == 0


def test_a_drifted_golden_is_accepted_by_the_printed_command(project: pytest.Pytester) -> None:
    assert _pytest(project, "--snapshot-update").returncode == 0
    flow = project.path / "flows" / "triage.yaml"
    flow.write_text(flow.read_text().replace("role: ", "role: Now ", 1))
    drifted = _pytest(project)
    assert drifted.returncode == 1
    _shell(project, _printed(drifted.stdout, "accept it with:"))
    assert _pytest(project).returncode == 0


def test_a_contract_suite_test_is_re_recorded_by_the_printed_command(
    project: pytest.Pytester, server: AnthropicServer
) -> None:
    replay = _pytest(project, "--swarm-contract", "--swarm-mode=replay")
    assert replay.returncode == 1  # nothing recorded yet
    command = _printed(replay.stdout, "Record it with:")
    assert "--swarm-contract" in command and "'test_contract.py::" in command
    out = _shell(project, command, server)
    assert "1 passed" in out
    node = command.rsplit(" ", 1)[1].strip("'")
    again = _pytest(project, "--swarm-contract", "--swarm-mode=replay", node)
    assert again.returncode == 0, again.stdout


def test_one_printed_command_re_records_every_stale_test_of_a_session(
    project: pytest.Pytester, server: AnthropicServer
) -> None:
    project.makepyfile(
        test_more="def test_plain(flow_runner):\n    assert flow_runner('triage').status == "
        "'succeeded'\n"
    )
    recorded = _pytest(project, "--swarm-mode=record", "--snapshot-update", server=server)
    assert recorded.returncode == 0, recorded.stdout
    flow = project.path / "flows" / "triage.yaml"
    flow.write_text(flow.read_text().replace("role: ", "role: Now ", 1))
    replay = _pytest(project, "--swarm-mode=replay", "-n", "2")
    assert replay.returncode == 1
    command = _printed(replay.stdout, "key or base URL set, as each miss above says):")
    assert "test_more.py::test_plain" in command and "--snapshot-update" in command
    assert "2 passed" in _shell(project, command, server)
    assert _pytest(project, "--swarm-mode=replay").returncode == 0

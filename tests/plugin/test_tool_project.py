"""A user project whose flow uses a Python tool and the real filesystem MCP server (docs/tools.md).

The project is written as the docs say: its tools in a module beside its flows, named
in runtime.yaml with the filesystem server of the npm registry; its tests call
``flow_runner`` and ``swarm_contract``. It runs on the stub (a scenario drives the tools
for real), records against a local Anthropic-compatible server that asks for tool calls,
and replays with no network at all — where the filesystem server's write and the Python
tool's side effect are not repeated, and the run still matches. The key is in no file.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes.anthropic_server import AnthropicServer, Reply
from tests.fakes.mcp_servers import filesystem_server
from tests.plugin.projects import PYTEST, no_network, project_env

pytest.importorskip("mcp", reason="the [mcp] extra: pip install 'swarm-stepwise[mcp]'")

KEY = "sk-ant-tool-project-not-a-key"

FLOW = """\
key: support
title: "Answer a support ticket"
description: "Looks the order up, writes the reply to a file, checks it."
steps:
  - id: answer
    agents: [support-agent]
    role: "Look the order up and write the reply."
    tools: [lookup_order, fs.write_file]
    teaching_notes:
      inputs: ["The ticket"]
      outputs: ["The reply, written to the workspace"]
      emphasizes: ["Look the order up first"]
      constraints: ["Write one file"]
  - id: check
    agents: [checker]
    role: "Check the reply."
    teaching_notes:
      inputs: ["The reply"]
      outputs: ["A verdict"]
      emphasizes: ["Be brief"]
      constraints: ["No tools"]
"""

TOOLS = '''
import os


def lookup_order(order_id: str) -> dict:
    """Look an order up by its id."""
    with open(os.path.join(os.path.dirname(__file__), "lookups.log"), "a") as log:
        log.write(order_id + "\\n")
    return {"order": order_id, "status": "shipped"}
'''

TESTS = """
import pytest


def test_support_answers_with_its_tools(flow_runner, swarm_contract):
    record = flow_runner("support")
    assert record.status == "succeeded"
    swarm_contract.assert_run(record)


def test_the_stub_drives_the_tools(flow_runner, stub_scenario, swarm_contract):
    stub_scenario({"answer": {"tools": [
        {"tool": "lookup_order", "input": {"order_id": "S-1"}},
        {"tool": "fs.write_file", "input": {"path": WRITTEN, "content": "from the stub"}},
    ]}})
    record = flow_runner("support")
    assert record.status == "succeeded"
    swarm_contract.assert_run(record)
    ends = [e.payload for e in record.events if e.kind == "tool_end"]
    assert [end["success"] for end in ends] == [True, True], ends
"""


def _project(root: Path, server_js: Path) -> Path:
    (root / "flows").mkdir(parents=True)
    (root / "flows" / "support.yaml").write_text(FLOW)
    (root / "flows" / "flows.yaml").write_text("order: [support]\n")
    (root / "workspace").mkdir()
    (root / "project_tools.py").write_text(TOOLS)
    (root / "swarm" / "config").mkdir(parents=True)
    (root / "swarm" / "config" / "runtime.yaml").write_text(
        "tools: [project_tools:lookup_order]\n"
        "mcp_servers:\n"
        "  fs:\n"
        "    command: node\n"
        f"    args: [{json.dumps(str(server_js))}, ./workspace]\n"
        "    pure_tools: [read_text_file, list_directory]\n"
    )
    written = root / "workspace" / "stub-reply.txt"
    (root / "test_support.py").write_text(f"WRITTEN = {str(written)!r}\n" + TESTS)
    (root / "pytest.ini").write_text("[pytest]\n")
    return root


def _pytest(project: Path, *args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [*args], cwd=project, env=env or project_env(), capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return _project(tmp_path / "project", filesystem_server())


def test_a_tool_project_runs_on_the_stub_records_and_replays_without_repeating_a_write(
    project: Path,
) -> None:
    workspace = project / "workspace"
    # Stub: the scenario's tool calls run the real tools (no network, no key).
    out = _pytest(project, *PYTEST)
    assert "2 passed" in out, out
    assert (workspace / "stub-reply.txt").read_text() == "from the stub"
    (workspace / "stub-reply.txt").unlink()
    (project / "lookups.log").unlink()

    # Record against a server that asks for both tools, then answers.
    server = AnthropicServer().start()
    reply_path = str(workspace / "reply.txt")
    server.script(
        Reply(tool_use={"name": "lookup_order", "input": {"order_id": "A-17"}}),
        Reply(tool_use={"name": "fs__write_file", "input": {"path": reply_path, "content": "Hi"}}),
    )
    try:
        env = project_env({"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": server.url})
        out = _pytest(project, *PYTEST, "--swarm-mode=record", env=env)
    finally:
        server.stop()
    assert "1 passed, 1 skipped" in out, out
    assert (workspace / "reply.txt").read_text() == "Hi"  # the real server wrote it
    assert (project / "lookups.log").read_text() == "A-17\n"
    answered = [  # what the third call of the step carried: both answers, in order
        block
        for message in server.requests[2]["body"]["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]
    assert [a.get("is_error", False) for a in answered] == [False, False], answered
    cassettes = list((project / "golden" / "cassettes").rglob("answer-support-agent-0.yaml"))
    assert len(cassettes) == 1
    assert cassettes[0].read_text().count("swarm-tool://local/") == 2

    # Replay with no network: nothing is written again, and the run still matches.
    (workspace / "reply.txt").unlink()
    (project / "lookups.log").unlink()
    out = _pytest(project, *no_network(), *PYTEST, "--swarm-mode=replay")
    assert "1 passed, 1 skipped" in out, out
    assert not (workspace / "reply.txt").exists()
    assert not (project / "lookups.log").exists()
    assert "cassettes: 2 played, 0 recorded, 0 unplayed" in out, out

    leaking = [
        str(path)
        for path in project.rglob("*")
        if path.is_file() and KEY.encode() in path.read_bytes()
    ]
    assert leaking == []

    # The step's tools change: cassettes status says so, before any replay.
    flow = project / "flows" / "support.yaml"
    flow.write_text(FLOW.replace("tools: [lookup_order, fs.write_file]", "tools: [lookup_order]"))
    status = subprocess.run(
        [sys.executable, "-m", "swarm_runtime.cli.main", "cassettes", "status"],
        cwd=project,
        env=project_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert "tools" in status.stdout and "fs__write_file" in status.stdout, status.stdout

"""The user project of tests/plugin/test_tool_project.py in ``cli`` mode, on the real Claude
Code CLI (docs/tools.md): its Python tool and the real filesystem MCP server, allowed and used.

The project is built as that module builds it and run as its user runs it (``pytest
--swarm-mode=cli``). The loopback server answers the ``answer`` step with a call of the
Python tool, then one of the filesystem server's ``write_file``, by the names Claude Code
knows them by, then with the default reply.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes.anthropic_server import AnthropicServer, Reply
from tests.fakes.mcp_servers import filesystem_server
from tests.plugin.test_tool_project import PYTEST, _project
from tests.real_cli.conftest import FAKE_ANTHROPIC_KEY, claude_env
from tests.real_cli.test_real_cli import assert_no_key_in, events, only_run

pytestmark = pytest.mark.real_cli


def test_the_tool_project_runs_in_cli_mode_with_its_tools_allowed_and_used(
    tmp_path: Path, anthropic_server: AnthropicServer, claude_cli: str
) -> None:
    project = _project(tmp_path / "project", filesystem_server())
    reply = project / "workspace" / "reply.txt"
    written = {"path": str(reply), "content": "Your order has shipped."}
    anthropic_server.script(
        Reply(tool_use={"name": "mcp__swarm__lookup_order", "input": {"order_id": "A-17"}}),
        Reply(tool_use={"name": "mcp__fs__write_file", "input": written}),
    )
    env = claude_env(tmp_path / "home", anthropic_server, claude_cli)
    done = subprocess.run(
        [*PYTEST, "--swarm-mode=cli", "-p", "no:xdist"],
        cwd=project,
        env={**env, "PATH": f"{Path(sys.executable).parent}:{env['PATH']}"},
        capture_output=True,
        text=True,
        timeout=900,  # a guard against a hang, not a measurement
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed, 1 skipped" in done.stdout, done.stdout  # the stub's own test skips
    assert (project / "lookups.log").read_text() == "A-17\n"  # the Python tool ran
    assert reply.read_text() == "Your order has shipped."  # the real fs server wrote it
    run = only_run(project / "runs")
    answer = [e for e in events(run) if e.get("step_id") == "answer"]
    kinds = [(e["kind"], e["payload"].get("tool")) for e in answer]
    spans = [k for k in kinds if k[0] in ("step_start", "tool_start", "tool_end", "step_end")]
    assert spans == [
        ("step_start", None),
        ("tool_start", "lookup_order"),
        ("tool_end", "lookup_order"),
        ("tool_start", "fs.write_file"),
        ("tool_end", "fs.write_file"),
        ("step_end", None),
    ]
    ends = [e["payload"] for e in answer if e["kind"] == "tool_end"]
    assert [end["success"] for end in ends] == [True, True], ends
    sent = json.dumps(anthropic_server.requests[1]["body"]["messages"])
    assert "shipped" in sent  # the model was given the tool's result
    assert_no_key_in(project, FAKE_ANTHROPIC_KEY)

"""A step's Python and MCP tools, called by the real Claude Code and Gemini CLIs (docs/tools.md).

The loopback server answers the step's first request with a call of the tool, by the name
the CLI knows it by (``mcp__swarm__note``), and ends the turn once it has the result. The
Python tool runs in the ``swarm`` tools server the CLI starts from the engine's MCP config;
the filesystem MCP server (npm ``@modelcontextprotocol/server-filesystem``, installed by
``scripts/install-mcp-servers``) runs as runtime.yaml declares it. The run is given its
tools as runtime.yaml gives them (``EngineChoice.tools`` and ``tool_registry``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from swarm_runtime.contracts.check import validate_run_dir
from swarm_runtime.engines.cassette import Cassettes
from swarm_runtime.flow.registry import FlowRegistry
from swarm_runtime.orchestrator.plan import EngineChoice, RunDeps, RunSpec
from swarm_runtime.orchestrator.run import Orchestrator
from swarm_runtime.orchestrator.state import RunOutcome
from swarm_runtime.tools.box import ToolBox
from swarm_runtime.tools.config import McpServerConfig
from tests.fakes.anthropic_server import AnthropicServer, Reply
from tests.fakes.gemini_server import GeminiReply, GeminiServer
from tests.fakes.mcp_servers import filesystem_server
from tests.real_cli.conftest import FAKE_ANTHROPIC_KEY, FAKE_GEMINI_KEY, claude_env, gemini_env
from tests.runtime.engines.tool_samples import note, tool_box, with_tools
from tests.runtime.helpers import events_of, receipt, step_yaml, write_flow

pytestmark = pytest.mark.real_cli

FS_SECRET = "fs-token-real-cli-0000"


def _run(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    box: ToolBox,
    tools: list[str],
    engine: EngineChoice,
    runs: str = "runs",
) -> RunOutcome:
    monkeypatch.chdir(tmp_path)
    write_flow(tmp_path / "flows", "tooly", [step_yaml("work") + f"    tools: {tools}\n"])
    orchestrator = Orchestrator(
        FlowRegistry(tmp_path / "flows"),
        runs_dir=tmp_path / runs,
        deps=RunDeps(sleep=lambda _s: None),
        engine=with_tools(engine, box),
    )
    return orchestrator.run(RunSpec(flows=("tooly",)))


def _check(outcome: RunOutcome, calls: list[tuple[str, dict[str, Any]]], *keys: str) -> None:
    """The run's events and transcript show ``calls`` by the flow's names; no key in a file."""
    assert outcome.status == "succeeded", outcome.error
    kinds = [(e["kind"], e["payload"].get("tool")) for e in events_of(outcome)]
    steps = [k for k, _ in kinds if k in ("step_start", "tool_start", "tool_end", "step_end")]
    assert steps == ["step_start", *["tool_start", "tool_end"] * len(calls), "step_end"]
    tool_events = [e for e in events_of(outcome) if e["kind"] in ("tool_start", "tool_end")]
    expected: list[tuple[str, str]] = []
    for name, _ in calls:
        expected += [("tool_start", name), ("tool_end", name)]
    assert [(e["kind"], e["payload"]["tool"]) for e in tool_events] == expected
    assert [e["payload"]["input"] for e in tool_events[::2]] == [
        arguments for _, arguments in calls
    ]
    assert all(e["payload"]["success"] is True for e in tool_events[1::2]), tool_events
    doc = receipt(outcome, "tooly", "work", "worker")
    assert doc["tools_allowed"] == [name for name, _ in calls]
    lines = [
        json.loads(line)
        for line in (outcome.path / "tooly" / doc["transcript_path"]).read_text().splitlines()
    ]
    used = [(line["type"], line["tool"]) for line in lines if line.get("type")]
    lines_named = {"tool_start": "tool_use", "tool_end": "tool_result"}
    assert used == [(lines_named[kind], name) for kind, name in expected]
    assert validate_run_dir(outcome.path) == []
    for path in outcome.path.rglob("*"):
        if path.is_file():
            text = path.read_text(encoding="utf-8", errors="replace")
            assert not any(key in text for key in keys), f"a key landed in {path}"


def test_claude_code_calls_a_steps_python_tool(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    anthropic_server: AnthropicServer,
    claude_cli: str,
) -> None:
    target = tmp_path / "noted.txt"
    arguments = {"path": str(target), "text": "from the model"}
    anthropic_server.script(Reply(tool_use={"name": "mcp__swarm__note", "input": arguments}))
    env = claude_env(tmp_path / "home", anthropic_server, claude_cli)
    engine = EngineChoice(mode="cli", env=env, sections={"claude": {"cli": claude_cli}})
    outcome = _run(tmp_path, monkeypatch, tool_box(note), ["note"], engine)
    assert target.read_text() == "from the model"  # the tool really ran
    _check(outcome, [("note", arguments)], FAKE_ANTHROPIC_KEY)
    last = json.dumps(anthropic_server.requests[-1]["body"]["messages"][-1])
    assert "noted 14 chars" in last  # the model was given the tool's result


def test_claude_code_calls_the_filesystem_mcp_servers_tool_and_a_python_tool(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    anthropic_server: AnthropicServer,
    claude_cli: str,
) -> None:
    server = filesystem_server()
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    written = {"path": str(allowed / "fs.txt"), "content": "written by the fs server"}
    noted = {"path": str(tmp_path / "noted.txt"), "text": "and by a Python tool"}
    anthropic_server.script(
        Reply(tool_use={"name": "mcp__fs__write_file", "input": written}),
        Reply(tool_use={"name": "mcp__swarm__note", "input": noted}),
    )
    fs = McpServerConfig(
        name="fs", command="node", args=(str(server), str(allowed)), env={"FS_TOKEN": FS_SECRET}
    )
    box = tool_box(note, servers={"fs": fs})
    env = claude_env(tmp_path / "home", anthropic_server, claude_cli)
    engine = EngineChoice(mode="cli", env=env, sections={"claude": {"cli": claude_cli}})
    outcome = _run(tmp_path, monkeypatch, box, ["fs.write_file", "note"], engine)
    assert (allowed / "fs.txt").read_text() == "written by the fs server"
    assert (tmp_path / "noted.txt").read_text() == "and by a Python tool"
    _check(outcome, [("fs.write_file", written), ("note", noted)], FAKE_ANTHROPIC_KEY, FS_SECRET)


def test_the_gemini_cli_calls_a_steps_python_tool(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    gemini_server: GeminiServer,
    gemini_cli: str,
) -> None:
    target = tmp_path / "noted.txt"
    arguments = {"path": str(target), "text": "from gemini"}
    gemini_server.script(GeminiReply(function_call={"name": "mcp_swarm_note", "args": arguments}))
    env = gemini_env(tmp_path / "home", gemini_server, gemini_cli)
    engine = EngineChoice(engine_id="gemini-step", mode="cli", env=env)
    outcome = _run(tmp_path, monkeypatch, tool_box(note), ["note"], engine)
    assert target.read_text() == "from gemini"
    _check(outcome, [("note", arguments)], FAKE_GEMINI_KEY)
    assert not (tmp_path / "home" / ".gemini").exists()  # the user's own settings untouched


def test_a_claude_code_step_with_a_python_tool_is_recorded_and_replays_with_no_server(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    anthropic_server: AnthropicServer,
    claude_cli: str,
) -> None:
    target = tmp_path / "noted.txt"
    arguments = {"path": str(target), "text": "recorded"}
    anthropic_server.script(Reply(tool_use={"name": "mcp__swarm__note", "input": arguments}))
    env = claude_env(tmp_path / "home", anthropic_server, claude_cli)
    section = {"claude": {"cli": claude_cli, "record_via": "cli"}}

    def run(mode: str, env: dict[str, str]) -> RunOutcome:
        cassettes = Cassettes(
            tmp_path / "cas", name="cas", record=mode == "record", rerecord_command="re-record"
        )
        engine = EngineChoice(mode=mode, env=env, cassettes=cassettes, sections=section)
        outcome = _run(tmp_path, monkeypatch, tool_box(note), ["note"], engine, mode)
        if mode == "record":
            cassettes.commit()
        return outcome

    recorded = run("record", env)
    _check(recorded, [("note", arguments)], FAKE_ANTHROPIC_KEY)
    anthropic_server.stop()
    target.unlink()
    replayed = run("replay", {k: v for k, v in env.items() if "KEY" not in k and "URL" not in k})
    # The CLI runs its tools itself, in a replay too: the tool ran again, where it should.
    assert target.read_text() == "recorded"
    _check(replayed, [("note", arguments)], FAKE_ANTHROPIC_KEY)

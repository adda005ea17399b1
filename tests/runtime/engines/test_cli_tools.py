"""A step's tools in cli mode: Python tools, MCP servers' tools and the CLI's own (docs/tools.md).

Runs go through a stand-in for Claude Code (``fake_cli.py``, case ``tools``) that notes
the argv and the MCP config it was given and reports the tool calls a test lists, as the
real CLI's stream does; the real CLI runs the same in tests/real_cli/.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from swarm_runtime.contracts.check import validate_run_dir
from swarm_runtime.engines.base import Prompt, StepContext
from swarm_runtime.engines.cli import build_cli_engine
from swarm_runtime.flow.registry import FlowRegistry
from swarm_runtime.orchestrator.plan import RunDeps, RunSpec
from swarm_runtime.orchestrator.run import Orchestrator
from swarm_runtime.orchestrator.state import RunOutcome
from swarm_runtime.tools.box import ToolBox
from swarm_runtime.tools.config import McpServerConfig
from swarm_runtime.tools.serve import answer, build_box
from tests.runtime.engines import tool_samples
from tests.runtime.engines.tool_samples import lookup, tool_box, with_tools
from tests.runtime.helpers import claude_choice, events_of, receipt, step_yaml, write_flow

FAKE = Path(__file__).with_name("fake_cli.py")
REPO = Path(__file__).resolve().parents[3]
FS = McpServerConfig(
    name="fs",
    command="mcp-server-filesystem",
    args=("/data",),
    env={"FS_TOKEN": "fs-secret-value-0000"},
)


def _run(
    tmp_path: Path, box: ToolBox, tools: str, calls: list[list[Any]] | None = None
) -> RunOutcome:
    flows = tmp_path / "flows"
    write_flow(flows, "solo", [step_yaml("only") + f"    tools: {tools}\n"])
    executable = tmp_path / "claude"
    executable.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE}" "$@"\n')
    executable.chmod(0o755)
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "FAKE_CLI_CASE": "tools",
        "FAKE_CLI_PIDS": str(tmp_path / "pids"),
        "FAKE_CLI_SEEN": str(tmp_path / "seen.json"),
        "FAKE_CLI_CALLS": json.dumps(calls or []),
    }
    orchestrator = Orchestrator(
        FlowRegistry(flows),
        runs_dir=tmp_path / "runs",
        deps=RunDeps(sleep=lambda _s: None),
        engine=with_tools(claude_choice("cli", env=env, cli=str(executable)), box),
    )
    return orchestrator.run(RunSpec(flows=("solo",)))


def _flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def test_a_steps_python_mcp_and_own_tools_reach_claude_code_by_its_names(tmp_path: Path) -> None:
    box = tool_box(lookup, servers={"fs": FS})
    calls = [
        ["mcp__fs__write_file", {"path": "/data/a.txt", "content": "hi"}, "wrote a.txt"],
        ["mcp__swarm__lookup", {"key": "k1"}, [{"type": "text", "text": '{"value": 2}'}]],
    ]
    outcome = _run(tmp_path, box, "[lookup, fs.write_file, Read]", calls)
    assert outcome.status == "succeeded", outcome.error
    seen = json.loads((tmp_path / "seen.json").read_text())
    argv = seen["argv"]
    allowed = _flag(argv, "--allowed-tools").split(",")
    assert allowed == ["mcp__swarm__lookup", "mcp__fs__write_file", "Read"]
    assert _flag(argv, "--tools") == "Read"  # the CLI's own tools only
    assert "--strict-mcp-config" in argv  # the user's own MCP servers stay out
    servers = seen["config"]["mcpServers"]
    assert servers["fs"] == {"command": "mcp-server-filesystem", "args": ["/data"], "env": FS.env}
    swarm = servers["swarm"]
    assert swarm["command"] == sys.executable
    assert swarm["args"][:2] == ["-m", "swarm_runtime.tools.serve"]
    assert _flag(swarm["args"], "--tool") == "lookup=tests.runtime.engines.tool_samples:lookup"
    # The config holds a server's secret: private, outside the run, gone after the call.
    assert seen["config_mode"] == 0o600
    assert not Path(seen["config_path"]).exists()
    assert not Path(seen["config_path"]).is_relative_to(tmp_path)
    # Events and transcript name the tools as the flow does.
    tool_events = [e for e in events_of(outcome) if e["kind"] in ("tool_start", "tool_end")]
    assert [(e["kind"], e["payload"]["tool"]) for e in tool_events] == [
        ("tool_start", "fs.write_file"),
        ("tool_end", "fs.write_file"),
        ("tool_start", "lookup"),
        ("tool_end", "lookup"),
    ]
    assert tool_events[2]["payload"]["input"] == {"key": "k1"}
    assert tool_events[3]["payload"]["output"] == '{"value": 2}'
    doc = receipt(outcome, "solo", "only", "worker")
    assert doc["tools_allowed"] == ["lookup", "fs.write_file", "Read"]
    lines = (outcome.path / "solo" / doc["transcript_path"]).read_text().splitlines()
    used = [json.loads(line)["tool"] for line in lines if '"tool_use"' in line]
    assert used == ["fs.write_file", "lookup"]
    assert validate_run_dir(outcome.path) == []
    for path in outcome.path.rglob("*"):
        assert not path.is_file() or "fs-secret-value-0000" not in path.read_text()


def test_a_step_with_only_its_clis_tools_gets_no_mcp_config(tmp_path: Path) -> None:
    box = tool_box(lookup, servers={"fs": FS})
    outcome = _run(tmp_path, box, "['Bash(git:*)', other.tool]")
    assert outcome.status == "succeeded", outcome.error
    argv = json.loads((tmp_path / "seen.json").read_text())["argv"]
    assert "--mcp-config" not in argv
    assert _flag(argv, "--tools") == _flag(argv, "--allowed-tools") == "Bash(git:*),other.tool"


def test_a_python_tool_the_cli_cannot_import_fails_the_step_naming_it(tmp_path: Path) -> None:
    def local(key: str) -> str:
        return key

    registry_box = tool_box(lookup)
    registry_box.registry.register(local, name="local")
    outcome = _run(tmp_path, registry_box, "[lookup, local]")
    assert outcome.status == "failed"
    events = events_of(outcome)
    assert [e["kind"] for e in events][-2:] == ["step_error", "run_completed"]
    error = events[-2]["payload"]["error"]
    assert "tool 'local'" in error and "cannot be served to the CLI" in error
    assert "define it at the top level of a module" in error
    assert not (tmp_path / "pids").exists()  # the CLI never started
    assert validate_run_dir(outcome.path) == []


def test_a_user_server_named_swarm_is_refused_when_a_step_has_python_tools(tmp_path: Path) -> None:
    taken = McpServerConfig(name="swarm", command="x")
    outcome = _run(tmp_path, tool_box(lookup, servers={"swarm": taken}), "[lookup]")
    assert outcome.status == "failed"
    error = events_of(outcome)[-2]["payload"]["error"]
    assert "mcp_servers declares a server named 'swarm'" in error and "rename" in error


def test_a_server_with_a_cwd_starts_there_under_claude_code(tmp_path: Path) -> None:
    from swarm_runtime.engines.cli_tools import claude_mcp_name, cli_tools

    where = tmp_path / "srv"
    where.mkdir()
    server = McpServerConfig(
        name="here",
        command=sys.executable,
        args=("-c", "import os; print(os.getcwd())"),
        cwd=str(where),
    )
    tools = cli_tools(["here.pwd"], tool_box(servers={"here": server}), claude_mcp_name)
    entry = tools.config(cwd_key=False)["mcpServers"]["here"]
    assert "cwd" not in entry  # Claude Code's config has no such key
    started = subprocess.run(
        [entry["command"], *entry["args"]], capture_output=True, text=True, check=True
    )
    assert started.stdout.strip() == str(where)
    assert tools.config(cwd_key=True)["mcpServers"]["here"]["cwd"] == str(where)


def _ctx(tmp_path: Path, tools: tuple[str, ...]) -> StepContext:
    return StepContext(
        repo_root=tmp_path,
        run_id="run-1",
        flow_key="solo",
        step_id="only",
        step_index=1,
        total_steps=1,
        spec={},
        flow_title="Solo",
        step_role="work",
        step_agents=("worker",),
        history=(),
        run_base=tmp_path,
        prompt=Prompt(system="s", user="u"),
        tools=tools,
    )


def test_the_gemini_cli_gets_a_steps_tools_from_the_settings_of_its_own_home(
    tmp_path: Path,
) -> None:
    config = {"gemini": {"executable": "gemini"}, "process_env": {"GEMINI_API_KEY": "fake-k"}}
    engine = build_cli_engine("gemini-step", config, tools=tool_box(lookup, servers={"fs": FS}))
    ctx = _ctx(tmp_path, ("lookup", "fs.write_file", "read_file"))
    tools = engine.step_tools(ctx)
    assert tools.names == {"mcp_swarm_lookup": "lookup", "mcp_fs_write_file": "fs.write_file"}
    try:
        with engine.tool_config(tools) as settings:
            document = json.loads(settings.read_text())
            assert settings.stat().st_mode & 0o777 == 0o600
            env = engine.env(ctx)
            assert settings == Path(env["GEMINI_CLI_HOME"]) / ".gemini" / "settings.json"
            assert set(document["mcpServers"]) == {"fs", "swarm"}
            assert document["security"]["auth"]["selectedType"] == "gemini-api-key"
            engine._call.tools = (tools, settings)
            argv = engine.argv(ctx)
        allowed = [argv[i + 1] for i, arg in enumerate(argv) if arg == "--allowed-tools"]
        assert allowed == ["mcp_swarm_lookup", "mcp_fs_write_file", "read_file"]
        assert not settings.exists()  # the servers' settings went with the call
        assert "mcpServers" not in json.loads(
            Path(engine.env(ctx)["GEMINI_CLI_HOME"], ".gemini", "settings.json").read_text()
        )
    finally:
        engine.close()


def test_the_gemini_cli_on_the_users_own_login_cannot_get_mcp_tools(tmp_path: Path) -> None:
    engine = build_cli_engine("gemini-step", {"process_env": {}}, tools=tool_box(lookup))
    try:
        outcome = engine.run_step(_ctx(tmp_path, ("lookup",)))
    finally:
        engine.close()
    assert outcome.result.status == "failed"
    assert "GEMINI_API_KEY set and GEMINI_CLI_HOME unset" in str(outcome.result.error)


# -- the swarm tools server ------------------------------------------------------------


def _box(*names: str) -> ToolBox:
    module = "tests.runtime.engines.tool_samples"
    return build_box([f"{module}:{name}" for name in names], timeout_s=0.5, output_chars=100)


@pytest.mark.parametrize(
    ("name", "arguments", "says"),
    [
        ("lookup", {"key": "k"}, '{"key": "k", "value": 1}'),
        ("lookup", {"kee": "k"}, "the input does not match lookup's schema"),
        ("explode", {"reason": "no disk"}, "explode raised RuntimeError: no disk"),
        ("opaque", {}, "opaque returned a value that is not JSON (set)"),
        ("nothing", {}, "there is no tool 'nothing'"),
    ],
)
def test_the_tools_server_answers_each_call_and_each_failure_to_the_model(
    name: str, arguments: dict[str, Any], says: str
) -> None:
    text, error = answer(_box("lookup", "explode", "opaque"), name, arguments)
    assert says in text
    assert error is (name != "lookup" or "kee" in arguments)


def test_the_tools_server_cuts_a_long_output_visibly() -> None:
    text, error = answer(_box("wide"), "wide", {"size": 250})
    assert not error
    assert text.startswith("x" * 100 + "\n[CONTEXT_TRUNCATED: 150 chars")


def test_the_tools_server_answers_a_timeout_for_a_tool_past_its_deadline() -> None:
    tool_samples.RELEASE.clear()
    try:
        text, error = answer(_box("wait"), "wait", {})
    finally:
        tool_samples.RELEASE.set()
    assert error and "did not answer within 0.5 s" in text


def test_the_tools_server_refuses_a_tool_it_cannot_import() -> None:
    served = subprocess.run(
        [sys.executable, "-m", "swarm_runtime.tools.serve", "--tool", "no_such_module:f"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert served.returncode == 2
    assert "cannot import 'no_such_module'" in served.stderr


def test_the_tools_server_serves_a_python_tool_over_mcp(tmp_path: Path) -> None:
    pytest.importorskip("mcp", reason="the [mcp] extra: pip install 'swarm-stepwise[mcp]'")
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    target = tmp_path / "noted.txt"
    module = "tests.runtime.engines.tool_samples"
    serve = ["-m", "swarm_runtime.tools.serve", "--tool", f"write={module}:note"]
    params = StdioServerParameters(
        command=sys.executable, args=[*serve, "--path", str(REPO)], cwd=str(tmp_path)
    )

    async def session() -> tuple[Any, Any]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            listed = await client.list_tools()
            called = await client.call_tool("write", {"path": str(target), "text": "hello"})
            return listed, called

    listed, called = anyio.run(session)
    (spec,) = listed.tools
    assert spec.name == "write" and spec.input_schema["required"] == ["path", "text"]
    assert not called.is_error and called.content[0].text == "noted 5 chars"
    assert target.read_text() == "hello"

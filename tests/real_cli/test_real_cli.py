"""The real Claude Code and Gemini CLIs run stepwise-demo against loopback servers.

Driven as a user would: ``swarm …`` as a process and a user project through pytester.
The servers answer like the stub (a reviewer sends the first draft back); what they
report as usage is kept, so receipts can be checked against it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.anthropic_server import AnthropicServer, Reply
from tests.fakes.gemini_server import GeminiReply, GeminiServer
from tests.real_cli.conftest import (
    FAKE_ANTHROPIC_KEY,
    FAKE_GEMINI_KEY,
    REPO,
    claude_env,
    gemini_env,
)
from tests.runtime.helpers import step_yaml, write_flow

pytestmark = pytest.mark.real_cli

DEMO_STEPS = 10
DEMO_EXECUTIONS = 12  # the reviewer loop runs twice


def swarm(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "swarm_runtime", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=900,  # a guard against a hang, not a measurement
        check=False,
    )


def only_run(runs: Path) -> Path:
    (run,) = [p for p in runs.iterdir() if p.name.startswith("run-")]
    return run


def receipts(run: Path, flow: str) -> list[dict[str, Any]]:
    return [
        json.loads(path.read_text(encoding="utf-8"))
        for path in sorted((run / flow / "receipts").glob("*.json"))
    ]


def events(run: Path) -> list[dict[str, Any]]:
    lines = (run / "events.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def assert_no_key_in(root: Path, *keys: str) -> None:
    for path in root.rglob("*"):
        if path.is_file():
            text = path.read_text(encoding="utf-8", errors="replace")
            assert not any(key in text for key in keys), f"a key landed in {path}"


def _demo(tmp_path: Path, env: dict[str, str], *extra: str) -> Path:
    result = swarm(
        ["run", "stepwise-demo", "--flows-dir", str(REPO / "flows"), "--runs-dir", "runs", *extra],
        env,
        tmp_path,
    )
    assert result.returncode == 0, result.stderr
    run = only_run(tmp_path / "runs")
    checked = swarm(["runs", "validate", str(run), "--runs-dir", "runs"], env, tmp_path)
    assert checked.returncode == 0 and "no violations" in checked.stdout, checked.stdout
    executed = [e for e in events(run) if e["kind"] == "step_end"]
    assert len({e["step_id"] for e in executed}) == DEMO_STEPS
    assert len(executed) == DEMO_EXECUTIONS
    return run


def test_stepwise_demo_through_claude_code(
    tmp_path: Path, anthropic_server: AnthropicServer, claude_cli: str
) -> None:
    run = _demo(
        tmp_path, claude_env(tmp_path / "home", anthropic_server, claude_cli), "--mode", "cli"
    )
    docs = receipts(run, "stepwise-demo")
    assert {(d["engine"], d["mode"]) for d in docs} == {("claude-step", "cli")}
    reported = anthropic_server.usage
    assert len(reported) == DEMO_EXECUTIONS  # one model turn per step
    # The run's tokens are what the server reported, turn by turn
    # (docs/contract/steps.md#timing-and-cost).
    meta = json.loads((run / "meta.json").read_text(encoding="utf-8"))
    assert meta["tokens"]["prompt"] == sum(u["input_tokens"] for u in reported)
    assert meta["tokens"]["completion"] == sum(u["output_tokens"] for u in reported)
    assert all(d["cost"]["estimatedCostUsd"] is not None for d in docs)  # the CLI's own figure
    assert_no_key_in(tmp_path / "runs", FAKE_ANTHROPIC_KEY)


def test_stepwise_demo_through_the_gemini_cli(
    tmp_path: Path, gemini_server: GeminiServer, gemini_cli: str
) -> None:
    env = gemini_env(tmp_path / "home", gemini_server, gemini_cli)
    run = _demo(tmp_path, env, "--backend", "gemini-step-orchestrator")
    docs = receipts(run, "stepwise-demo")
    assert {(d["engine"], d["mode"], d["provider"]) for d in docs} == {
        ("gemini-step", "cli", "gemini")
    }
    reported = gemini_server.usage
    meta = json.loads((run / "meta.json").read_text(encoding="utf-8"))
    assert meta["tokens"]["prompt"] == sum(u["promptTokenCount"] for u in reported)
    assert meta["tokens"]["completion"] == sum(u["candidatesTokenCount"] for u in reported)
    assert not (tmp_path / "home" / ".gemini").exists()  # the user's own settings untouched
    assert_no_key_in(tmp_path / "runs", FAKE_GEMINI_KEY)


@pytest.mark.parametrize("cli", ["claude", "gemini"])
def test_a_tool_call_shows_in_events_and_transcript(
    tmp_path: Path,
    anthropic_server: AnthropicServer,
    gemini_server: GeminiServer,
    claude_cli: str,
    gemini_cli: str,
    cli: str,
) -> None:
    tool = "Bash" if cli == "claude" else "run_shell_command"
    flows = tmp_path / "flows"
    write_flow(flows, "tooly", [step_yaml("shell") + f"    tools: [{tool}]\n"])
    command = {"command": "echo fake-tool-ok", "description": "print a marker"}
    if cli == "claude":
        anthropic_server.script(Reply(tool_use={"name": tool, "input": command}))
        env = claude_env(tmp_path / "home", anthropic_server, claude_cli)
        extra = ["--mode", "cli"]
    else:
        gemini_server.script(GeminiReply(function_call={"name": tool, "args": command}))
        env = gemini_env(tmp_path / "home", gemini_server, gemini_cli)
        extra = ["--backend", "gemini-step-orchestrator"]
    result = swarm(
        ["run", "tooly", "--flows-dir", str(flows), "--runs-dir", "runs", *extra], env, tmp_path
    )
    assert result.returncode == 0, result.stderr
    run = only_run(tmp_path / "runs")
    tool_events = [e for e in events(run) if e["kind"] in ("tool_start", "tool_end")]
    assert [(e["kind"], e["payload"]["tool"]) for e in tool_events] == [
        ("tool_start", tool),
        ("tool_end", tool),
    ]
    assert tool_events[0]["payload"]["input"]["command"] == "echo fake-tool-ok"
    assert tool_events[1]["payload"]["success"] is True
    assert "fake-tool-ok" in str(tool_events[1]["payload"]["output"])
    (doc,) = receipts(run, "tooly")
    assert doc["tools_allowed"] == [tool]
    lines = (run / "tooly" / doc["transcript_path"]).read_text(encoding="utf-8").splitlines()
    kinds = [json.loads(line).get("type") or json.loads(line)["role"] for line in lines]
    assert kinds == ["system", "user", "tool_use", "tool_result", "assistant"]
    checked = swarm(["runs", "validate", str(run), "--runs-dir", "runs"], env, tmp_path)
    assert checked.returncode == 0, checked.stdout


def _user_project(pytester: pytest.Pytester, *, gemini: bool) -> None:
    """A project with stepwise-demo as its only flow, tested by the packaged contract suite."""
    flows = pytester.path / "flows"
    flows.mkdir()
    shutil.copy(REPO / "flows" / "stepwise-demo.yaml", flows)
    shutil.copytree(REPO / "flows" / "agents", flows / "agents")
    if gemini:  # every run of the suite on gemini-step
        pytester.makeconftest(
            """
            import pytest

            @pytest.fixture(autouse=True)
            def _on_gemini(swarm_engine):
                swarm_engine.engine_id = "gemini-step"
            """
        )


def test_the_contract_suite_passes_on_claude_code_runs(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    anthropic_server: AnthropicServer,
    claude_cli: str,
) -> None:
    _user_project(pytester, gemini=False)
    for name, value in claude_env(pytester.path / "home", anthropic_server, claude_cli).items():
        monkeypatch.setenv(name, value)
    result = pytester.runpytest_subprocess("--swarm-contract", "--swarm-mode=cli", "-p", "no:xdist")
    result.assert_outcomes(passed=4)
    assert anthropic_server.usage, "no call reached the server"


def test_the_contract_suite_passes_on_gemini_cli_runs(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    gemini_server: GeminiServer,
    gemini_cli: str,
) -> None:
    _user_project(pytester, gemini=True)
    for name, value in gemini_env(pytester.path / "home", gemini_server, gemini_cli).items():
        monkeypatch.setenv(name, value)
    result = pytester.runpytest_subprocess("--swarm-contract", "-p", "no:xdist")
    result.assert_outcomes(passed=4)
    assert gemini_server.usage, "no call reached the server"


def _jailed(args: list[str]) -> list[str]:
    """``args`` in a network namespace with loopback only, where the machine allows one."""
    probe = subprocess.run(["unshare", "-rn", "true"], capture_output=True, check=False, timeout=60)
    if probe.returncode != 0:
        return args
    return ["unshare", "-rn", "sh", "-c", 'ip link set lo up && exec "$@"', "sh", *args]


@pytest.mark.parametrize("cli", ["claude", "gemini"])
def test_a_recorded_cli_run_replays_with_no_server_and_gives_the_same_run(
    tmp_path: Path,
    anthropic_server: AnthropicServer,
    gemini_server: GeminiServer,
    claude_cli: str,
    gemini_cli: str,
    cli: str,
) -> None:
    home = tmp_path / "home"
    if cli == "claude":
        env = claude_env(home, anthropic_server, claude_cli)
        extra = ["--record-via", "cli"]
    else:
        env = gemini_env(home, gemini_server, gemini_cli)
        extra = ["--backend", "gemini-step-orchestrator"]
    demo = ["run", "stepwise-demo", "--flows-dir", str(REPO / "flows"), *extra]
    recorded = swarm(
        [*demo, "--runs-dir", "rec", "--mode", "record", "--cassette-dir", "cass"], env, tmp_path
    )
    assert recorded.returncode == 0, recorded.stderr
    anthropic_server.stop()
    gemini_server.stop()
    cassette = tmp_path / "cass" / "stepwise-demo" / "write_function-demo-coder-1.yaml"
    assert cassette.read_text(encoding="utf-8").startswith("recorded_via: cli\n")
    assert_no_key_in(tmp_path / "cass", FAKE_ANTHROPIC_KEY, FAKE_GEMINI_KEY, str(tmp_path))
    replay_env = {k: v for k, v in env.items() if "KEY" not in k and "BASE_URL" not in k}
    command = [sys.executable, "-m", "swarm_runtime", *demo, "--runs-dir", "rep"]
    replayed = subprocess.run(
        _jailed([*command, "--mode", "replay", "--cassette-dir", "cass"]),
        env=replay_env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert replayed.returncode == 0, replayed.stderr
    diff = swarm(
        ["golden", "diff", str(only_run(tmp_path / "rec")), str(only_run(tmp_path / "rep"))],
        replay_env,
        tmp_path,
    )
    assert "No differences" in diff.stdout, diff.stdout
    # A cassette that no longer matches what the step sends fails it, saying how to re-record.
    text = cassette.read_text(encoding="utf-8")
    cassette.write_text(text.replace("## Request", "## Changed request", 1), encoding="utf-8")
    missed = swarm(
        [*demo, "--runs-dir", "miss", "--mode", "replay", "--cassette-dir", "cass"],
        replay_env,
        tmp_path,
    )
    assert missed.returncode == 1
    assert "replay of stepwise-demo/write_function iteration 1: no recorded call" in missed.stderr
    assert "Re-record with: swarm run --mode record --cassette-dir cass" in missed.stderr


def test_pytest_records_claude_code_runs_and_replays_them(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    anthropic_server: AnthropicServer,
    claude_cli: str,
) -> None:
    _user_project(pytester, gemini=False)
    pytester.makepyfile(
        test_demo="""
        def test_demo(flow_runner, swarm_contract):
            record = flow_runner("stepwise-demo")
            assert record.status == "succeeded"
            swarm_contract.assert_run(record)
        """
    )
    for name, value in claude_env(pytester.path / "home", anthropic_server, claude_cli).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("SWARM_RECORD_VIA", "cli")
    pytester.runpytest_subprocess("--swarm-mode=record", "-p", "no:xdist").assert_outcomes(passed=1)
    anthropic_server.stop()
    monkeypatch.delenv("ANTHROPIC_BASE_URL")
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    cassettes = pytester.path / "golden" / "cassettes" / "test_demo" / "test_demo" / "stepwise-demo"
    assert len(list(cassettes.glob("*.yaml"))) == DEMO_EXECUTIONS
    replayed = pytester.runpytest_subprocess("--swarm-mode=replay", "-p", "no:xdist")
    replayed.assert_outcomes(passed=1)
    replayed.stdout.fnmatch_lines(["*cassettes: 12 played, 0 recorded, 0 unplayed*"])


def test_claude_code_gets_a_plans_faults_from_the_loopback_server(
    tmp_path: Path, anthropic_server: AnthropicServer, claude_cli: str
) -> None:
    write_flow(tmp_path / "flows", "demo", [step_yaml("draft"), step_yaml("review")])
    env = claude_env(tmp_path / "home", anthropic_server, claude_cli)
    (tmp_path / "plan.yaml").write_text(
        "draft: [{kind: http_429, retry_after_ms: 0}]\nreview: [stream_cut]\n", encoding="utf-8"
    )
    run = ["run", "demo", "--flows-dir", "flows", "--faults", "plan.yaml", "--cassette-dir", "cass"]
    recorded = swarm(
        [*run, "--runs-dir", "rec", "--mode", "record", "--record-via", "cli"], env, tmp_path
    )
    assert recorded.returncode == 0, recorded.stderr
    # The faults never reached the provider and nothing of them was recorded.
    assert len(anthropic_server.requests) == 2
    for cassette in (tmp_path / "cass" / "demo").glob("*.yaml"):
        text = cassette.read_text(encoding="utf-8")
        assert text.startswith("recorded_via: cli\n") and "injected by the fault plan" not in text
    anthropic_server.stop()
    (tmp_path / "plan.yaml").write_text(
        "draft: [{kind: http_429, retry_after_ms: 0}]\n", encoding="utf-8"
    )
    replay_env = {k: v for k, v in env.items() if "KEY" not in k and "BASE_URL" not in k}
    replayed = subprocess.run(
        _jailed(
            [sys.executable, "-m", "swarm_runtime", *run, "--runs-dir", "rep", "--mode", "replay"]
        ),
        env=replay_env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert replayed.returncode == 0, replayed.stderr  # every recorded call played
    replay = only_run(tmp_path / "rep")
    (draft,) = [d for d in receipts(replay, "demo") if d["step_id"] == "draft"]
    assert (draft["status"], draft["result_code"], draft["attempt"]) == ("succeeded", "ok", 2)
    logs = [e["payload"] for e in events(replay) if e["kind"] == "log"]
    assert (logs[0]["fault"], logs[0]["served"], logs[0]["result_code"]) == (
        "http_429",
        True,
        "retryable",
    )
    assert "the API answered HTTP 429" in logs[1]["error"]

"""MCP servers of a run: started once, their tools as ``server.tool``, every failure a clear
error naming the server, and no process left behind, even when the run is SIGKILLed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from swarm_runtime.credentials import Credentials
from swarm_runtime.errors import ConfigError
from swarm_runtime.install import install_command
from swarm_runtime.tools.box import ToolTimeout
from swarm_runtime.tools.config import McpServerConfig
from swarm_runtime.tools.mcp import McpServerError, McpServers, McpToolError
from tests.fakes.mcp_servers import fake_config, fs_config, marked, wait_gone

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="counts processes in /proc")
pytest.importorskip("mcp", reason="the [mcp] extra: pip install 'swarm-stepwise[mcp]'")

FAKE_KEY = "sk-fake-0123456789abcdef-not-a-real-key"


@pytest.fixture
def mark() -> str:
    return os.urandom(6).hex()


@pytest.fixture
def open_servers() -> Iterator[list[McpServers]]:
    made: list[McpServers] = []
    yield made
    for servers in made:
        servers.close()


@pytest.fixture
def start(open_servers: list[McpServers]) -> Callable[..., McpServers]:
    """Make a run's McpServers of ``configs``; each is closed at teardown."""

    def start(*configs: McpServerConfig, **options: Any) -> McpServers:
        servers = McpServers({c.name: c for c in configs}, **options)
        open_servers.append(servers)
        return servers

    return start


def test_the_filesystem_server_lists_writes_and_reads(start, tmp_path: Path, mark: str) -> None:
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    servers = start(fs_config(allowed, mark=mark, pure_tools=("read_text_file",)))
    specs = {spec.name: spec for spec in servers.specs("fs")}
    assert {"fs.read_text_file", "fs.write_file", "fs.list_directory"} <= set(specs)
    assert specs["fs.read_text_file"].pure and not specs["fs.write_file"].pure
    assert specs["fs.write_file"].source == "mcp server fs"
    assert "path" in specs["fs.write_file"].input_schema["properties"]
    target = allowed / "note.txt"
    servers.call("fs", "write_file", {"path": str(target), "content": "hello"}, 30)
    assert target.read_text() == "hello"
    assert servers.call("fs", "read_text_file", {"path": str(target)}, 30) == "hello"


def test_a_pure_tool_the_server_does_not_have_is_named(start, tmp_path: Path, mark: str) -> None:
    servers = start(fs_config(tmp_path, mark=mark, pure_tools=("read_text_file", "teleport")))
    with pytest.raises(McpServerError) as caught:
        servers.specs("fs")
    assert "'teleport'" in str(caught.value) and "read_text_file" in str(caught.value)
    assert "'fs'" in str(caught.value)


def test_a_server_is_started_once_whoever_asks_first(start, tmp_path: Path, mark: str) -> None:
    starts = tmp_path / "starts"
    servers = start(fake_config(mark=mark, env={"FAKE_MCP_STARTS": str(starts)}))
    gate = threading.Barrier(4)
    answers: list[str] = []

    def ask() -> None:
        gate.wait()
        answers.append(servers.call("fake", "echo", {"text": "hi"}, 30))
        servers.specs("fake")

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert answers == ["echo: hi"] * 4
    assert len(starts.read_text().splitlines()) == 1


def test_a_tool_error_answer_is_a_tool_error(start, mark: str) -> None:
    servers = start(fake_config(mark=mark))
    with pytest.raises(McpToolError) as caught:
        servers.call("fake", "fail", {"reason": "the widget is broken"}, 30)
    assert "the widget is broken" in str(caught.value)
    assert not isinstance(caught.value, McpServerError)
    assert servers.call("fake", "echo", {"text": "still here"}, 30) == "echo: still here"


def test_non_text_content_is_said_for_what_it_is(start, mark: str) -> None:
    servers = start(fake_config(mark=mark))
    assert servers.call("fake", "picture", {}, 30) == "a picture\n[image/png, 4 bytes]"


def test_a_hung_call_times_out_and_the_server_answers_the_next(start, mark: str) -> None:
    servers = start(fake_config(mark=mark))
    with pytest.raises(ToolTimeout) as caught:
        servers.call("fake", "hang", {}, 0.5)
    assert "fake.hang" in str(caught.value)
    assert servers.call("fake", "echo", {"text": "after"}, 30) == "echo: after"


def test_a_server_gets_a_minimal_environment_and_its_env(
    start, mark: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    servers = start(fake_config(mark=mark, env={"GREETING": "hello"}))
    seen = json.loads(servers.call("fake", "env", {}, 30))
    assert seen["GREETING"] == "hello" and "PATH" in seen
    assert "ANTHROPIC_API_KEY" not in seen and FAKE_KEY not in json.dumps(seen)


def test_a_command_that_does_not_exist(start, mark: str) -> None:
    config = McpServerConfig(name="ghost", command="swarm-no-such-server-xyz", env={})
    servers = start(config)
    with pytest.raises(McpServerError) as caught:
        servers.specs("ghost")
    message = str(caught.value)
    assert "'ghost'" in message and "swarm-no-such-server-xyz" in message
    with pytest.raises(McpServerError):
        servers.call("ghost", "anything", {}, 30)


def test_a_server_that_exits_at_once(start, mark: str) -> None:
    servers = start(fake_config("exit", mark=mark, name="quitter"))
    with pytest.raises(McpServerError) as caught:
        servers.specs("quitter")
    message = str(caught.value)
    assert "'quitter'" in message and "mcp_server.py exit" in message
    assert "would not start" in message and "exited with status 2" in message
    assert "unknown flag --frobnicate" in message  # its stderr


def test_a_server_that_writes_garbage(start, mark: str) -> None:
    servers = start(fake_config("garbage", mark=mark, name="chatty"))
    with pytest.raises(McpServerError) as caught:
        servers.specs("chatty")
    message = str(caught.value)
    assert "'chatty'" in message and "not MCP" in message
    assert "Fake server v1.0 starting up" in message
    assert wait_gone(mark) == []


def test_garbage_in_the_middle_of_a_call(start, mark: str) -> None:
    servers = start(fake_config(mark=mark))
    with pytest.raises(McpServerError) as caught:
        servers.call("fake", "babble", {}, 600)  # no waiting for the deadline
    assert "'fake'" in str(caught.value) and "this is not JSON-RPC" in str(caught.value)
    with pytest.raises(McpServerError):
        servers.call("fake", "echo", {"text": "again"}, 30)


def test_a_server_that_never_answers_the_handshake(start, mark: str) -> None:
    servers = start(fake_config("silent", mark=mark, name="mute"), start_timeout_s=0.5)
    with pytest.raises(McpServerError) as caught:
        servers.specs("mute")
    assert "'mute'" in str(caught.value) and "handshake within 0.5 s" in str(caught.value)
    assert wait_gone(mark) == []


def test_a_server_that_dies_mid_call_stays_dead(start, mark: str) -> None:
    servers = start(fake_config(mark=mark))
    assert servers.call("fake", "echo", {"text": "alive"}, 30) == "echo: alive"
    with pytest.raises(McpServerError) as caught:
        servers.call("fake", "die", {}, 600)
    message = str(caught.value)
    assert "'fake'" in message and "died during a call of die" in message
    assert "exited with status 3" in message and "the disk caught fire" in message
    with pytest.raises(McpServerError) as again:
        servers.call("fake", "echo", {"text": "alive?"}, 30)
    assert "died during a call of die" in str(again.value)
    assert "not restarted" in str(again.value)
    assert wait_gone(mark) == []


def test_credentials_are_scrubbed_from_a_servers_stderr(start, mark: str) -> None:
    from_run = "run-secret-token-value-1234"
    config = fake_config("exit", mark=mark, env={"FAKE_MCP_SECRET": FAKE_KEY})
    servers = start(config, credentials=Credentials([("RUN_TOKEN", from_run)]))
    with pytest.raises(McpServerError) as caught:
        servers.specs("fake")
    message = str(caught.value)
    assert "unknown flag --frobnicate" in message
    assert FAKE_KEY not in message and "[scrubbed FAKE_MCP_SECRET]" in message
    config = fake_config("exit", mark=mark, env={"FAKE_MCP_SECRET": from_run})
    servers = start(config, credentials=Credentials([("RUN_TOKEN", from_run)]))
    with pytest.raises(McpServerError) as caught:
        servers.specs("fake")
    assert from_run not in str(caught.value) and "[scrubbed RUN_TOKEN]" in str(caught.value)


def test_close_leaves_no_process(tmp_path: Path, mark: str) -> None:
    servers = McpServers(
        {
            "fs": fs_config(tmp_path, mark=mark, launched=True),
            "fake": fake_config(mark=mark, setsid_launcher=True, env={"FAKE_MCP_HELPER": "1"}),
        }
    )
    servers.specs("fs")
    assert servers.call("fake", "echo", {"text": "hi"}, 30) == "echo: hi"
    assert len(marked(mark)) >= 5  # two launchers, node, the fake and its helper (and guards)
    servers.close()
    assert marked(mark) == []
    with pytest.raises(McpServerError) as caught:
        servers.specs("fs")
    assert "closed" in str(caught.value)


KILLED_RUN = """
import json, sys
from swarm_runtime.tools.config import McpServerConfig
from swarm_runtime.tools.mcp import McpServers

configs = {name: McpServerConfig(**c) for name, c in json.loads(sys.argv[1]).items()}
servers = McpServers(configs)
servers.specs("fs")
servers.call("fake", "hang", {}, 600)
"""


def test_a_sigkilled_run_leaves_no_server_behind(tmp_path: Path, mark: str) -> None:
    hanging = tmp_path / "hanging"
    configs = {
        "fs": fs_config(tmp_path, mark=mark, launched=True),
        "fake": fake_config(
            mark=mark,
            setsid_launcher=True,
            env={"FAKE_MCP_HANGING": str(hanging), "FAKE_MCP_HELPER": "1"},
        ),
    }
    raw = {
        name: {"name": c.name, "command": c.command, "args": list(c.args), "env": c.env}
        for name, c in configs.items()
    }
    run = subprocess.Popen(
        [sys.executable, "-c", KILLED_RUN, json.dumps(raw)],
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=Path(__file__).resolve().parents[2],
    )
    try:
        deadline = time.monotonic() + 60
        while not hanging.exists() and run.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)  # until the hang tool has started: an event, with a cap
        assert run.stderr is not None
        assert hanging.exists(), run.stderr.read().decode() if run.poll() is not None else ""
        assert len(marked(mark)) >= 5
    finally:
        os.kill(run.pid, signal.SIGKILL)
        run.wait()
        run.stderr.close()
    assert wait_gone(mark) == []


def test_a_missing_sdk_names_the_install_command(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, mark: str
) -> None:
    monkeypatch.setitem(sys.modules, "mcp", None)
    servers = McpServers({"fake": fake_config(mark=mark)})
    with pytest.raises(ConfigError) as caught:
        servers.specs("fake")
    assert install_command("mcp") in str(caught.value)
    servers.close()

"""``swarm run --mode record|replay --cassette-dir DIR``, as a user runs it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from swarm_runtime.install import install_command
from tests.conftest import CliResult
from tests.fakes.anthropic_server import AnthropicServer

KEY = "sk-ant-cli-record-not-a-key"


def _swarm(cwd: Path, *args: str, server: AnthropicServer | None = None) -> CliResult:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SWARM_", "ANTHROPIC_"))}
    if server is not None:
        env.update(ANTHROPIC_BASE_URL=server.url, ANTHROPIC_API_KEY=KEY)
    done = subprocess.run(
        [sys.executable, "-m", "swarm_runtime.cli.main", "run", "stepwise-demo", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return CliResult(done.returncode, done.stdout, done.stderr)


@pytest.fixture
def recorded(cli: Callable[..., CliResult], tmp_path: Path) -> Path:
    server = AnthropicServer().start()
    try:
        result = _swarm(
            tmp_path, "--mode", "record", "--cassette-dir", "cas", "--runs-dir", "a", server=server
        )
    finally:
        server.stop()  # everything below runs with no server to reach
    assert result.code == 0, result.err
    assert f"recorded the run's calls in {Path('cas')}" in result.err
    return tmp_path


def test_a_replay_reproduces_the_recorded_run(
    recorded: Path, cli: Callable[..., CliResult]
) -> None:
    names = sorted(p.name for p in (recorded / "cas" / "stepwise-demo").iterdir())
    assert "read_request-demo-intake-0.yaml" in names
    replay = _swarm(recorded, "--mode", "replay", "--cassette-dir", "cas", "--runs-dir", "b")
    assert replay.code == 0, replay.err
    (first,) = (recorded / "a").iterdir()
    (second,) = (recorded / "b").iterdir()
    same = cli("golden", "diff", str(first), str(second))
    assert same.code == 0 and "No differences" in same.out, same.out
    assert cli("runs", "validate", str(second)).code == 0


def test_a_replay_miss_exits_1_saying_how_to_re_record(recorded: Path) -> None:
    flow = recorded / "flows" / "stepwise-demo.yaml"
    flow.write_text(flow.read_text().replace("role: ", "role: Now ", 1))
    replay = _swarm(recorded, "--mode", "replay", "--cassette-dir", "cas", "--runs-dir", "b")
    assert replay.code == 1
    assert "replay of stepwise-demo/read_request iteration 0: no recorded call matches" in (
        replay.err
    )
    assert "Re-record with: swarm run --mode record --cassette-dir cas stepwise-demo" in replay.err
    assert "Traceback" not in replay.err


def _printed(err: str, lead: str) -> str:
    """The command printed after ``lead``, without the note on keys that follows it."""
    match = re.search(re.escape(lead) + r" (swarm run .*?)\n\(with ANTHROPIC_API_KEY", err)
    assert match, err
    return match.group(1)


def _shell(cwd: Path, command: str, server: AnthropicServer) -> None:
    """Run a printed command verbatim in a POSIX shell, as a user pastes it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SWARM_", "ANTHROPIC_"))}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.update(ANTHROPIC_BASE_URL=server.url, ANTHROPIC_API_KEY=KEY)
    done = subprocess.run(
        ["sh", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"


def test_a_printed_re_record_command_with_a_param_of_spaces_and_commas_works_pasted(
    tmp_path: Path,
) -> None:
    server = AnthropicServer().start()
    try:
        first = _swarm(
            tmp_path,
            "--mode",
            "record",
            "--cassette-dir",
            "cas",
            "--param",
            "claim=Burst pipe",
            server=server,
        )
        assert first.code == 0, first.err
        changed = [
            "--mode",
            "replay",
            "--cassette-dir",
            "cas",
            "--param",
            "claim=Burst pipe, changed",
        ]
        missed = _swarm(tmp_path, *changed)
        assert missed.code == 1
        command = _printed(missed.err, "Re-record with:")
        assert "--param 'claim=Burst pipe, changed'" in command
        _shell(tmp_path, command, server)
    finally:
        server.stop()
    replay = _swarm(tmp_path, *changed)
    assert replay.code == 0, replay.err


def test_a_replay_with_nothing_recorded_says_so_and_how_to_record(tmp_path: Path) -> None:
    replay = _swarm(tmp_path, "--mode", "replay", "--cassette-dir", "cas", "--runs-dir", "b")
    assert replay.code == 1
    assert (
        "replay of stepwise-demo/read_request iteration 0: there is no recording of this call "
        "(no cassette stepwise-demo/read_request-demo-intake-0.yaml; nothing is recorded in cas)"
    ) in replay.err
    assert "no recorded call matches" not in replay.err
    assert "cost unknown" not in replay.out  # nothing was sent: it cost nothing
    server = AnthropicServer().start()
    try:
        _shell(tmp_path, _printed(replay.err, "Record it with:"), server)
    finally:
        server.stop()
    again = _swarm(tmp_path, "--mode", "replay", "--cassette-dir", "cas", "--runs-dir", "c")
    assert again.code == 0, again.err


def test_unplayed_recordings_fail_the_replay(recorded: Path) -> None:
    folder = recorded / "cas" / "stepwise-demo"
    (folder / "read_request-demo-intake-5.yaml").write_text(
        (folder / "read_request-demo-intake-0.yaml").read_text()
    )
    replay = _swarm(recorded, "--mode", "replay", "--cassette-dir", "cas", "--runs-dir", "b")
    assert replay.code == 1
    assert "read_request-demo-intake-5.yaml: no call of this run asked for it" in replay.err


def test_record_and_replay_need_a_cassette_dir(cli: Callable[..., CliResult]) -> None:
    result = cli("run", "stepwise-demo", "--mode", "replay")
    assert result.code == 2
    assert "--mode replay needs --cassette-dir DIR" in result.err


def test_replay_without_vcrpy_says_what_to_install(
    cli: Callable[..., CliResult], monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "vcr", None)  # as if vcrpy were not installed
    result = cli("run", "stepwise-demo", "--mode", "replay", "--cassette-dir", "cas")
    assert result.code == 2
    assert f"record and replay modes need vcrpy: {install_command('replay')}" in result.err
    assert "Traceback" not in result.err and "ModuleNotFoundError" not in result.err


def test_a_key_echoed_in_a_response_header_is_scrubbed_and_the_recording_replays(
    tmp_path: Path,
) -> None:
    server = AnthropicServer().start()
    # Every reply sends the key back (docs/record-replay.md#secrets).
    server.echo_key_header = "x-echoed-key"
    try:
        result = _swarm(
            tmp_path, "--mode", "record", "--cassette-dir", "cas", "--runs-dir", "a", server=server
        )
    finally:
        server.stop()
    assert result.code == 0, result.err
    assert server.requests and all(KEY in r["headers"]["authorization"] for r in server.requests)
    holding = [p for p in tmp_path.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]
    assert holding == []
    cassette = (tmp_path / "cas" / "stepwise-demo" / "read_request-demo-intake-0.yaml").read_text()
    assert "x-echoed-key" in cassette.lower() and "[scrubbed ANTHROPIC_API_KEY]" in cassette
    replay = _swarm(tmp_path, "--mode", "replay", "--cassette-dir", "cas", "--runs-dir", "b")
    assert replay.code == 0, replay.err


def test_recording_a_stream_that_never_ends_stops_at_the_deadline(tmp_path: Path) -> None:
    from tests.fakes.anthropic_server import Reply

    config = tmp_path / "swarm" / "config" / "runtime.yaml"
    config.parent.mkdir(parents=True)
    config.write_text("engines:\n  claude:\n    timeout_s: 0.5\n")
    server = AnthropicServer().start()
    server.script(Reply(pings_every_s=0.05))  # the first call: alive, and never done
    try:
        result = _swarm(
            tmp_path, "--mode", "record", "--cassette-dir", "cas", "--runs-dir", "a", server=server
        )
    finally:
        server.stop()
    assert result.code == 0, result.err  # the retry answered
    (run_dir,) = (tmp_path / "a").iterdir()
    logs = [
        json.loads(line)
        for line in (run_dir / "events.jsonl").read_text().splitlines()
        if '"kind": "log"' in line
    ]
    assert ["did not finish within 0.5 s" in e["payload"]["error"] for e in logs] == [True]


def test_a_cassette_that_is_a_fifo_is_refused_not_waited_on(recorded: Path) -> None:
    cassette = recorded / "cas" / "stepwise-demo" / "read_request-demo-intake-0.yaml"
    cassette.unlink()
    os.mkfifo(cassette)  # a reader that opened it would wait for a writer for ever
    replay = _swarm(recorded, "--mode", "replay", "--cassette-dir", "cas", "--runs-dir", "b")
    assert replay.code == 1
    assert "read_request-demo-intake-0.yaml cannot be read: is not a regular file" in replay.err
    assert "Traceback" not in replay.err


def test_re_recording_into_a_symlinked_cassette_dir_replaces_its_target(recorded: Path) -> None:
    target = recorded / "kept-elsewhere"
    (recorded / "cas").rename(target)
    (recorded / "cas").symlink_to(target)
    (target / "stepwise-demo" / "stale-0.yaml").write_text("interactions: []\n")
    server = AnthropicServer().start()
    try:
        again = _swarm(
            recorded, "--mode", "record", "--cassette-dir", "cas", "--runs-dir", "c", server=server
        )
    finally:
        server.stop()
    assert again.code == 0, again.err
    assert (recorded / "cas").is_symlink() and (recorded / "cas").resolve() == target
    assert not (target / "stepwise-demo" / "stale-0.yaml").exists()  # replaced whole
    assert (target / "stepwise-demo" / "read_request-demo-intake-0.yaml").is_file()
    leftovers = [p.name for p in recorded.iterdir() if p.name.startswith(".")]
    assert leftovers == []
    replay = _swarm(recorded, "--mode", "replay", "--cassette-dir", "cas", "--runs-dir", "d")
    assert replay.code == 0, replay.err

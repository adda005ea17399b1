"""--swarm-record-mode {none,once,new_episodes,all} and --swarm-block-network."""

from __future__ import annotations

from typing import Any

import pytest

TESTS = """
def test_first(flow_runner):
    assert flow_runner("stepwise-demo").status == "succeeded"

def test_second(flow_runner):
    assert flow_runner("stepwise-demo", ask="another request").status == "succeeded"
"""


@pytest.fixture
def project(swarm_pytester: pytest.Pytester) -> pytest.Pytester:
    swarm_pytester.makepyfile(test_suite=TESTS)
    return swarm_pytester


def _cassettes(project: pytest.Pytester, test: str) -> list[Any]:
    return sorted((project.path / "golden" / "cassettes" / "test_suite" / test).rglob("*.yaml"))


def test_once_records_only_the_tests_that_have_no_cassette(
    project: pytest.Pytester, anthropic_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", anthropic_server.url)
    project.runpytest("--swarm-mode=record", "-k", "first").assert_outcomes(passed=1)
    first = {p: p.read_bytes() for p in _cassettes(project, "test_first")}
    calls = len(anthropic_server.requests)
    once = project.runpytest("--swarm-record-mode=once")
    once.assert_outcomes(passed=2)
    once.stdout.fnmatch_lines(["swarm: mode=record (--swarm-record-mode), record mode once*"])
    assert len(anthropic_server.requests) - calls == len(_cassettes(project, "test_second"))
    assert {p: p.read_bytes() for p in _cassettes(project, "test_first")} == first  # replayed
    monkeypatch.delenv("ANTHROPIC_BASE_URL")
    project.runpytest("--swarm-record-mode=none").assert_outcomes(passed=2)


def test_new_episodes_records_only_the_calls_that_have_no_cassette(
    project: pytest.Pytester, anthropic_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", anthropic_server.url)
    project.runpytest("--swarm-mode=record", "-k", "first").assert_outcomes(passed=1)
    gone = _cassettes(project, "test_first")[0]
    gone.unlink()
    calls = len(anthropic_server.requests)
    project.runpytest("--swarm-record-mode=new_episodes", "-k", "first").assert_outcomes(passed=1)
    assert len(anthropic_server.requests) - calls == 1  # the one missing call, and no other
    assert gone.is_file()
    monkeypatch.delenv("ANTHROPIC_BASE_URL")
    project.runpytest("--swarm-mode=replay", "-k", "first").assert_outcomes(passed=1)


def test_new_episodes_counts_the_calls_it_replayed_as_played_and_only_new_ones_recorded(
    project: pytest.Pytester, anthropic_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the summary says is what reached the server: not every call 'recorded'."""
    monkeypatch.setenv("ANTHROPIC_BASE_URL", anthropic_server.url)
    project.runpytest("--swarm-mode=record", "-k", "first").assert_outcomes(passed=1)
    kept = _cassettes(project, "test_first")
    kept[0].unlink()
    calls = len(anthropic_server.requests)
    again = project.runpytest("--swarm-record-mode=new_episodes", "-k", "first")
    again.assert_outcomes(passed=1)
    assert len(anthropic_server.requests) - calls == 1
    again.stdout.fnmatch_lines([f"cassettes: {len(kept) - 1} played, 1 recorded, 0 unplayed"])
    unchanged = project.runpytest("--swarm-record-mode=new_episodes", "-k", "first")
    unchanged.assert_outcomes(passed=1)
    assert len(anthropic_server.requests) - calls == 1  # nothing new reached the server
    unchanged.stdout.fnmatch_lines([f"cassettes: {len(kept)} played, 0 recorded, 0 unplayed"])


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--swarm-mode=stub", "--swarm-record-mode=once"], "goes with --swarm-mode=record"),
        (["--swarm-mode=replay", "--swarm-record-mode=all"], "goes with --swarm-mode=record"),
        (["--swarm-record-mode=sometimes"], "is not one of none, once, new_episodes, all"),
        (["--swarm-block-network=maybe"], "is not one of auto, yes, no"),
    ],
)
def test_record_and_network_options_that_do_not_fit_are_usage_errors(
    project: pytest.Pytester, args: list[str], said: str
) -> None:
    result = project.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{said}*"])


BLOCKED = """
import socket

def test_leaves_the_machine():
    socket.create_connection(("192.0.2.1", 443), timeout=1)  # TEST-NET-1: never routed

def test_stays_on_loopback():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        socket.create_connection(server.getsockname(), timeout=1).close()
"""


def test_replay_blocks_connections_off_the_machine_for_the_whole_test(
    swarm_pytester: pytest.Pytester,
) -> None:
    swarm_pytester.makepyfile(test_net=BLOCKED)
    result = swarm_pytester.runpytest("--swarm-mode=replay")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*test_leaves_the_machine tried to connect to 192.0.2.1:443 while the network is "
            "blocked*--swarm-block-network=no*"
        ]
    )
    result.stdout.fnmatch_lines(["swarm: mode=replay*network blocked*"])
    # Off in stub mode (unless asked for): the guard is not there.
    stub = swarm_pytester.runpytest("-k", "loopback", "--swarm-block-network=yes")
    stub.assert_outcomes(passed=1)


def test_new_episodes_replaces_the_recordings_of_changed_calls_and_the_replay_passes(
    project: pytest.Pytester, anthropic_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", anthropic_server.url)
    project.runpytest("--swarm-mode=record").assert_outcomes(passed=2)
    first = {p: p.read_bytes() for p in _cassettes(project, "test_first")}
    second = {p: p.read_bytes() for p in _cassettes(project, "test_second")}
    # The user changes a param of one test, and records what changed: what a failing
    # test recorded is dropped, the old recordings stay.
    changed = TESTS.replace('"stepwise-demo")', '"stepwise-demo", ask="x")')
    project.makepyfile(test_suite=changed.replace('"succeeded"\n', '"failed"\n', 1))
    project.runpytest("--swarm-record-mode=new_episodes").assert_outcomes(passed=1, failed=1)
    assert {p: p.read_bytes() for p in _cassettes(project, "test_first")} == first
    project.makepyfile(test_suite=changed)
    calls = len(anthropic_server.requests)
    project.runpytest("--swarm-record-mode=new_episodes").assert_outcomes(passed=2)
    now = {p: p.read_bytes() for p in _cassettes(project, "test_first")}
    assert set(now) == set(first)
    replaced = [p for p in first if now[p] != first[p]]
    assert replaced and len(anthropic_server.requests) - calls == len(replaced)
    assert {p: p.read_bytes() for p in _cassettes(project, "test_second")} == second  # kept
    monkeypatch.delenv("ANTHROPIC_BASE_URL")
    replay = project.runpytest("--swarm-mode=replay")
    replay.assert_outcomes(passed=2)
    assert replay.ret == 0


@pytest.mark.parametrize(
    ("mode", "how", "why"),
    [
        ("stub", ["--swarm-block-network=yes"], "the stub calls no model*"),
        ("record", ["--swarm-block-network=yes"], "record mode calls the model's server*"),
        ("stub", [], "the stub calls no model*"),  # SWARM_BLOCK_NETWORK=yes, set below
    ],
)
def test_a_blocked_connection_outside_replay_says_why_for_its_mode(
    swarm_pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    mode: str,
    how: list[str],
    why: str,
) -> None:
    swarm_pytester.makepyfile(test_net=BLOCKED)
    if not how:
        monkeypatch.setenv("SWARM_BLOCK_NETWORK", "yes")
    if mode == "record":
        monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    result = swarm_pytester.runpytest(f"--swarm-mode={mode}", "-k", "leaves", *how)
    result.assert_outcomes(failed=1)
    given = "--swarm-block-network=yes" if how else "SWARM_BLOCK_NETWORK=yes"
    result.stdout.fnmatch_lines(
        [
            f"*test_leaves_the_machine tried to connect to 192.0.2.1:443 while the network is "
            f"blocked ({given}; {why}); pass --swarm-block-network=no*"
        ]
    )
    assert "replay serves every call" not in result.stdout.str()

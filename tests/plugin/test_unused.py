"""Goldens and cassette dirs no test used fail a whole-suite run, as syrupy's unused
snapshots do; --swarm-warn-unused only warns; --snapshot-update and
--swarm-prune-cassettes remove them."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

TESTS = """
def test_kept(flow_runner, swarm_golden):
    swarm_golden(flow_runner("stepwise-demo"), "kept")

def test_gone(flow_runner):
    flow_runner("stepwise-demo")
"""


def test_an_orphan_golden_fails_the_suite_until_removed(swarm_pytester: pytest.Pytester) -> None:
    swarm_pytester.makepyfile(test_suite=TESTS)
    assert swarm_pytester.runpytest("--snapshot-update").ret == 0
    golden = swarm_pytester.path / "golden"
    shutil.copytree(golden / "kept", golden / "orphan")
    plain = swarm_pytester.runpytest()
    plain.assert_outcomes(passed=2)
    assert plain.ret == pytest.ExitCode.TESTS_FAILED
    plain.stdout.fnmatch_lines(["unused: 1 golden(s) no test compared: orphan *"])
    assert swarm_pytester.runpytest("--swarm-warn-unused").ret == 0
    narrowed = swarm_pytester.runpytest("-k", "kept")  # not the whole suite: not judged
    assert narrowed.ret == 0
    assert swarm_pytester.runpytest("--snapshot-update").ret == 0
    assert not (golden / "orphan").exists() and (golden / "kept").is_dir()
    assert swarm_pytester.runpytest().ret == 0


def test_a_deleted_tests_cassettes_fail_the_replay_until_pruned(
    swarm_pytester: pytest.Pytester, anthropic_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    swarm_pytester.makepyfile(test_suite=TESTS)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", anthropic_server.url)
    swarm_pytester.runpytest("--swarm-mode=record", "--snapshot-update").assert_outcomes(passed=2)
    monkeypatch.delenv("ANTHROPIC_BASE_URL")
    swarm_pytester.makepyfile(test_suite=TESTS.split("def test_gone")[0])
    replay = swarm_pytester.runpytest("--swarm-mode=replay")
    replay.assert_outcomes(passed=1)
    assert replay.ret == pytest.ExitCode.TESTS_FAILED
    replay.stdout.fnmatch_lines(
        ["unused: 1 cassette dir(s) no test recorded or played: test_suite/test_gone *"]
    )
    pruned = swarm_pytester.runpytest("--swarm-mode=replay", "--swarm-prune-cassettes")
    assert pruned.ret == 0
    pruned.stdout.fnmatch_lines(["cassettes: 1 dir(s) no test used removed (test_suite/test_gone)"])
    cassettes = swarm_pytester.path / "golden" / "cassettes" / "test_suite"
    assert sorted(p.name for p in cassettes.iterdir()) == ["test_kept"]
    assert swarm_pytester.runpytest("--swarm-mode=replay").ret == 0

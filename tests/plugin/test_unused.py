"""Goldens and cassette dirs no test used fail a whole-suite run, as syrupy's unused
snapshots do; --swarm-warn-unused only warns; --snapshot-update and
--swarm-prune-cassettes remove them."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from tests.runtime.helpers import step_yaml, write_flow

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
    plain.stdout.fnmatch_lines(
        [
            "unused: 1 golden(s) no test compared: orphan *",
            "FAILED: every test passed, but what no test used (listed above) fails the session*",
        ]
    )
    # The session's last line says it failed, and why, rather than a plain "2 passed".
    assert plain.stdout.lines[-1].count("1 unused (session failed)") == 1
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
    assert replay.stdout.lines[-1].count("1 unused (session failed)") == 1
    # A failing test may still need recordings it did not get to: nothing is pruned then.
    swarm_pytester.makepyfile(test_broken="def test_broken():\n    assert False\n")
    broken = swarm_pytester.runpytest("--swarm-mode=replay", "--swarm-prune-cassettes")
    broken.assert_outcomes(passed=1, failed=1)
    assert (swarm_pytester.path / "golden" / "cassettes" / "test_suite" / "test_gone").is_dir()
    (swarm_pytester.path / "test_broken.py").unlink()
    pruned = swarm_pytester.runpytest("--swarm-mode=replay", "--swarm-prune-cassettes")
    assert pruned.ret == 0
    pruned.stdout.fnmatch_lines(["cassettes: 1 dir(s) no test used removed (test_suite/test_gone)"])
    cassettes = swarm_pytester.path / "golden" / "cassettes" / "test_suite"
    assert sorted(p.name for p in cassettes.iterdir()) == ["test_kept"]
    assert swarm_pytester.runpytest("--swarm-mode=replay").ret == 0


SMALL_TESTS = """
def test_kept(flow_runner, swarm_golden):
    swarm_golden(flow_runner("claims"), "kept")
"""


@pytest.fixture
def small(swarm_pytester: pytest.Pytester) -> pytest.Pytester:
    """A project of one two-step flow whose one test compares the golden 'kept'."""
    shutil.rmtree(swarm_pytester.path / "flows")
    write_flow(swarm_pytester.path / "flows", "claims", [step_yaml("read"), step_yaml("decide")])
    swarm_pytester.makepyfile(test_suite=SMALL_TESTS)
    assert swarm_pytester.runpytest("--snapshot-update").ret == 0
    assert (swarm_pytester.path / "golden" / "kept").is_dir()
    return swarm_pytester


@pytest.mark.parametrize(
    "args",
    [
        ["--collect-only"],
        ["--collect-only", "--snapshot-update"],
        ["--swarm-contract"],
        ["--swarm-contract", "--snapshot-update"],
    ],
    ids=["collect-only", "collect-only-update", "contract", "contract-update"],
)
def test_a_session_that_runs_none_of_the_users_tests_judges_no_golden_unused(
    small: pytest.Pytester, args: list[str]
) -> None:
    session = small.runpytest(*args)
    assert session.ret == 0, session.stdout.str()
    assert "unused:" not in session.stdout.str()
    assert (small.path / "golden" / "kept" / "events.jsonl").is_file()


DESELECTING_CONFTEST = """
def pytest_collection_modifyitems(config, items):
    kept = [item for item in items if "kept" not in item.name]
    config.hook.pytest_deselected(items=[item for item in items if item not in kept])
    items[:] = kept
"""


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_a_test_a_plugin_deselected_keeps_its_golden_under_snapshot_update(
    small: pytest.Pytester, workers: list[str]
) -> None:
    small.makepyfile(test_other="def test_other():\n    pass\n")
    small.makeconftest(DESELECTING_CONFTEST)
    session = small.runpytest("--snapshot-update", *workers)
    session.assert_outcomes(passed=1)
    assert session.ret == 0
    assert (small.path / "golden" / "kept" / "events.jsonl").is_file()


MODE_TESTS = """
import pytest

@pytest.mark.swarm_modes("record")
def test_recorded_only(flow_runner, swarm_golden):
    swarm_golden(flow_runner("claims"), "recorded")

def test_everywhere(flow_runner, swarm_golden):
    swarm_golden(flow_runner("claims"), "everywhere")
"""


def test_a_test_skipped_for_a_mode_of_the_same_family_keeps_its_golden_and_cassettes(
    small: pytest.Pytester, anthropic_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    small.makepyfile(test_suite=MODE_TESTS)
    golden = small.path / "golden"
    shutil.rmtree(golden / "kept")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", anthropic_server.url)
    small.runpytest("--swarm-mode=record", "--snapshot-update").assert_outcomes(passed=2)
    monkeypatch.delenv("ANTHROPIC_BASE_URL")
    replay = small.runpytest("--swarm-mode=replay", "--snapshot-update", "--swarm-prune-cassettes")
    replay.assert_outcomes(passed=1, skipped=1)
    assert replay.ret == 0
    # Record mode writes and compares the replay family's goldens: the skipped test's stay.
    assert (golden / "recorded.replay" / "events.jsonl").is_file()
    assert (golden / "cassettes" / "test_suite" / "test_recorded_only").is_dir()
    # No test skipped in stub mode could use a stub golden: there an orphan is judged.
    assert small.runpytest("--snapshot-update").ret == 0
    shutil.copytree(golden / "everywhere", golden / "orphan")
    stub = small.runpytest()
    stub.assert_outcomes(passed=1, skipped=1)
    stub.stdout.fnmatch_lines(["unused: 1 golden(s) no test compared: orphan *"])


def test_a_golden_whose_test_failed_before_comparing_it_is_not_called_unused(
    swarm_pytester: pytest.Pytester,
) -> None:
    swarm_pytester.makepyfile(test_suite=TESTS)
    assert swarm_pytester.runpytest("--snapshot-update").ret == 0
    swarm_pytester.makepyfile(
        test_suite=TESTS.replace("    swarm_golden(", "    assert False\n    swarm_golden(")
    )
    failed = swarm_pytester.runpytest("--snapshot-update")
    failed.assert_outcomes(passed=1, failed=1)
    assert not [line for line in failed.stdout.lines if line.startswith("unused:")]
    assert (swarm_pytester.path / "golden" / "kept").is_dir()


def test_the_packaged_contract_suites_recordings_are_not_the_users_to_judge_or_prune(
    swarm_pytester: pytest.Pytester, anthropic_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Recorded beside the user's own tests (as docs/pytest.md shows), the contract suite's
    cassettes are neither unused in the user's own replay nor removed by its prune; and
    the contract suite still replays after it."""
    swarm_pytester.makepyfile(test_suite=TESTS.split("def test_gone")[0])
    monkeypatch.setenv("ANTHROPIC_BASE_URL", anthropic_server.url)
    swarm_pytester.runpytest("--swarm-mode=record", "--snapshot-update").assert_outcomes(passed=1)
    contract = swarm_pytester.runpytest("--swarm-contract", "--swarm-mode=record")
    assert contract.ret == 0
    monkeypatch.delenv("ANTHROPIC_BASE_URL")
    recorded = swarm_pytester.path / "golden" / "cassettes" / "test_contract"
    assert recorded.is_dir()
    own = swarm_pytester.runpytest("--swarm-mode=replay")
    own.assert_outcomes(passed=1)
    assert own.ret == 0, own.stdout.str()
    pruned = swarm_pytester.runpytest("--swarm-mode=replay", "--swarm-prune-cassettes")
    assert pruned.ret == 0 and recorded.is_dir()
    assert swarm_pytester.runpytest("--swarm-contract", "--swarm-mode=replay").ret == 0

"""--swarm-mode=record and replay: one cassette per step call, strict replay, no secrets."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

CANARY = "sk-ant-canary-7f3e9b2c-do-not-leak"

TESTS = """
def test_demo(flow_runner, swarm_contract, swarm_golden):
    record = flow_runner("stepwise-demo")
    assert record.status == "succeeded", record.summary.get("error")
    swarm_contract.assert_run(record)
    swarm_golden(record, "demo-sdk")
"""


@pytest.fixture
def recorded(
    swarm_pytester: pytest.Pytester, anthropic_server: Any, monkeypatch: pytest.MonkeyPatch
) -> pytest.Pytester:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", anthropic_server.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", CANARY)
    swarm_pytester.makepyfile(TESTS)
    result = swarm_pytester.runpytest_subprocess(
        "--swarm-mode=record", "--swarm-runs-dir=kept-runs", "--snapshot-update"
    )
    result.assert_outcomes(passed=1)
    monkeypatch.delenv("ANTHROPIC_BASE_URL")
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    return swarm_pytester


def _cassettes(root: Path) -> list[Path]:
    return sorted((root / "golden" / "cassettes").rglob("*.yaml"))


def _test_dir(pytester: pytest.Pytester) -> str:
    """The one test's cassette dir: ``<test module>/test_demo`` (the module is pytester's)."""
    return f"{pytester.path.name.rsplit('0', 1)[0]}/test_demo"


def test_record_writes_one_cassette_per_step_call_and_replay_plays_them(
    recorded: pytest.Pytester,
) -> None:
    names = [
        p.relative_to(recorded.path / "golden" / "cassettes").as_posix()
        for p in _cassettes(recorded.path)
    ]
    test_dir = _test_dir(recorded)
    assert f"{test_dir}/stepwise-demo/read_request-demo-intake-0.yaml" in names
    # Like the stub, the local model fails a first draft: a critic's step runs twice.
    assert f"{test_dir}/stepwise-demo/review_function-demo-reviewer-1.yaml" in names
    # Replaying gives the very goldens the recording wrote (compared, not updated).
    replay = recorded.runpytest_subprocess("--swarm-mode=replay", "--swarm-runs-dir=replay-runs")
    replay.assert_outcomes(passed=1)
    replay.stdout.fnmatch_lines(["*goldens: 1 compared, 0 updated, 0 drifted*"])
    receipt = json.loads(
        next(
            (recorded.path / "replay-runs").glob("run-*/stepwise-demo/receipts/read_request-*.json")
        ).read_text()
    )
    assert receipt["mode"] == "sdk"
    assert receipt["cassette"] == f"{test_dir}/stepwise-demo/read_request-demo-intake-0.yaml"


def test_the_canary_key_lands_in_no_file(recorded: pytest.Pytester) -> None:
    files = [p for p in recorded.path.rglob("*") if p.is_file() and ".pyc" not in p.name]
    assert any("cassettes" in str(p) for p in files)
    for path in files:
        assert CANARY not in path.read_text(encoding="utf-8", errors="replace"), path
    text = "".join(p.read_text() for p in _cassettes(recorded.path))
    assert not re.search(r"(?im)^\s*(authorization|x-api-key):", text)


def test_a_changed_teaching_note_fails_replay_naming_the_call(recorded: pytest.Pytester) -> None:
    flow = recorded.path / "flows" / "stepwise-demo.yaml"
    text = flow.read_text()
    note = re.search(r'emphasizes:\n\s+- "([^"]+)"', text)
    assert note is not None
    flow.write_text(text.replace(note.group(1), note.group(1) + " (edited)", 1))
    result = recorded.runpytest_subprocess("--swarm-mode=replay")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "replay of stepwise-demo/read_request iteration 0: no recorded call matches" in out
    assert f"+system| - {note.group(1)} (edited)" in out
    assert "Re-record with: pytest --swarm-mode=record" in out


def test_recorded_calls_never_played_fail_the_test(recorded: pytest.Pytester) -> None:
    test_dir = _test_dir(recorded)
    folder = recorded.path / "golden" / "cassettes" / test_dir / "stepwise-demo"
    extra = folder / "read_request-demo-intake-7.yaml"
    extra.write_text((folder / "read_request-demo-intake-0.yaml").read_text())
    result = recorded.runpytest_subprocess("--swarm-mode=replay")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*recorded calls were never played*",
            f"*{test_dir}/stepwise-demo/read_request-demo-intake-7.yaml: no call of this run "
            "asked for it*",
        ]
    )


SHOWN = """
def test_demo(flow_runner, swarm_cassette):
    print("before:", repr(swarm_cassette))
    try:
        flow_runner("stepwise-demo")
    finally:
        print("after:", repr(swarm_cassette))
"""


def test_a_replay_with_nothing_recorded_says_so_and_how_to_record(
    swarm_pytester: pytest.Pytester,
) -> None:
    swarm_pytester.makepyfile(SHOWN)
    result = swarm_pytester.runpytest_subprocess("--swarm-mode=replay")
    result.assert_outcomes(failed=1)
    test_dir = _test_dir(swarm_pytester)
    result.stdout.fnmatch_lines(
        [
            f"swarm: {test_dir.split('/')[0]}.py::test_demo has no recording to replay",
            "",
            "replay of stepwise-demo/read_request iteration 0: there is no recording of this "
            f"call (no cassette {test_dir}/stepwise-demo/read_request-demo-intake-0.yaml; "
            f"nothing is recorded in */golden/cassettes/{test_dir}).",
            f"Record it with: pytest --swarm-mode=record {test_dir.split('/')[0]}.py::test_demo",
            f"before: SwarmCassette(mode='replay', dir='*/golden/cassettes/{test_dir}', no run yet)",
            f"after: SwarmCassette(mode='replay', dir='*/golden/cassettes/{test_dir}', 1 run(s), "
            "0 call(s) played, 1 with no recording)",
            # Nothing was sent: the miss cost nothing (not an unknown amount).
            "mode replay: 1 run(s), 1 step(s), 0 token(s), cost $0.0000",
        ]
    )
    assert "diverged" not in result.stdout.str()


def test_swarm_cassette_shows_its_mode_directory_and_calls(
    swarm_pytester: pytest.Pytester, anthropic_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    swarm_pytester.makepyfile(SHOWN)
    stub = swarm_pytester.runpytest_subprocess("-s")
    stub.assert_outcomes(passed=1)
    stub.stdout.fnmatch_lines(["after: SwarmCassette(mode='stub', dir='*', unused in stub mode)"])
    monkeypatch.setenv("ANTHROPIC_BASE_URL", anthropic_server.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", CANARY)
    recorded = swarm_pytester.runpytest_subprocess("--swarm-mode=record", "-s")
    recorded.assert_outcomes(passed=1)
    calls = len(_cassettes(swarm_pytester.path))
    assert calls > 10  # ten steps, and a loop
    recorded.stdout.fnmatch_lines(
        [f"after: SwarmCassette(mode='record', dir='*', 1 run(s), {calls} call(s) recorded)"]
    )
    monkeypatch.delenv("ANTHROPIC_BASE_URL")
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    replayed = swarm_pytester.runpytest_subprocess("--swarm-mode=replay", "-s")
    replayed.assert_outcomes(passed=1)
    replayed.stdout.fnmatch_lines(
        [f"after: SwarmCassette(mode='replay', dir='*', 1 run(s), {calls} call(s) played)"]
    )


def test_a_recorded_429_replays_without_waiting_out_its_retry_after(
    swarm_pytester: pytest.Pytester, anthropic_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.fakes.anthropic_server import Reply, error_body
    from tests.runtime.helpers import step_yaml, write_flow

    write_flow(swarm_pytester.path / "flows", "one", [step_yaml("ask")])
    swarm_pytester.makepyfile(
        """
        def test_one(flow_runner):
            assert flow_runner("one").status == "succeeded"
        """
    )
    slept: list[float] = []  # the orchestrator's sleep, as the runs of this process see it
    monkeypatch.setattr("swarm_runtime.timeutil.interruptible_sleep", slept.append)
    anthropic_server.script(
        Reply(status=429, headers={"retry-after": "1"}, body=error_body("rate_limit_error", "slow"))
    )
    monkeypatch.setenv("ANTHROPIC_BASE_URL", anthropic_server.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", CANARY)
    swarm_pytester.runpytest("--swarm-mode=record").assert_outcomes(passed=1)
    assert slept == [1.0]  # recording waits as the server asked

    monkeypatch.delenv("ANTHROPIC_BASE_URL")
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    slept.clear()
    replay = swarm_pytester.runpytest("--swarm-mode=replay", "--swarm-runs-dir=replayed")
    replay.assert_outcomes(passed=1)
    assert slept == []  # the replay does not wait: the recording holds what came next
    (run_dir,) = (swarm_pytester.path / "replayed").iterdir()
    receipt = json.loads((run_dir / "one" / "receipts" / "ask-worker.json").read_text())
    assert (receipt["attempt"], receipt["status"]) == (2, "succeeded")
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    retry = next(e for e in events if e["kind"] == "log")
    assert retry["payload"]["retry_in_ms"] == 1000  # still logged as recorded


def test_swarm_cassette_marker_and_fixture_name_the_directory(
    recorded: pytest.Pytester, anthropic_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorded.makepyfile(
        test_named="""
        import pytest

        @pytest.mark.swarm_cassette("shared/demo")
        def test_marked(flow_runner):
            assert flow_runner("stepwise-demo").status == "succeeded"

        def test_by_fixture(flow_runner, swarm_cassette):
            swarm_cassette.use("shared/demo")
            assert flow_runner("stepwise-demo").status == "succeeded"
        """
    )
    monkeypatch.setenv("ANTHROPIC_BASE_URL", anthropic_server.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", CANARY)
    recorded.runpytest_subprocess(
        "--swarm-mode=record", "test_named.py::test_marked"
    ).assert_outcomes(passed=1)
    monkeypatch.delenv("ANTHROPIC_BASE_URL")
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    shared = recorded.path / "golden" / "cassettes" / "shared" / "demo" / "stepwise-demo"
    assert (shared / "read_request-demo-intake-0.yaml").is_file()
    # The other test replays the marked test's recordings through the fixture.
    replay = recorded.runpytest_subprocess("--swarm-mode=replay", "test_named.py")
    replay.assert_outcomes(passed=2)

    recorded.makepyfile(
        test_escape="""
        import pytest

        @pytest.mark.swarm_cassette("../outside")
        def test_escape(flow_runner):
            flow_runner("stepwise-demo")
        """
    )
    bad = recorded.runpytest_subprocess("--swarm-mode=replay", "test_escape.py")
    bad.assert_outcomes(errors=1)
    bad.stdout.fnmatch_lines(["*cassette name '../outside' must be a relative path of names*"])

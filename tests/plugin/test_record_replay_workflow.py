"""Record once, replay in CI: a user's own suite, with two tests of one flow and a golden.

Driven as a user would: a project with its own flows dir and tests written from the
docs, recorded against a local Anthropic-compatible server, then replayed with the
server stopped, in one process and under ``-n 2``.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.fakes.anthropic_server import AnthropicServer
from tests.runtime.helpers import step_yaml, write_flow

KEY = "sk-ant-workflow-test-not-a-key"

USER_TESTS = """
import pytest


@pytest.mark.parametrize("ticket", ["I was charged twice.", "My parcel never came."])
def test_triage_handles_the_ticket(flow_runner, swarm_contract, ticket):
    record = flow_runner("triage", ticket=ticket)
    assert record.status == "succeeded", record.summary.get("error")
    swarm_contract.assert_run(record)


def test_triage_matches_its_golden(flow_runner, swarm_golden):
    record = flow_runner("triage", ticket="Please refund me.")
    assert record.status == "succeeded", record.summary.get("error")
    swarm_golden(record, "triage")
"""

LOOP = """\
routing:
  kind: microloop
  loop_target: draft_reply
  loop_condition_field: status
  loop_success_values: [APPROVED]
  max_iterations: 3
"""


@pytest.fixture
def project(swarm_pytester: pytest.Pytester) -> pytest.Pytester:
    write_flow(
        swarm_pytester.path / "flows",
        "triage",
        [step_yaml("read_ticket"), step_yaml("draft_reply"), step_yaml("review_reply", LOOP)],
    )
    (swarm_pytester.path / "flows" / "flows.yaml").write_text("order: [triage]\n")
    swarm_pytester.makepyfile(test_triage=USER_TESTS)
    return swarm_pytester


def _record(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, *args: str) -> Any:
    server = AnthropicServer().start()
    try:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        return project.runpytest_subprocess("--swarm-mode=record", *args)
    finally:
        server.stop()  # the replays below run with no server to reach
        monkeypatch.delenv("ANTHROPIC_BASE_URL")
        monkeypatch.delenv("ANTHROPIC_API_KEY")


def _cassette_dirs(project: pytest.Pytester) -> list[str]:
    root = project.path / "golden" / "cassettes" / "test_triage"
    return sorted(p.name for p in root.iterdir())


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_two_tests_of_one_flow_record_and_replay_each_their_own(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, workers: list[str]
) -> None:
    recorded = _record(project, monkeypatch, "--snapshot-update", *workers)
    recorded.assert_outcomes(passed=3)
    assert _cassette_dirs(project) == [
        "test_triage_handles_the_ticket-I-was-charged-twice",
        "test_triage_handles_the_ticket-My-parcel-never-came",
        "test_triage_matches_its_golden",
    ]
    assert (project.path / "golden" / "triage.replay" / "spec.json").is_file()
    calls = len(list((project.path / "golden" / "cassettes").rglob("*.yaml")))
    recorded.stdout.fnmatch_lines(
        [
            "*goldens: 0 compared, 1 updated, 0 drifted*",
            f"*cassettes: 0 played, {calls} recorded, 0 unplayed*",
        ]
    )
    replayed = project.runpytest_subprocess("--swarm-mode=replay", *workers)
    replayed.assert_outcomes(passed=3)
    assert "never played" not in replayed.stdout.str()
    replayed.stdout.fnmatch_lines(
        [
            "*goldens: 1 compared, 0 updated, 0 drifted*",
            f"*cassettes: {calls} played, 0 recorded, 0 unplayed*",
        ]
    )
    # Recording again replaces each test's cassettes whole: nothing stale is left to replay.
    _record(project, monkeypatch, *workers).assert_outcomes(passed=3)
    project.runpytest_subprocess("--swarm-mode=replay", *workers).assert_outcomes(passed=3)


def test_an_edited_note_fails_each_replay_that_sends_it_and_its_command_re_records(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _record(project, monkeypatch, "--snapshot-update").assert_outcomes(passed=3)
    flow = project.path / "flows" / "triage.yaml"
    flow.write_text(flow.read_text().replace("emphasis of draft_reply", "be brief and kind"))

    replayed = project.runpytest_subprocess("--swarm-mode=replay")
    replayed.assert_outcomes(failed=3)
    # The failures section, without the summary (which repeats whole lines when CI is set).
    out = replayed.stdout.str().split("short test summary info")[0]
    assert out.count("replay of triage/draft_reply iteration 0: no recorded call matches") == 3
    assert "+system| - be brief and kind" in out
    # The summary counts a call unlike its recording as diverged, never as played.
    replayed.stdout.fnmatch_lines(["*cassettes: * played, 0 recorded, 0 unplayed, 3 diverged*"])
    commands = re.findall(r"Re-record with: (pytest --swarm-mode=record '[^']+')", out)
    param_test = next(c for c in commands if "charged" in c)
    nodeid = param_test.split("'")[1]

    # The command the failure printed, run as printed, against the server again.
    _record(project, monkeypatch, nodeid).assert_outcomes(passed=1)
    again = project.runpytest_subprocess("--swarm-mode=replay", nodeid)
    again.assert_outcomes(passed=1)
    assert "never played" not in again.stdout.str()

"""Repetitions as a user meets them: a project's tests repeated against a model that varies.

The model is the local Anthropic server, answering each ticket APPROVED and REJECTED by
turns, so a test asserting APPROVED holds in half of its repetitions.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.fakes.anthropic_server import AnthropicServer, Reply, error_body
from tests.runtime.helpers import step_yaml, write_flow

KEY = "sk-ant-repeat-test-not-a-key"

USER_TESTS = """
import pytest


def _status(record):
    with open("calls.txt", "a") as calls:
        calls.write(record.spec["params"]["ticket"] + "\\n")
    return record.receipts[("triage", "classify")]["handoff"]["status"]


@pytest.mark.swarm_repeat(4, min_pass_rate=0.5)
def test_half_of_the_answers_approve(flow_runner):
    assert _status(flow_runner("triage", ticket="refund")) == "APPROVED"


@pytest.mark.swarm_repeat(4, min_pass_rate=0.75)
def test_most_answers_approve(flow_runner):
    assert _status(flow_runner("triage", ticket="parcel")) == "APPROVED"
"""


BRANCH = """
routing:
  kind: branch
  branch_field: status
  branches: {APPROVED: refund, REJECTED: reply}
  default: reply
"""
THEN_REPLY = "routing: {kind: linear, next: reply}"


class TurnTakingServer(AnthropicServer):
    """Answers each ticket APPROVED, then REJECTED, then APPROVED, … (one count per ticket)."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: dict[str, int] = {}

    def default_message(self, body: Any, text: str | None) -> dict[str, Any]:
        if ": classify" not in str(body):  # the other steps answer as the stub would
            return super().default_message(body, text)
        ticket = re.search(r'"ticket": "(\w+)"', str(body))
        name = ticket.group(1) if ticket else "?"
        turn = self.seen[name] = self.seen.get(name, 0) + 1
        status = "APPROVED" if turn % 2 else "REJECTED"
        answer = f"Read it.\n\n```handoff\nstatus: {status}\n```"
        return super().default_message(body, answer if text is None else text)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[TurnTakingServer]:
    server = TurnTakingServer()
    server.start()
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def project(swarm_pytester: pytest.Pytester) -> pytest.Pytester:
    flows = swarm_pytester.path / "flows"
    for path in flows.iterdir():
        path.unlink() if path.is_file() else None
    write_flow(
        flows,
        "triage",
        [step_yaml("classify", BRANCH), step_yaml("refund", THEN_REPLY), step_yaml("reply")],
    )
    (flows / "flows.yaml").write_text("order: [triage]\n")
    swarm_pytester.makepyfile(test_triage=USER_TESTS)
    return swarm_pytester


def _calls(project: pytest.Pytester) -> dict[str, int]:
    lines = (project.path / "calls.txt").read_text().split()
    return {ticket: lines.count(ticket) for ticket in sorted(set(lines))}


def _failures(result: pytest.RunResult) -> str:
    return result.stdout.str().split("short test summary info")[0]


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_sdk_mode_repeats_and_judges_by_pass_rate(
    project: pytest.Pytester, server: TurnTakingServer, workers: list[str]
) -> None:
    result = project.runpytest_subprocess("--swarm-mode=sdk", *workers)
    result.assert_outcomes(passed=1, failed=1)
    assert _calls(project) == {"parcel": 4, "refund": 4}
    out = _failures(result)
    assert (
        "swarm_repeat: test_triage.py::test_most_answers_approve passed 2 of 4 repetitions "
        "(50%) in sdk mode, below min_pass_rate 0.75; the failures:" in out
    )
    assert "  2x AssertionError: assert 'REJECTED' == 'APPROVED'" in out
    assert "Traceback" not in out
    result.stdout.fnmatch_lines(
        [
            "*- swarm repetitions -*",
            "test_triage.py::test_half_of_the_answers_approve: 2/4 repetitions passed "
            "(50%, min_pass_rate 0.5): passed",
            "  triage/classify: 4/4 executions succeeded (100%) in 4 of 4 repetitions",
            "  triage/refund: 2/2 executions succeeded (100%) in 2 of 4 repetitions",
            "  triage/reply: 4/4 executions succeeded (100%) in 4 of 4 repetitions",
            "test_triage.py::test_most_answers_approve: 2/4 repetitions passed "
            "(50%, min_pass_rate 0.75): FAILED",
        ]
    )
    result.stdout.fnmatch_lines(["*mode sdk: 8 run(s), 20 step(s)*"])


def test_stub_mode_runs_a_repeated_test_once_and_says_why(project: pytest.Pytester) -> None:
    result = project.runpytest("--swarm-mode=stub")
    result.assert_outcomes(passed=2)  # the stub takes the branch's first value: APPROVED
    assert _calls(project) == {"parcel": 1, "refund": 1}
    result.stdout.fnmatch_lines(
        [
            "*- swarm repetitions -*",
            "test_triage.py::test_half_of_the_answers_approve: ran once, not 4 times: stub "
            "mode is deterministic (repetitions run in sdk and cli modes)",
        ]
    )


OPTION_TESTS = """
import pytest


def test_plain():
    with open("calls.txt", "a") as calls:
        calls.write("plain\\n")


def test_triage(flow_runner):
    record = flow_runner("triage", ticket="refund")
    with open("calls.txt", "a") as calls:
        calls.write("triage\\n")
    assert record.status == "succeeded"


@pytest.mark.swarm_repeat(2)
def test_marked(flow_runner):
    with open("calls.txt", "a") as calls:
        calls.write("marked\\n")
"""


def test_the_option_repeats_every_test_that_runs_flows_and_a_marker_wins(
    project: pytest.Pytester, server: TurnTakingServer
) -> None:
    project.makepyfile(test_triage=OPTION_TESTS)
    server.script(Reply(status=400, body=error_body("invalid_request_error", "Bad request")))
    result = project.runpytest("--swarm-mode=sdk", "--swarm-repeat", "3")
    result.assert_outcomes(passed=2, failed=1)
    assert _calls(project) == {"marked": 2, "plain": 1, "triage": 3}
    result.stdout.fnmatch_lines(
        [
            "swarm: mode=sdk (--swarm-mode), repeat 3, *",
            "*swarm_repeat: test_triage.py::test_triage passed 2 of 3 repetitions (67%) in sdk "
            "mode, below min_pass_rate 1; the failures:",
            "  1x AssertionError: assert 'failed' == 'succeeded'",
            "*- swarm repetitions -*",
            "test_triage.py::test_marked: 2/2 repetitions passed (100%, min_pass_rate 1): passed",
            "test_triage.py::test_triage: 2/3 repetitions passed (67%, min_pass_rate 1): FAILED",
            "  triage/classify: 2/3 executions succeeded (67%) in 3 of 3 repetitions",
        ]
    )


def test_record_and_replay_run_a_repeated_test_once(
    project: pytest.Pytester, server: TurnTakingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorded = project.runpytest_subprocess("--swarm-mode=record")
    recorded.assert_outcomes(passed=2)  # each ticket's first answer: APPROVED
    recorded.stdout.fnmatch_lines(
        [
            "test_triage.py::test_half_of_the_answers_approve: ran once, not 4 times: record "
            "mode writes each test's cassettes once (repetitions run in sdk and cli modes)",
        ]
    )
    server.stop()
    monkeypatch.delenv("ANTHROPIC_BASE_URL")
    replayed = project.runpytest_subprocess("--swarm-mode=replay", "-n", "2")
    replayed.assert_outcomes(passed=2)
    assert _calls(project) == {"parcel": 2, "refund": 2}  # one call in each mode
    replayed.stdout.fnmatch_lines(
        ["test_triage.py::test_most_answers_approve: ran once, not 4 times: replay mode is*"]
    )


JUDGED = """
judges:
  - {name: accurate, rubric: The status fits the ticket., threshold: 0.5, min_pass_rate: 0.5}
  - {name: strict, rubric: The status is justified., threshold: 0.5}
"""

JUDGED_TESTS = """
import pytest


@pytest.mark.swarm_repeat(4, min_pass_rate=0.5)
def test_judged(flow_runner, swarm_expect):
    record = flow_runner("triage", ticket="refund")
    swarm_expect(record).step("classify").handoff(status="APPROVED")
"""


class JudgedServer(TurnTakingServer):
    """Also a judge: ``accurate`` scores 0.9, then 0.1, by turns; ``strict`` always 0.9."""

    def default_message(self, body: Any, text: str | None) -> dict[str, Any]:
        if "You are a judge" not in str(body.get("system")):
            return super().default_message(body, text)
        if "The status fits the ticket." in str(body):
            turn = self.seen["accurate"] = self.seen.get("accurate", 0) + 1
            score = 0.9 if turn % 2 else 0.1
        else:
            score = 0.9
        answer = f"Graded.\n\n```handoff\nscore: {score}\nreason: turn\n```"
        return AnthropicServer.default_message(self, body, answer)


def _judged_session(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, judges: str
) -> pytest.RunResult:
    """The judged triage flow and its repeated test, run in sdk mode against JudgedServer."""
    flows = pytester.path / "flows"
    for path in flows.iterdir():
        path.unlink() if path.is_file() else None
    classify = step_yaml("classify", BRANCH + judges)
    write_flow(flows, "triage", [classify, step_yaml("refund", THEN_REPLY), step_yaml("reply")])
    (flows / "flows.yaml").write_text("order: [triage]\n")
    pytester.makepyfile(test_judged=JUDGED_TESTS)
    server = JudgedServer()
    server.start()
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    try:
        return pytester.runpytest_subprocess("--swarm-mode=sdk", "-p", "no:cacheprovider")
    finally:
        server.stop()


def test_each_judge_and_expectation_gets_its_pass_rate_over_the_repetitions(
    swarm_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = _judged_session(swarm_pytester, monkeypatch, JUDGED)
    # accurate: 2 of 4 reach its min_pass_rate 0.5; strict: 4 of 4; the test: 2 of 4 at 0.5
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "*- swarm repetitions -*",
            "test_judged.py::test_judged: 2/4 repetitions passed (50%, min_pass_rate 0.5): passed",
            "  expect triage/classify handoff(status='APPROVED'): 2/4 passed (50%)",
            "  judge triage/classify accurate: 2/4 passed (50%)",
            "  judge triage/classify strict: 4/4 passed (100%)",
        ]
    )


def test_a_judge_below_its_min_pass_rate_fails_the_test(
    swarm_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    judges = JUDGED.replace("min_pass_rate: 0.5", "min_pass_rate: 0.75")
    result = _judged_session(swarm_pytester, monkeypatch, judges)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*judge 'accurate' on triage/classify (execution 1) scored 0.1, below its "
            "threshold 0.5: turn*",
            "*judge 'accurate' on triage/classify passed 2 of 4, below its min_pass_rate 0.75*",
        ]
    )
    assert "judge 'strict'" not in result.stdout.str()

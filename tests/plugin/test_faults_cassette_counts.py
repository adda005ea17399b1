"""A step whose every attempt a fault plan answers makes no call: the summary counts none.

Found as a user: a marker that cut every attempt of a step's stream made the summary
count a recorded cassette that was never written, and in replay a "missing" one.
"""

from __future__ import annotations

import pytest

from tests.fakes.anthropic_server import record_project
from tests.runtime.helpers import step_yaml, write_flow

KEY = "sk-ant-faults-counts-not-a-key"

USER_TESTS = """
import pytest


@pytest.mark.swarm_faults({"draft_reply": ["stream_cut", "stream_cut", "stream_cut"]})
def test_three_cut_streams_fail_the_run(flow_runner):
    record = flow_runner("triage", ticket="Refund me.")
    assert record.status == "failed"
    assert record.receipts[("triage", "draft_reply")]["attempt"] == 3
"""


@pytest.fixture
def project(swarm_pytester: pytest.Pytester) -> pytest.Pytester:
    write_flow(
        swarm_pytester.path / "flows",
        "triage",
        [step_yaml("read_ticket"), step_yaml("draft_reply")],
    )
    swarm_pytester.makepyfile(test_triage=USER_TESTS)
    return swarm_pytester


def test_a_step_the_faults_answered_whole_counts_no_cassette(project: pytest.Pytester) -> None:
    recorded = record_project(project, KEY)
    recorded.assert_outcomes(passed=1)
    cassettes = list((project.path / "golden" / "cassettes").rglob("*.yaml"))
    assert [path.name for path in cassettes] == ["read_ticket-worker-0.yaml"]
    recorded.stdout.fnmatch_lines(["cassettes: 0 played, 1 recorded, 0 unplayed"])
    replayed = project.runpytest_subprocess("--swarm-mode=replay")
    replayed.assert_outcomes(passed=1)
    replayed.stdout.fnmatch_lines(["cassettes: 1 played, 0 recorded, 0 unplayed"])

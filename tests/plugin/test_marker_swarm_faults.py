"""``@pytest.mark.swarm_faults({...})`` in a user's own project, written from the docs.

Recorded against a local Anthropic-compatible server, then replayed with the server
stopped: the marker's faults are answered by the SDK's own transport in both, so the
recording holds only the clean calls and the replay plays every one of them.
"""

from __future__ import annotations

import pytest

from tests.fakes.anthropic_server import record_project
from tests.runtime.helpers import step_yaml, write_flow

KEY = "sk-ant-faults-marker-not-a-key"

USER_TESTS = """
import pytest


@pytest.mark.swarm_faults(
    {
        "read_ticket": [{"kind": "http_429", "retry_after_ms": 0}, None],
        "draft_reply": ["stream_cut"],
    }
)
def test_triage_survives_a_rate_limit_and_a_cut_stream(flow_runner):
    record = flow_runner("triage", ticket="I was charged twice.")
    assert record.status == "succeeded"
    assert record.receipts[("triage", "read_ticket")]["attempt"] == 2
    assert record.receipts[("triage", "draft_reply")]["attempt"] == 2
    faults = [e.payload.fault for e in record.events if e.kind == "log" and "fault" in e.payload]
    assert faults == ["http_429", "stream_cut"]


@pytest.mark.swarm_modes("stub")
@pytest.mark.swarm_faults({"draft_reply": [{"kind": "http_429", "retry_after_ms": 0}] * 3})
def test_three_429s_fail_the_run(flow_runner):
    record = flow_runner("triage", ticket="Refund me.")
    assert record.status == "failed"
    assert record.receipts[("triage", "draft_reply")]["attempt"] == 3
"""


@pytest.fixture
def project(swarm_pytester: pytest.Pytester) -> pytest.Pytester:
    write_flow(
        swarm_pytester.path / "flows",
        "triage",
        [step_yaml("read_ticket"), step_yaml("draft_reply"), step_yaml("review_reply")],
    )
    (swarm_pytester.path / "flows" / "flows.yaml").write_text("order: [triage]\n")
    swarm_pytester.makepyfile(test_triage=USER_TESTS)
    return swarm_pytester


def test_the_marker_injects_its_faults_in_stub_mode(project: pytest.Pytester) -> None:
    project.runpytest_subprocess("--swarm-mode=stub").assert_outcomes(passed=2)


def test_a_recording_and_its_replay_both_go_through_the_faults(project: pytest.Pytester) -> None:
    recorded = record_project(project, KEY)
    recorded.assert_outcomes(passed=1, skipped=1)
    cassettes = sorted((project.path / "golden" / "cassettes").rglob("*.yaml"))
    assert len(cassettes) == 3  # one clean call per step: no fault was recorded
    assert all(path.read_text().count("request:") == 1 for path in cassettes)
    before = {path: path.read_bytes() for path in cassettes}
    replayed = project.runpytest_subprocess("--swarm-mode=replay", "-n", "2")
    replayed.assert_outcomes(passed=1, skipped=1)
    replayed.stdout.no_fnmatch_line("*unplayed*[1-9]*")
    assert {path: path.read_bytes() for path in cassettes} == before


def test_a_bad_marker_fails_the_test_naming_the_marker_and_what_is_allowed(
    swarm_pytester: pytest.Pytester,
) -> None:
    swarm_pytester.makepyfile(
        test_bad="""
import pytest

@pytest.mark.swarm_faults({"read_request": ["http_418"]})
def test_x(flow_runner):
    flow_runner("stepwise-demo")


@pytest.mark.swarm_faults({"no_such_step": ["http_500"]})
def test_y(flow_runner):
    flow_runner("stepwise-demo")
"""
    )
    result = swarm_pytester.runpytest_subprocess()
    result.assert_outcomes(failed=1, errors=1)  # a bad marker errors at setup, as others do
    result.stdout.fnmatch_lines(
        [
            "*@pytest.mark.swarm_faults: read_request[[]0[]]: unknown fault kind 'http_418'*",
            "*swarm: @pytest.mark.swarm_faults: 'no_such_step' names no step*",
        ]
    )
    result.stdout.no_fnmatch_line("*Traceback*")

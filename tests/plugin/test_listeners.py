"""Listeners in a user's conftest.py: every run of the session's tests, beside the counters."""

from __future__ import annotations

import pytest

CONFTEST = """
import json
from pathlib import Path

HEARD = []


def swarm_event(event, run_dir):
    HEARD.append((run_dir.name, event["seq"], event["kind"]))


def events_of(run_dir):
    lines = (Path(run_dir) / "events.jsonl").read_text().splitlines()
    return [(Path(run_dir).name, e["seq"], e["kind"]) for e in map(json.loads, lines)]
"""


def test_a_conftest_listener_hears_every_run_beside_the_plugins_counters(
    swarm_pytester: pytest.Pytester,
) -> None:
    swarm_pytester.makeconftest(CONFTEST)
    swarm_pytester.makepyfile(
        """
        from pathlib import Path

        from conftest import HEARD, events_of
        from swarm_runtime.service import get_backend


        def test_flow_runner(flow_runner):
            HEARD.clear()
            record = flow_runner("stepwise-demo")
            assert HEARD == events_of(record.path)


        def test_the_run_service(tmp_path):
            HEARD.clear()
            backend = get_backend("claude-step-orchestrator", runs_dir=tmp_path,
                                  flows_dir=Path("flows"))
            run_id = backend.start({"flows": ["signal"]})
            assert backend.wait(run_id, timeout=120)["status"] == "succeeded"
            assert HEARD == events_of(tmp_path / run_id)
        """
    )
    result = swarm_pytester.runpytest()
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*mode stub: 1 run(s), *"])  # the counters heard theirs


def test_a_listener_that_raises_is_said_once_in_the_summary_and_breaks_nothing(
    swarm_pytester: pytest.Pytester,
) -> None:
    swarm_pytester.makeconftest(
        """
        def swarm_event(event):
            if event["kind"] == "step_end":
                raise ValueError("no room on the dashboard")
        """
    )
    swarm_pytester.makepyfile(
        """
        def test_twice(flow_runner):
            for _ in range(2):
                assert flow_runner("stepwise-demo").status == "succeeded"
        """
    )
    result = swarm_pytester.runpytest()
    result.assert_outcomes(passed=1)
    lines = [line for line in result.stdout.lines if "raised" in line]
    assert len(lines) == 1, result.stdout.str()
    assert lines[0].startswith("warning: listener '")
    assert "conftest.py' raised ValueError: no room on the dashboard at event " in lines[0]
    result.stdout.fnmatch_lines(["*mode stub: 2 run(s), *"])

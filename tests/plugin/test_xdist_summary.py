"""The swarm terminal summary, and its totals under pytest-xdist (combined on the controller)."""

from __future__ import annotations

import re

import pytest

TESTS = """
import pytest

@pytest.mark.parametrize("flow", ["signal", "plan", "build", "review", "stepwise-demo"])
def test_flow(flow, flow_runner, swarm_contract):
    record = flow_runner(flow)
    swarm_contract.assert_run(record)

def test_two_runs(flow_runner):
    flow_runner("gate")
    flow_runner("deploy", "wisdom")
"""

LINE = re.compile(r"mode stub: (\d+) run\(s\), (\d+) step\(s\), (\d+) token\(s\), cost \$[0-9.]+")


def _totals(result: pytest.RunResult) -> tuple[int, ...]:
    for line in result.outlines:
        match = LINE.search(line)
        if match:
            return tuple(int(g) for g in match.groups())
    raise AssertionError("no swarm summary line in:\n" + result.stdout.str())


def test_summary_section_counts_runs_steps_tokens(swarm_pytester: pytest.Pytester) -> None:
    swarm_pytester.makepyfile(TESTS)
    result = swarm_pytester.runpytest()
    result.assert_outcomes(passed=6)
    result.stdout.fnmatch_lines(["*- swarm -*"])
    runs, steps, tokens = _totals(result)
    assert runs == 7 and steps > 50 and tokens > steps


def test_xdist_totals_equal_a_single_process_run(swarm_pytester: pytest.Pytester) -> None:
    swarm_pytester.makepyfile(TESTS)
    single = swarm_pytester.runpytest_subprocess("--swarm-mode=stub")
    single.assert_outcomes(passed=6)
    parallel = swarm_pytester.runpytest_subprocess("-n", "2", "--swarm-mode=stub")
    parallel.assert_outcomes(passed=6)
    assert _totals(parallel) == _totals(single)


def test_no_section_when_no_run_was_made(swarm_pytester: pytest.Pytester) -> None:
    swarm_pytester.makepyfile("def test_plain():\n    pass\n")
    result = swarm_pytester.runpytest()
    assert "- swarm -" not in result.stdout.str()


def test_the_summary_counts_a_lone_drifted_golden_and_no_cassette_as_played(
    swarm_pytester: pytest.Pytester,
) -> None:
    swarm_pytester.makepyfile(
        """
        def test_golden(flow_runner, swarm_golden):
            swarm_golden(flow_runner("signal"), "signal")
        """
    )
    swarm_pytester.runpytest("--snapshot-update").assert_outcomes(passed=1)
    flow = swarm_pytester.path / "flows" / "signal.yaml"
    flow.write_text(flow.read_text().replace("role: ", "role: Now ", 1))
    drifted = swarm_pytester.runpytest()
    drifted.assert_outcomes(failed=1)
    drifted.stdout.fnmatch_lines(["goldens: 0 compared, 0 updated, 1 drifted*"])
    replayed = swarm_pytester.runpytest("--swarm-mode=replay")  # there are no cassettes
    replayed.assert_outcomes(failed=1)
    replayed.stdout.fnmatch_lines(["cassettes: 0 played, 0 recorded, 0 unplayed, 1 missing*"])

"""Budgets in a user's suite (docs/budgets.md): a flow file's ``budget:`` and ``swarm_budget``.

Driven as a user would: a project with its own flows dir and tests written from the
docs, in stub mode (in one process and under ``-n 2``), then recorded against a local
Anthropic-compatible server and replayed with the server stopped.
"""

from __future__ import annotations

import re

import pytest

from tests.fakes.anthropic_server import record_project
from tests.runtime.helpers import step_yaml, write_flow

KEY = "sk-ant-budget-test-not-a-key"

USER_TESTS = """
import pytest


def test_a_tight_flow_fails_on_its_budget(flow_runner):
    record = flow_runner("tight", ticket="I was charged twice.")
    assert record.status == "failed"
    error = record.summary["error"]
    assert "budget_exceeded: flow budget of 'tight': tokens " in error
    assert error.endswith("> limit 1")


@pytest.mark.swarm_budget(tokens=1)
def test_the_marker_is_the_run_budget(flow_runner):
    record = flow_runner("roomy", ticket="My parcel never came.")
    assert record.status == "failed"
    assert "budget_exceeded: run budget: tokens " in record.summary["error"]


def test_a_roomy_flow_stays_within_its_budget(flow_runner):
    record = flow_runner("roomy", ticket="Please refund me.")
    assert record.status == "succeeded", record.summary["error"]
"""

SHARES = re.compile(
    r"budgets \(largest share used\): roomy \d+% \(tokens of flow roomy\), "
    r"tight \d+% \(tokens of flow tight\), run \d+% \(tokens of the run\)"
)


@pytest.fixture
def project(swarm_pytester: pytest.Pytester) -> pytest.Pytester:
    flows = swarm_pytester.path / "flows"
    two = [step_yaml("read_ticket"), step_yaml("draft_reply")]
    write_flow(flows, "tight", two, head="budget: {tokens: 1}\n")
    write_flow(flows, "roomy", two, head="budget: {tokens: 1000000, cost_usd: 100}\n")
    (flows / "flows.yaml").write_text("order: [roomy, tight]\n")
    swarm_pytester.makepyfile(test_support=USER_TESTS)
    return swarm_pytester


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_budgets_fail_runs_and_the_summary_shows_their_shares(
    project: pytest.Pytester, workers: list[str]
) -> None:
    result = project.runpytest_subprocess("--swarm-mode=stub", *workers)
    result.assert_outcomes(passed=3)
    assert SHARES.search(result.stdout.str()), result.stdout.str()


def test_a_flow_budget_is_exceeded_in_replay_as_it_was_recorded(project: pytest.Pytester) -> None:
    recorded = record_project(project, KEY)
    recorded.assert_outcomes(passed=3)
    replayed = project.runpytest_subprocess("--swarm-mode=replay")
    replayed.assert_outcomes(passed=3)
    assert SHARES.search(replayed.stdout.str()), replayed.stdout.str()


def test_a_bad_marker_names_the_test_and_what_is_allowed(
    swarm_pytester: pytest.Pytester,
) -> None:
    swarm_pytester.makepyfile(
        test_bad="""
import pytest

@pytest.mark.swarm_budget(tokens=10, money=2)
def test_it(flow_runner):
    flow_runner("stepwise-demo")
"""
    )
    result = swarm_pytester.runpytest_subprocess("--swarm-mode=stub")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*test_bad.py::test_it: @pytest.mark.swarm_budget: unknown budget key 'money'*"]
    )

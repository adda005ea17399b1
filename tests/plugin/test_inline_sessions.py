"""A user's own plugin tests run our fixtures in several inline pytester sessions."""

from __future__ import annotations

import shutil

import pytest

from tests.conftest import SHIPPED_FLOWS

INNER = '''
import shutil

FLOWS = {flows!r}
TEST = """
def test_demo(flow_runner):
    assert flow_runner("stepwise-demo").status == "succeeded"
"""


def test_first_inline_session(pytester):
    shutil.copytree(FLOWS, pytester.path / "flows")
    pytester.makepyfile(TEST)
    pytester.runpytest().assert_outcomes(passed=1)


def test_second_inline_session(pytester):
    shutil.copytree(FLOWS, pytester.path / "flows")
    pytester.makepyfile(TEST)
    pytester.runpytest().assert_outcomes(passed=1)
'''


def test_flows_load_in_every_inline_session_of_a_process(swarm_pytester: pytest.Pytester) -> None:
    # pytester drops the modules first imported inside an inline session; PyYAML's C
    # loader must not be among them, or the next session reads every flow as broken.
    shutil.rmtree(swarm_pytester.path / "flows")
    swarm_pytester.makepyfile(test_two_sessions=INNER.format(flows=str(SHIPPED_FLOWS)))
    result = swarm_pytester.runpytest_subprocess("-p", "pytester", "-p", "no:randomly")
    result.assert_outcomes(passed=2)

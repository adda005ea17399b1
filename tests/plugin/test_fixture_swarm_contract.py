"""swarm_contract: assert_run and each assertion, usable from a user's test."""

from __future__ import annotations

import pytest


def test_assert_run_and_single_assertions(swarm_pytester: pytest.Pytester) -> None:
    swarm_pytester.makepyfile(
        """
        import json

        def test_good(flow_runner, swarm_contract):
            record = flow_runner("stepwise-demo")
            swarm_contract.assert_run(record)
            swarm_contract.assert_routing(record)
            swarm_contract.assert_mode_parity(record, flow_runner.stub("stepwise-demo"))

        def test_broken(flow_runner, swarm_contract):
            record = flow_runner("stepwise-demo")
            path = record.path / "events.jsonl"
            lines = path.read_text().splitlines()
            path.write_text("\\n".join(lines[:-1]) + "\\n")
            swarm_contract.assert_event_sequence(record)
        """
    )
    result = swarm_pytester.runpytest()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*event sequence broken*", "*events.jsonl:*no run_completed*"])

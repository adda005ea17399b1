"""A user's navigator flow under the plugin: the contract suite (routing included) holds
the navigator's moves, whether a scenario scripts them or the run is deterministic."""

from __future__ import annotations

import pytest

FLOW = """\
key: review
title: "Review"
description: "Write, critique, test, ship."
steps:
  - id: write_code
    agents: [author]
    role: "Write the code."
    teaching_notes: {inputs: [i], outputs: [o], emphasizes: [e], constraints: [c]}
  - id: critique_code
    agents: [critic]
    role: "Critique the code."
    teaching_notes: {inputs: [i], outputs: [o], emphasizes: [e], constraints: [c]}
    routing:
      kind: navigator
      default: run_tests
      candidates:
        - {id: back_to_author, to: write_code, when: "handoff.status != 'VERIFIED'"}
        - {id: forward, to: run_tests}
        - {id: skip_tests, to: ship}
  - id: run_tests
    agents: [tester]
    role: "Run the tests."
    teaching_notes: {inputs: [i], outputs: [o], emphasizes: [e], constraints: [c]}
  - id: ship
    agents: [shipper]
    role: "Ship it."
    teaching_notes: {inputs: [i], outputs: [o], emphasizes: [e], constraints: [c]}
"""


def test_the_contract_suite_holds_a_navigators_moves(swarm_pytester: pytest.Pytester) -> None:
    swarm_pytester.makefile(".yaml", **{"flows/review": FLOW})
    swarm_pytester.makepyfile(
        """
        def test_scripted(flow_runner, stub_scenario, swarm_contract):
            stub_scenario({
                "critique_code": {"handoff": {"status": "NEEDS_WORK"}},
                "navigator": {"critique_code": ["back_to_author", "skip_tests"]},
            })
            record = flow_runner("review")
            swarm_contract.assert_run(record)
            went = [e.payload.to_step for e in record.events
                    if e.kind == "route_decision" and e.step_id == "critique_code"]
            assert went == ["write_code", "ship"]

        def test_first_candidate_by_default(flow_runner, swarm_contract):
            record = flow_runner("review")
            swarm_contract.assert_run(record)
            went = [e.payload.to_step for e in record.events
                    if e.kind == "route_decision" and e.step_id == "critique_code"]
            assert went == ["run_tests"]  # the stub's navigator takes the first it is offered
        """
    )
    swarm_pytester.runpytest().assert_outcomes(passed=2)


def test_swarm_navigator_deterministic_takes_the_first_candidate_with_no_call(
    swarm_pytester: pytest.Pytester,
) -> None:
    swarm_pytester.makefile(".yaml", **{"flows/review": FLOW})
    swarm_pytester.makepyfile(
        """
        def test_deterministic(flow_runner, stub_scenario, swarm_contract):
            stub_scenario({
                "critique_code": [{"handoff": {"status": "NEEDS_WORK"}}, {"text": "fine"}],
                "navigator": {"critique_code": "skip_tests"},  # never asked
            }, strict=False)
            record = flow_runner("review")
            swarm_contract.assert_run(record)
            assert not [e for e in record.events if e.kind == "routing_decision"]
            went = [e.payload.to_step for e in record.events
                    if e.kind == "route_decision" and e.step_id == "critique_code"]
            assert went == ["write_code", "run_tests"]
        """
    )
    swarm_pytester.runpytest("--swarm-navigator=deterministic").assert_outcomes(passed=1)
    swarm_pytester.runpytest("--swarm-navigator=smart").stderr.fnmatch_lines(
        ["*navigator 'smart' from --swarm-navigator is not one of llm, deterministic*"]
    )

"""--swarm-contract runs the packaged contract suite against the user's flows and engines."""

from __future__ import annotations

import pytest


def test_contract_suite_runs_against_my_flows(swarm_pytester: pytest.Pytester) -> None:
    mine = swarm_pytester.path / "mine"
    mine.mkdir()
    (mine / "solo.yaml").write_text(
        "key: solo\ntitle: Solo\ndescription: One step.\nsteps:\n"
        "  - id: only\n    agents: [worker]\n    role: Does it.\n"
        "    teaching_notes: {inputs: [a1], outputs: [b1], emphasizes: [c1], constraints: [d1]}\n"
    )
    swarm_pytester.makepyfile("def test_mine():\n    pass\n")  # not collected with --swarm-contract
    result = swarm_pytester.runpytest("--swarm-contract", f"--swarm-flows-dir={mine}", "-v")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["*test_flow_honours_the_contract?solo? PASSED*"])
    assert "test_mine" not in result.stdout.str()


def test_contract_suite_fails_for_a_broken_engine(swarm_pytester: pytest.Pytester) -> None:
    swarm_pytester.makeconftest(
        """
        from msgspec.structs import replace

        from swarm_runtime.engines.stub import StubEngine

        class Forgetful(StubEngine):
            def run_step(self, ctx):
                outcome = super().run_step(ctx)
                # drops the assistant reply from the transcript: a contract violation
                return replace(outcome, transcript=())

        def swarm_register_engines(registry):
            registry.register("claude-step", lambda options: Forgetful(scenario=options.scenario),
                              replace=True)
        """
    )
    result = swarm_pytester.runpytest("--swarm-contract", "-k", "stepwise-demo and honours")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*receipt contract broken*", "*succeeded, but its transcript*has no assistant line*"]
    )

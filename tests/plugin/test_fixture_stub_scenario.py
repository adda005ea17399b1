"""stub_scenario: scripts the stub for later runs in the test; unused entries fail it."""

from __future__ import annotations

import pytest


def test_mapping_and_file(swarm_pytester: pytest.Pytester) -> None:
    swarm_pytester.makefile(
        ".yaml", scenario="critique_requirements:\n  handoff: {status: VERIFIED}\n"
    )
    swarm_pytester.makepyfile(
        """
        def test_mapping(flow_runner, stub_scenario):
            stub_scenario({"critique_requirements": {"handoff": {"status": "VERIFIED"}}})
            record = flow_runner("signal")
            assert len(record.executions[("signal", "critique_requirements")]) == 1

        def test_file(flow_runner, stub_scenario):
            stub_scenario("scenario.yaml")
            record = flow_runner("signal")
            assert len(record.executions[("signal", "critique_requirements")]) == 1

        def test_max_iterations(flow_runner, stub_scenario):
            stub_scenario({"critique_requirements": {"handoff": {"status": "REJECTED"}}})
            record = flow_runner("signal")
            reasons = [e.payload.reason for e in record.events
                       if e.kind == "route_decision" and e.step_id == "critique_requirements"]
            assert reasons[-1] == "max_iterations"
        """
    )
    swarm_pytester.runpytest().assert_outcomes(passed=3)


def test_unused_entries_fail_at_teardown_with_the_way_out(swarm_pytester: pytest.Pytester) -> None:
    swarm_pytester.makepyfile(
        """
        # The gate merges by default, so its bounce branch never runs.
        def test_unused(flow_runner, stub_scenario):
            stub_scenario({"gather_evidence": {"text": "x"}, "bounce_to_build": {"text": "y"}})
            flow_runner("gate")

        def test_unused_allowed(flow_runner, stub_scenario):
            stub_scenario({"gather_evidence": {"text": "x"}, "bounce_to_build": {"text": "y"}},
                          strict=False)
            flow_runner("gate")
        """
    )
    result = swarm_pytester.runpytest()
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*entries never used by any run in this test: bounce_to_build; remove them or pass strict=False*"
        ]
    )


def test_bad_scenario_names_the_problem(swarm_pytester: pytest.Pytester) -> None:
    swarm_pytester.makepyfile(
        """
        def test_bad(flow_runner, stub_scenario):
            stub_scenario({"critique_requirements": {"handof": {}}})
        """
    )
    result = swarm_pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*critique_requirements: unknown key 'handof'*"])


def test_a_scenario_mistake_is_one_message_without_a_traceback(
    swarm_pytester: pytest.Pytester,
) -> None:
    swarm_pytester.makepyfile(
        """
        def test_typo(flow_runner, stub_scenario):
            stub_scenario({"critique_requirements": {"hanoff": {"status": "OK"}}})
            flow_runner("signal")

        def test_bad_slice(flow_runner):
            flow_runner("signal", start_step="nope")
        """
    )
    result = swarm_pytester.runpytest()
    result.assert_outcomes(failed=2)
    # The failures section, without the summary (which repeats whole lines when CI is set).
    out = result.stdout.str().split("short test summary info")[0]
    assert "unknown key 'hanoff'" in out
    assert out.count("swarm: start_step=nope: no such step") == 1
    assert "During handling of the above exception" not in out
    assert "Traceback" not in out and "scenario.py" not in out


def test_a_test_that_scripts_the_stub_is_skipped_in_other_modes_and_counted(
    swarm_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    swarm_pytester.makepyfile(
        """
        def test_fixture(flow_runner, stub_scenario):
            stub_scenario({"critique_requirements": {"handoff": {"status": "VERIFIED"}}})
            flow_runner("signal")

        def test_keyword(flow_runner):
            flow_runner("signal", scenario={"frame_problem": {"text": "x"}})
        """
    )
    swarm_pytester.runpytest().assert_outcomes(passed=2)
    for mode in ("replay", "record"):
        monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")  # never reached
        result = swarm_pytester.runpytest(f"--swarm-mode={mode}", "-rs")
        result.assert_outcomes(skipped=2)  # never failed at teardown for unused entries
        result.stdout.fnmatch_lines(
            [
                "stub-only: 2 test(s) skipped (they script the stub; run them with "
                "--swarm-mode=stub)",
                f"SKIPPED*scripts the stub (stub_scenario): runs in stub mode only; the mode is "
                f"{mode}",
            ],
            consecutive=False,
        )

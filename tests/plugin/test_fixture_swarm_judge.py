"""swarm_judge: a test's own judge of a step, on the stub (docs/judges.md#judges).

The stub's judge answers what the test's scenario scripts under ``judges:`` (else a score
of 1). A pass returns the verdict; a low score, a reply with no score, a score outside
[0, 1], a judge engine no plugin registers and a step that did not run each fail the test
with a message that says which.
"""

from __future__ import annotations

import pytest

TESTS = """
import pytest


def test_a_pass_returns_the_verdict(flow_runner, swarm_judge, stub_scenario):
    stub_scenario({"judges": {"signal/frame_problem": {"clarity": {"score": 0.8, "reason": "clear"}}}})
    record = flow_runner("signal")
    verdict = swarm_judge(record, step="frame_problem", rubric="Is it clear?", name="clarity")
    assert (verdict.score, verdict.passed, verdict.reason) == (0.8, True, "clear")
    assert verdict.flow == "signal" and verdict.execution == 1


def test_the_default_stub_score_passes(flow_runner, swarm_judge):
    record = flow_runner("signal")
    assert swarm_judge(record, step="frame_problem", rubric="Anything.").score == 1.0


def test_low_score(flow_runner, swarm_judge, stub_scenario):
    stub_scenario({"judges": {"frame_problem": {"clarity": {"score": 0.3, "reason": "muddled"}}}})
    record = flow_runner("signal")
    swarm_judge(record, step="frame_problem", rubric="Is it clear?", name="clarity", threshold=0.6)


def test_no_score(flow_runner, swarm_judge, stub_scenario):
    stub_scenario({"judges": {"frame_problem": {"judge": {"reason": "forgot the number"}}}})
    record = flow_runner("signal")
    swarm_judge(record, step="frame_problem", rubric="Is it clear?")


def test_score_outside(flow_runner, swarm_judge, stub_scenario):
    stub_scenario({"judges": {"frame_problem": {"judge": 1.5}}})
    record = flow_runner("signal")
    swarm_judge(record, step="frame_problem", rubric="Is it clear?")


def test_unknown_engine(flow_runner, swarm_judge):
    record = flow_runner("signal")
    swarm_judge(record, step="frame_problem", rubric="Is it clear?", engine="grader")


def test_step_that_did_not_run(flow_runner, swarm_judge):
    record = flow_runner("signal", end_step="frame_problem")
    swarm_judge(record, step="critique_requirements", rubric="Is it clear?")


def test_check_false_returns_a_failing_verdict(flow_runner, swarm_judge, stub_scenario):
    stub_scenario({"judges": {"frame_problem": {"judge": 0.1}}})
    record = flow_runner("signal")
    verdict = swarm_judge(record, step="frame_problem", rubric="Is it clear?", check=False)
    assert verdict.passed is False and verdict.score == 0.1
"""


def test_swarm_judge_passes_and_fails_with_what_a_user_needs(
    swarm_pytester: pytest.Pytester,
) -> None:
    swarm_pytester.makepyfile(test_judged=TESTS)
    result = swarm_pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=3, failed=5)
    result.stdout.fnmatch_lines_random(
        [
            "*judge 'clarity' on signal/frame_problem (execution 1) scored 0.3, below its "
            "threshold 0.6: muddled*",
            "*judge 'judge' on signal/frame_problem (execution 1) gave no usable score: the "
            "judge's handoff has no score (its reason: forgot the number)*",
            "*judge 'judge' on signal/frame_problem (execution 1) gave no usable score: the "
            "judge's score 1.5 is outside ?0, 1?*",
            "*engine 'grader': no engine 'grader' (registered: claude-step*",
            "*step 'critique_requirements' did not run in run run-*; steps that ran: "
            "signal/frame_problem*",
        ]
    )
    assert "Traceback" not in result.stdout.str()


def test_a_bad_judge_argument_names_it(swarm_pytester: pytest.Pytester) -> None:
    swarm_pytester.makepyfile(
        """
        import pytest

        def test_bad(flow_runner, swarm_judge):
            record = flow_runner("signal", end_step="frame_problem")
            with pytest.raises(ValueError, match="threshold=2"):
                swarm_judge(record, step="frame_problem", rubric="r", threshold=2)
            with pytest.raises(ValueError, match="a judge's name must match"):
                swarm_judge(record, step="frame_problem", rubric="r", name="Bad Name")
            with pytest.raises(ValueError, match="non-empty string"):
                swarm_judge(record, step="frame_problem", rubric=" ")
            with pytest.raises(ValueError, match="20000 characters at most"):
                swarm_judge(record, step="frame_problem", rubric="x" * 20_001)
            swarm_judge(record, step="frame_problem", rubric="Clear?")
            with pytest.raises(ValueError, match="give each judge of a step its own name="):
                swarm_judge(record, step="frame_problem", rubric="Short?")
            swarm_judge(record, step="frame_problem", rubric="Short?", name="short")
        """
    )
    swarm_pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_a_scenario_judge_reply_that_cannot_be_is_refused_naming_it(
    swarm_pytester: pytest.Pytester,
) -> None:
    swarm_pytester.makepyfile(
        """
        import math

        import pytest


        @pytest.mark.parametrize("judges", [
            {"frame_problem": {"clarity": math.nan}},
            {"frame_problem": {"clarity": True}},
            {"frame_problem": {1: 0.5}},
            {"frame_problem": {"clarity": {"score": 0.5, "reason": 3}}},
        ])
        def test_bad(flow_runner, stub_scenario, judges):
            stub_scenario({"judges": judges})
        """
    )
    result = swarm_pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=4)
    result.stdout.fnmatch_lines_random(
        [
            "*judges.frame_problem.clarity: a judge's score must be a finite number, text or "
            "null, got nan*",
            "*judges.frame_problem.clarity: a judge's score must be a finite number, text or "
            "null, got True*",
            "*judges.frame_problem: 1 is not a judge name*",
            "*judges.frame_problem.clarity: reason must be a string, got 3*",
        ]
    )

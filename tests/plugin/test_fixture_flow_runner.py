"""flow_runner: runs flows or slices in the current mode and returns a RunRecord."""

from __future__ import annotations

import pytest


def test_run_record_fields(swarm_pytester: pytest.Pytester) -> None:
    swarm_pytester.makepyfile(
        """
        def test_record(flow_runner):
            record = flow_runner("signal", request="add a slugify helper")
            assert record.status == "succeeded"
            assert record.run_id.startswith("run-") and record.path.name == record.run_id
            assert record.events[0].kind == "run_created"
            assert record.events[-1].payload.status == "succeeded"
            receipt = record.receipts[("signal", "critique_requirements")]
            assert receipt["routing"]["reason"] == "success_value:VERIFIED"
            assert len(record.executions[("signal", "critique_requirements")]) == 2
            lines = record.transcripts[("signal", "normalize_request")]
            assert [l.get("role") for l in lines] == ["system", "user", "assistant"]
            assert "add a slugify helper" in lines[1]["content"]
            assert record.summary["total_steps_executed"] == len(record.steps_executed())
        """
    )
    swarm_pytester.runpytest().assert_outcomes(passed=1)


def test_slices_and_default_order(swarm_pytester: pytest.Pytester) -> None:
    swarm_pytester.makepyfile(
        """
        def test_slice(flow_runner):
            record = flow_runner("plan", start_step="write_adr", end_step="write_adr")
            assert record.steps_executed() == [("plan", "write_adr")]

        def test_everything(flow_runner):
            record = flow_runner()
            flows = [flow for flow, _ in record.steps_executed()]
            assert list(dict.fromkeys(flows)) == [
                "signal", "plan", "build", "review", "security-scan", "gate", "deploy",
                "wisdom"]
        """
    )
    swarm_pytester.runpytest().assert_outcomes(passed=2)


def test_flow_runner_with_no_flow_runs_every_flow_and_the_record_says_which(
    swarm_pytester: pytest.Pytester,
) -> None:
    swarm_pytester.makepyfile(
        """
        ORDER = ["signal", "plan", "build", "review", "gate", "deploy", "wisdom"]

        def test_everything(flow_runner):
            record = flow_runner()  # no flow named, no swarm_flow marker: flows.yaml's order
            assert record.flow_keys == ORDER
            assert f"flows={ORDER!r}" in repr(record)
        """
    )
    swarm_pytester.runpytest().assert_outcomes(passed=1)


def test_payloads_read_by_item_and_a_missing_field_names_the_kind(
    swarm_pytester: pytest.Pytester,
) -> None:
    swarm_pytester.makepyfile(
        """
        import pytest

        def test_items(flow_runner):
            record = flow_runner("signal")
            end = next(e for e in record.events if e.kind == "step_end")
            assert end.payload["status"] == end.payload.status == "succeeded"
            assert "status" in end.payload and "id" not in end.payload
            assert end.payload.get("id", "none") == "none"
            with pytest.raises(KeyError) as missing:
                end.payload["id"]
            assert missing.value.args[0] == (
                "a step_end payload has no field 'id'; its fields: status, duration_ms, engine"
            )
        """
    )
    swarm_pytester.runpytest().assert_outcomes(passed=1)


def test_failed_run_is_returned_not_raised(swarm_pytester: pytest.Pytester) -> None:
    swarm_pytester.makepyfile(
        """
        def test_fatal(flow_runner):
            record = flow_runner("signal", scenario={"author_requirements": {"result_code": "fatal",
                                                                             "error": "nope"}})
            assert record.status == "failed"
            assert record.events[-2].kind == "step_error"
        """
    )
    swarm_pytester.runpytest().assert_outcomes(passed=1)


def test_unknown_flow_is_a_clear_error(swarm_pytester: pytest.Pytester) -> None:
    swarm_pytester.makepyfile(
        """
        def test_typo(flow_runner):
            flow_runner("signl")
        """
    )
    result = swarm_pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*no flow 'signl'*did you mean 'signal'*"])


def test_params_past_their_bounds_fail_the_test_naming_the_param(
    swarm_pytester: pytest.Pytester,
) -> None:
    swarm_pytester.makepyfile(
        """
        def test_too_big(flow_runner):
            flow_runner("signal", doc="x" * 300_000)

        def test_not_json(flow_runner):
            flow_runner("signal", when=object())

        def test_nan(flow_runner):
            flow_runner("signal", score=float("nan"))
        """
    )
    result = swarm_pytester.runpytest()
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines(
        [
            "swarm: the params are 300005 bytes; at most 262144 are given to a run*",
            "swarm: param 'when': it is not a JSON value*",
            "swarm: param 'score': it is not a JSON value*no NaN or infinity*",
        ],
        consecutive=False,
    )
    assert not list(swarm_pytester.path.rglob("spec.json"))  # refused before any run dir


def test_a_plain_status_assert_on_a_failed_run_shows_its_cause(
    swarm_pytester: pytest.Pytester,
) -> None:
    swarm_pytester.makepyfile(
        """
        def test_it(flow_runner):
            record = flow_runner(
                "signal",
                scenario={"frame_problem": {"result_code": "retryable",
                                            "error": "cannot reach the Anthropic API"}},
            )
            assert record.status == "succeeded"

        def test_raise_for_status(flow_runner):
            flow_runner("signal", scenario={"frame_problem": {"result_code": "fatal",
                                                              "error": "model down"}}
                        ).raise_for_status()
        """
    )
    result = swarm_pytester.runpytest()
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "*AssertionError: assert 'failed' == 'succeeded'",
            "*run run-* failed: failed at signal/frame_problem (retryable, attempt 3 of 3): "
            "still failing after 3 attempt(s): cannot reach the Anthropic API*",
            "*AssertionError: run run-* failed: failed at signal/frame_problem (fatal*model down*",
        ],
        consecutive=False,
    )


def test_a_utility_flow_that_does_not_load_fails_the_run_with_its_line(
    swarm_pytester: pytest.Pytester,
) -> None:
    """As ``swarm run`` refuses it: the run does not go on without the utility flow."""
    (swarm_pytester.path / "flows" / "audit.yaml").write_text(
        "key: audit\ntitle: Audit\ndescription: An audit.\nutility: true\n"
        'injection_trigger: "handoff.status =="\nsteps:\n'
        "  - id: audit\n    agents: [auditor]\n    role: Audit.\n"
        "    teaching_notes: {inputs: [i], outputs: [o], emphasizes: [e], constraints: [c]}\n"
    )
    swarm_pytester.makepyfile(
        """
        def test_run(flow_runner):
            flow_runner("signal")
        """
    )
    result = swarm_pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*swarm: *audit.yaml:5, field 'injection_trigger': injection_trigger is not a CEL*"]
    )
    assert "Traceback" not in result.stdout.str()

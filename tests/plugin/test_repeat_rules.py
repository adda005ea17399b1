"""Repetitions' rules: what the marker and the option accept, and how a repetition ends."""

from __future__ import annotations

import pytest

from pytest_swarm.repeat import cause_of
from pytest_swarm.repeat_summary import RepeatResult

KEY = "sk-ant-repeat-rules-not-a-key"


@pytest.mark.parametrize(
    "arguments",
    ["0", "'3'", "True", "2, min_pass_rate=1.5", "2, min_pass_rate='all'", "2, times=3", "2, 3"],
)
def test_a_bad_marker_fails_the_test_saying_what_is_allowed(
    swarm_pytester: pytest.Pytester, arguments: str
) -> None:
    swarm_pytester.makepyfile(
        f"""
        import pytest

        @pytest.mark.swarm_repeat({arguments})
        def test_x():
            pass
        """
    )
    result = swarm_pytester.runpytest("--strict-markers")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*test_a_bad_marker_fails_the_test_saying_what_is_allowed.py::test_x: "
            "@pytest.mark.swarm_repeat takes n, a whole number of repetitions of 1 or more, "
            "and optionally min_pass_rate=, a number from 0 to 1 (default 1.0); got args=*"
        ]
    )
    assert "Traceback" not in result.stdout.str()


@pytest.mark.parametrize("value", ["0", "three", "-2", "1.5"])
def test_a_bad_option_stops_at_startup(swarm_pytester: pytest.Pytester, value: str) -> None:
    swarm_pytester.makepyfile("def test_x():\n    pass\n")
    result = swarm_pytester.runpytest(f"--swarm-repeat={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [f"*swarm: repeat '{value}' from --swarm-repeat is not a whole number of 1 or more*"]
    )


def test_the_option_comes_from_the_environment_too(
    swarm_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SWARM_REPEAT", "many")
    swarm_pytester.makepyfile("def test_x():\n    pass\n")
    result = swarm_pytester.runpytest()
    result.stderr.fnmatch_lines(["*swarm: repeat 'many' from SWARM_REPEAT is not a whole*"])


LIVE_TESTS = """
import pytest

CALLS = []


@pytest.mark.swarm_repeat(3)
def test_skips_on_its_second_call():
    CALLS.append(1)
    if len(CALLS) == 2:
        pytest.skip("no model today")


@pytest.mark.swarm_repeat(min_pass_rate=0.5)
def test_takes_n_from_the_option(request):
    CALLS.append(2)
    assert CALLS.count(2) % 2 == 0, "odd call\\nsecond line"


def test_counted():
    assert CALLS.count(1) == 2 and CALLS.count(2) == 4
"""


def test_a_skip_ends_the_repetitions_and_a_marker_without_n_takes_the_option(
    swarm_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)  # nothing calls the model
    swarm_pytester.makepyfile(LIVE_TESTS)
    result = swarm_pytester.runpytest("--swarm-mode=sdk", "--swarm-repeat=4")
    result.assert_outcomes(passed=2, skipped=1)
    result.stdout.fnmatch_lines(
        ["test_a_skip*::test_takes_n_from_the_option: 2/4 repetitions passed (50%, *): passed"]
    )


def test_a_cause_is_the_exception_type_and_its_first_line() -> None:
    assert cause_of(AssertionError("assert 1 == 2\n  - 2\n  + 1")) == (
        "AssertionError: assert 1 == 2"
    )
    assert cause_of(RuntimeError()) == "RuntimeError"


@pytest.mark.parametrize(
    ("passed", "rate", "reached"),
    [(2, 0.5, True), (2, 0.75, False), (3, 0.75, True), (0, 0.0, True), (4, 1.0, True)],
)
def test_the_pass_rate_must_reach_the_threshold(passed: int, rate: float, reached: bool) -> None:
    result = RepeatResult(mode="sdk", asked=4, ran=4, passed=passed, min_pass_rate=rate)
    assert result.reached is reached


def test_a_result_survives_the_trip_from_a_worker() -> None:
    from pytest_swarm.repeat_summary import RepeatTotals

    worker = RepeatTotals()
    worker.add(
        "t.py::a",
        RepeatResult(
            mode="cli",
            asked=3,
            ran=3,
            passed=1,
            min_pass_rate=0.3,
            steps={"f/s": [2, 1, 3]},
            causes={"AssertionError: no": 2},
        ),
    )
    controller = RepeatTotals()
    controller.merge(worker.as_dict())
    assert (
        controller.lines()
        == worker.lines()
        == [
            "t.py::a: 1/3 repetitions passed (33%, min_pass_rate 0.3): passed",
            "  f/s: 2/3 executions succeeded (67%) in 3 of 3 repetitions",
        ]
    )


@pytest.mark.parametrize(
    ("mode", "why"),
    [
        ("stub", "stub mode is deterministic"),
        ("replay", "replay mode is deterministic"),
        ("record", "record mode writes each test's cassettes once"),
    ],
)
def test_a_test_that_ran_once_says_why(mode: str, why: str) -> None:
    assert RepeatResult.once(5, mode).lines("t.py::a") == [
        f"t.py::a: ran once, not 5 times: {why} (repetitions run in sdk and cli modes)"
    ]

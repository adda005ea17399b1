"""swarm_flow(key) and swarm_modes(*modes): effect, and clear errors for bad arguments."""

from __future__ import annotations

from typing import Any

import pytest


def test_swarm_flow_picks_the_flow(swarm_pytester: pytest.Pytester) -> None:
    swarm_pytester.makepyfile(
        """
        import pytest

        @pytest.mark.swarm_flow("stepwise-demo")
        def test_flow(flow_runner):
            assert {f for f, _ in flow_runner().steps_executed()} == {"stepwise-demo"}
        """
    )
    swarm_pytester.runpytest("--strict-markers").assert_outcomes(passed=1)


def test_swarm_modes_skips_with_the_reason(swarm_pytester: pytest.Pytester) -> None:
    swarm_pytester.makepyfile(
        """
        import pytest

        @pytest.mark.swarm_modes("replay", "sdk")
        def test_live_only():
            pass

        @pytest.mark.swarm_modes("stub")
        def test_stub_only():
            pass
        """
    )
    result = swarm_pytester.runpytest("-rs", "--strict-markers")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*runs only in swarm mode(s) replay, sdk; current mode is stub*"])


@pytest.mark.parametrize(
    ("marker", "message"),
    [
        ('swarm_flow("nope")', "swarm_flow('nope') names no flow in*"),
        ("swarm_flow()", "swarm_flow takes one flow key*"),
        ('swarm_flow("a", "b")', "swarm_flow takes one flow key*"),
        ('swarm_modes("warp")', "swarm_modes takes one or more of stub, replay, record, sdk, cli*"),
        ("swarm_modes()", "swarm_modes takes one or more of*"),
    ],
)
def test_invalid_marker_arguments_are_a_clear_error(
    swarm_pytester: pytest.Pytester, marker: str, message: str
) -> None:
    swarm_pytester.makepyfile(
        f"""
        import pytest

        @pytest.mark.{marker}
        def test_x():
            pass
        """
    )
    result = swarm_pytester.runpytest()
    result.assert_outcomes(errors=1)  # the test errors at set-up; nothing of it runs
    result.stdout.fnmatch_lines(["*invalid swarm marker:*", f"*test_x: @pytest.mark.{message}"])
    assert "Traceback" not in result.stdout.str()


def test_invalid_marker_under_xdist_is_reported_not_an_internal_error(
    swarm_pytester: pytest.Pytester,
) -> None:
    swarm_pytester.makepyfile(
        """
        import pytest

        @pytest.mark.swarm_modes("stubb")
        def test_x():
            pass

        def test_fine():
            pass
        """
    )
    result = swarm_pytester.runpytest_subprocess("-n", "2")
    result.assert_outcomes(passed=1, errors=1)
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    result.stdout.fnmatch_lines(["*swarm_modes takes one or more of*'stubb'*"])


def test_a_test_meant_for_replay_can_be_recorded_then_replayed(
    swarm_pytester: pytest.Pytester, anthropic_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    swarm_pytester.makepyfile(
        """
        import pytest

        @pytest.mark.swarm_modes("replay", "sdk")
        def test_replayed(flow_runner):
            assert flow_runner("stepwise-demo").status == "succeeded"
        """
    )
    monkeypatch.setenv("ANTHROPIC_BASE_URL", anthropic_server.url)
    swarm_pytester.runpytest("--swarm-mode=record").assert_outcomes(passed=1)
    monkeypatch.delenv("ANTHROPIC_BASE_URL")
    swarm_pytester.runpytest("--swarm-mode=replay").assert_outcomes(passed=1)

"""swarm_engine, and engines a conftest.py registers (swarm_register_engines)."""

from __future__ import annotations

import pytest


def test_registered_engine_runs_the_steps(swarm_pytester: pytest.Pytester) -> None:
    swarm_pytester.makeconftest(
        """
        from swarm_runtime.engines.stub import StubEngine

        class Loud(StubEngine):
            engine_id = "loud-step"
            engine_short = "loud"

        def swarm_register_engines(registry):
            registry.register("loud-step", lambda options: Loud(
                engine_id="loud-step", engine_short="loud", scenario=options.scenario))
        """
    )
    swarm_pytester.makepyfile(
        """
        def test_engine(swarm_engine, flow_runner):
            assert "loud-step" in swarm_engine.registry.ids()
            assert swarm_engine.mode == "stub"
            swarm_engine.engine_id = "loud-step"
            record = flow_runner("stepwise-demo")
            receipt = next(iter(record.receipts.values()))
            assert receipt["engine"] == "loud-step"
            assert receipt["transcript_path"].endswith("-loud.jsonl")
        """
    )
    swarm_pytester.runpytest().assert_outcomes(passed=1)


def test_choosing_an_engine_does_not_leak_into_the_next_test(
    swarm_pytester: pytest.Pytester,
) -> None:
    swarm_pytester.makeconftest(
        """
        from swarm_runtime.engines.stub import StubEngine

        def swarm_register_engines(registry):
            registry.register("my-step", lambda options: StubEngine(
                engine_id="my-step", engine_short="my", scenario=options.scenario))
        """
    )
    swarm_pytester.makepyfile(
        """
        def test_a(swarm_engine, flow_runner):
            swarm_engine.engine_id = "my-step"
            record = flow_runner("stepwise-demo")
            assert next(iter(record.receipts.values()))["engine"] == "my-step"

        def test_b(flow_runner):
            record = flow_runner("stepwise-demo")
            assert next(iter(record.receipts.values()))["engine"] == "claude-step"
        """
    )
    swarm_pytester.runpytest("-p", "no:randomly").assert_outcomes(passed=2)


def test_the_old_hook_still_registers_engines_and_says_what_to_write_instead(
    swarm_pytester: pytest.Pytester,
) -> None:
    swarm_pytester.makeconftest(
        """
        from swarm_runtime.engines.stub import StubEngine

        def pytest_swarm_register_engines(registry):
            registry.register("old-step", lambda options: StubEngine(
                engine_id="old-step", engine_short="old", scenario=options.scenario))
        """
    )
    swarm_pytester.makepyfile(
        """
        def test_engine(swarm_engine, flow_runner):
            swarm_engine.engine_id = "old-step"
            record = flow_runner("stepwise-demo")
            assert next(iter(record.receipts.values()))["engine"] == "old-step"
        """
    )
    result = swarm_pytester.runpytest()
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(
        [
            "*DeprecationWarning: pytest_swarm_register_engines (in *conftest.py) is deprecated"
            "*name the function swarm_register_engines(registry)*"
        ]
    )
    # A project whose warnings are errors finds out at once, at the test that asks for engines.
    strict = swarm_pytester.runpytest("-W", "error::DeprecationWarning")
    strict.assert_outcomes(errors=1)

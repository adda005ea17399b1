"""isolated_runs_env: a fresh runs dir per test, SWARM_RUNS_DIR set and then restored."""

from __future__ import annotations

import pytest


def test_each_test_gets_its_own_dirs(swarm_pytester: pytest.Pytester) -> None:
    swarm_pytester.makepyfile(
        """
        import os
        seen = []

        def test_one(isolated_runs_env, flow_runner):
            assert os.environ["SWARM_RUNS_DIR"] == str(isolated_runs_env.runs_dir)
            assert isolated_runs_env.examples_dir.is_dir()
            record = flow_runner("stepwise-demo")
            assert record.path.parent == isolated_runs_env.runs_dir
            seen.append(isolated_runs_env.runs_dir)

        def test_two(isolated_runs_env):
            assert isolated_runs_env.runs_dir != seen[0]
            assert list(isolated_runs_env.runs_dir.iterdir()) == []

        def test_restored():
            assert "SWARM_RUNS_DIR" not in os.environ
        """
    )
    swarm_pytester.runpytest("-p", "no:randomly").assert_outcomes(passed=3)


def test_the_run_service_is_reset_around_each_test(swarm_pytester: pytest.Pytester) -> None:
    # As the docs show it: get_backend() in a test, its runs in the test's runs dir; a
    # run still going when the test ends is cancelled, and the next test starts afresh.
    swarm_pytester.makepyfile(
        """
        import json
        from swarm_runtime import RunSpec, Scenario, get_backend

        left = []

        def test_starts_runs(isolated_runs_env):
            backend = get_backend("claude-step-orchestrator")
            done = backend.start(RunSpec(flows=("stepwise-demo",)))
            assert backend.wait(done, timeout=60)["status"] == "succeeded"
            assert [e["seq"] for e in backend.get_events(done, since_seq=3)][0] == 4
            slow = get_backend(
                "claude-step-orchestrator",
                runs_dir=isolated_runs_env.runs_dir / "slow",
                scenario=Scenario.from_mapping({"read_request": {"delay_ms": 600000}}),
            )
            running = slow.start(RunSpec(flows=("stepwise-demo",)))
            left.append(isolated_runs_env.runs_dir / "slow" / running)

        def test_starts_afresh(isolated_runs_env):
            meta = json.loads((left[0] / "meta.json").read_text())
            assert meta["status"] == "stopped"  # cancelled when the first test ended
            assert get_backend("claude-step-orchestrator").list_summaries() == []
        """
    )
    swarm_pytester.runpytest("-p", "no:randomly").assert_outcomes(passed=2)

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

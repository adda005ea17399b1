"""The user-facing example under examples/ passes as a user would run it."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import REPO


def test_example_suite_passes() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SWARM_", "PYTEST_ADDOPTS"))}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "examples"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "6 passed" in result.stdout
    assert "mode stub:" in result.stdout  # the swarm summary section

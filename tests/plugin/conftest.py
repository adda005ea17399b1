"""pytester sessions with the shipped flows beside them."""

from __future__ import annotations

import shutil

import pytest

from tests.conftest import SHIPPED_FLOWS


@pytest.fixture
def swarm_pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    for name in (
        "SWARM_MODE",
        "SWARM_FLOWS_DIR",
        "SWARM_GOLDEN_DIR",
        "SWARM_CASSETTE_DIR",
        "SWARM_RUNS_DIR",
        "SWARM_NAVIGATOR",
        "SWARM_PYTEST_RUNS_DIR",
        "SWARM_COVERAGE_MIN",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        # An inner session must not take itself for one of our xdist workers.
        "PYTEST_XDIST_WORKER",
        "PYTEST_XDIST_WORKER_COUNT",
        "PYTEST_XDIST_TESTRUNUID",
    ):
        monkeypatch.delenv(name, raising=False)
    shutil.copytree(SHIPPED_FLOWS, pytester.path / "flows")
    return pytester

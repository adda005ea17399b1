"""Stub scenarios: what a scenario may hold, and the errors that name the place."""

from __future__ import annotations

import pytest

from swarm_runtime.errors import ScenarioError


def test_scenario_values_json_cannot_carry_are_refused() -> None:
    import datetime

    from swarm_runtime.engines.scenario import Scenario

    with pytest.raises(ScenarioError, match=r"s\.tools: holds a value JSON cannot carry"):
        Scenario.from_mapping({"s": {"tools": [{"tool": "t", "input": datetime.date(2024, 1, 1)}]}})
    with pytest.raises(ScenarioError, match=r"s\.tokens"):
        Scenario.from_mapping({"s": {"tokens": {"prompt": True}}})

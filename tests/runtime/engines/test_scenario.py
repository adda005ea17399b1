"""Stub scenarios: what a scenario may hold, and the errors that name the place."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from swarm_runtime.engines.scenario import Scenario
from swarm_runtime.errors import ScenarioError


def test_scenario_values_json_cannot_carry_are_refused() -> None:
    import datetime

    from swarm_runtime.engines.scenario import Scenario

    with pytest.raises(ScenarioError, match=r"s\.tools: holds a value JSON cannot carry"):
        Scenario.from_mapping({"s": {"tools": [{"tool": "t", "input": datetime.date(2024, 1, 1)}]}})
    with pytest.raises(ScenarioError, match=r"s\.tokens"):
        Scenario.from_mapping({"s": {"tokens": {"prompt": True}}})


def test_scenario_shapes_and_per_execution_lists() -> None:
    scenario = Scenario.from_mapping(
        {
            "critic": [{"handoff": {"status": "NO"}}, {"handoff": {"status": "YES"}}],
            "build/critic": {"text": "flow-specific"},
        }
    )
    first = scenario.outcome_for("signal", "critic", 0)
    assert first is not None and first.handoff == {"status": "NO"}
    last = scenario.outcome_for("signal", "critic", 7)  # the last entry repeats
    assert last is not None and last.handoff == {"status": "YES"}
    qualified = scenario.outcome_for("build", "critic", 0)
    assert qualified is not None and qualified.text == "flow-specific"
    assert scenario.outcome_for("signal", "other", 0) is None
    assert scenario.unused() == []


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ([1, 2], "must be a mapping of step id"),
        ({"s": {"result_code": "maybe"}}, "s.result_code: 'maybe' is not one of ok, retryable"),
        ({"s": {"tokens": {"prompt": -1}}}, "s.tokens"),
        ({"s": {"delay_ms": "soon"}}, "s.delay_ms: must be a whole number"),
        ({"s": {"tools": [{"tool": "Read", "colour": 1}]}}, "s.tools[0]: unknown key 'colour'"),
        ({"s": []}, "must not be empty"),
        ({"s": [{"handoff": "VERIFIED"}]}, "s[0].handoff: must be a mapping"),
        ({"s": {"wait_for": "gate"}}, "s.wait_for: must be an absolute path"),
        ({"s": {"wait_for": 3}}, "s.wait_for: must be an absolute path"),
    ],
)
def test_scenario_errors_name_the_place(raw: Any, message: str) -> None:
    with pytest.raises(ScenarioError, match=None) as info:
        Scenario.from_mapping(raw, source="sc.yaml")
    assert message in str(info.value)
    assert "sc.yaml" in str(info.value)


def test_scenario_file_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("s: [unclosed\n")
    with pytest.raises(ScenarioError, match="invalid YAML"):
        Scenario.from_file(bad)
    with pytest.raises(ScenarioError, match="cannot read scenario file"):
        Scenario.from_file(tmp_path / "missing.yaml")

"""Handoff parsing, stub scenarios, the engine registry and the public names."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import pytest

import swarm_runtime
from swarm_runtime.engines.handoff import HandoffError, format_handoff, parse_handoff
from swarm_runtime.engines.registry import EngineOptions, EngineRegistry, default_registry
from swarm_runtime.engines.scenario import Scenario
from swarm_runtime.errors import ConfigError, EngineError, ScenarioError


def test_handoff_yaml_json_last_block_and_yes_no_words() -> None:
    text = "thinking\n```handoff\nstatus: DRAFT\n```\nmore\n```handoff\nstatus: VERIFIED\ncan_further_iteration_help: no\n```"
    assert parse_handoff(text) == {"status": "VERIFIED", "can_further_iteration_help": "no"}
    assert parse_handoff('```handoff\n{"decision": "MERGE"}\n```') == {"decision": "MERGE"}
    assert parse_handoff("no block at all") is None
    assert parse_handoff(format_handoff({"a": 1, "b": "x"})) == {"a": 1, "b": "x"}


@pytest.mark.parametrize("body", ["- a\n- b", "status: [unclosed"])
def test_handoff_that_is_not_a_mapping_is_an_error(body: str) -> None:
    with pytest.raises(HandoffError):
        parse_handoff(f"```handoff\n{body}\n```")


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


def test_registry_refuses_duplicates_and_names_known_engines() -> None:
    registry = default_registry()
    with pytest.raises(EngineError, match="already registered"):
        registry.register("claude-step", lambda options: registry.create("gemini-step", options))
    with pytest.raises(
        ConfigError, match=r"no engine 'warp-step' \(registered: claude-step, gemini-step"
    ):
        registry.create("warp-step", EngineOptions())
    gemini = registry.create("gemini-step", EngineOptions())
    assert (gemini.engine_id, gemini.engine_short) == ("gemini-step", "gemini")


def test_entry_point_engines_are_loaded_on_demand(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    class FakeEntryPoint:
        name, value = "fake", "fake_pkg:register"

        def load(self) -> Any:
            def register(registry: EngineRegistry) -> None:
                calls.append("loaded")
                registry.register(
                    "fake-step", lambda options: registry.create("claude-step", options)
                )

            return register

    import importlib.metadata

    monkeypatch.setattr(
        importlib.metadata,
        "entry_points",
        lambda group: [FakeEntryPoint()] if group == "swarm_runtime.engines" else [],
    )
    registry = default_registry()
    registry.create("claude-step", EngineOptions())
    assert calls == []  # built-in ids never read entry points
    assert registry.create("fake-step", EngineOptions()).engine_id == "claude-step"
    assert calls == ["loaded"]


@pytest.mark.parametrize(
    "package",
    [
        "swarm_runtime",
        "swarm_runtime.engines",
        "swarm_runtime.flow",
        "swarm_runtime.orchestrator",
        "swarm_runtime.storage",
        "swarm_runtime.contracts",
    ],
)
def test_public_names_exist_and_are_listed_once(package: str) -> None:
    module = importlib.import_module(package)
    names = module.__all__
    assert len(names) == len(set(names))
    for name in names:
        assert hasattr(module, name), f"{package}.__all__ lists missing {name}"
    public = {
        n
        for n in vars(module)
        if not n.startswith("_") and not isinstance(getattr(module, n), type(swarm_runtime))
    }
    unlisted = sorted(public - set(names) - {"annotations", "Any", "Callable"})
    assert not unlisted, f"{package} exposes {unlisted} without listing them in __all__"

"""The engine registry: ids to factories, copied for a test's own engines."""

from __future__ import annotations

from typing import Any

import pytest

from swarm_runtime.engines.base import StepEngine
from swarm_runtime.engines.registry import EngineOptions, EngineRegistry, default_registry
from swarm_runtime.engines.stub import StubEngine
from swarm_runtime.errors import ConfigError, EngineError


def test_a_copy_takes_replacements_without_changing_the_original() -> None:
    original = default_registry()
    copy = original.copy()

    def mine(_options: EngineOptions) -> StepEngine:
        return StubEngine(engine_id="claude-step", engine_short="mine")

    copy.register("claude-step", mine, replace=True)
    copy.register("extra-step", mine)
    assert copy.ids() == ["claude-step", "extra-step", "gemini-step", "openai-step"]
    assert original.ids() == ["claude-step", "gemini-step", "openai-step"]
    assert copy.create("claude-step", EngineOptions()).engine_short == "mine"
    assert original.create("claude-step", EngineOptions()).engine_short == "claude"


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

    import swarm_runtime.entry_points

    monkeypatch.setattr(
        swarm_runtime.entry_points,
        "entry_points",
        lambda group: [FakeEntryPoint()] if group == "swarm_runtime.engines" else [],
    )
    registry = default_registry()
    registry.create("claude-step", EngineOptions())
    assert calls == []  # built-in ids never read entry points
    # The group is deprecated: read for one more release, saying what to write instead.
    with pytest.warns(DeprecationWarning, match=r"engine plugin 'fake' \(fake_pkg:register\)"):
        assert registry.create("fake-step", EngineOptions()).engine_id == "claude-step"
    assert calls == ["loaded"]


def test_a_mode_an_engine_lacks_is_refused_naming_the_modes_it_has() -> None:
    registry = default_registry()
    with pytest.raises(ConfigError) as caught:
        registry.create("claude-step", EngineOptions(mode="warp"))
    assert "engine 'claude-step' has no 'warp' mode" in str(caught.value)
    assert "(available: stub, sdk, record, replay, cli)" in str(caught.value)
    # gemini-step has a mode of its own: one it lacks is refused naming where it was given.
    options = EngineOptions(mode="sdk", given={"mode": "sdk"}, section_name="gemini")
    with pytest.raises(ConfigError) as caught:
        registry.create("gemini-step", options)
    assert "--gemini-mode: 'sdk' is not one of stub, cli" in str(caught.value)

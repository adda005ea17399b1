"""A user's mode becomes what the engines see in one place, for swarm run, swarm plan run
and the pytest plugin alike."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from swarm_runtime.errors import ConfigError
from swarm_runtime.orchestrator.plan import engine_for_mode


def test_a_replay_is_an_sdk_call_answered_by_its_cassettes_without_a_key() -> None:
    cassettes = SimpleNamespace(record=False)
    engine = engine_for_mode("replay", cassettes=cassettes, config={"model": "m"})
    assert engine.mode == "sdk" and engine.replays
    assert engine.config["cassettes"] is cassettes and engine.config["model"] == "m"
    assert engine.config["base_url"].startswith("http://127.0.0.1:")


def test_a_recording_is_an_sdk_call_that_reaches_the_server() -> None:
    engine = engine_for_mode("record", cassettes=SimpleNamespace(record=True))
    assert engine.mode == "sdk" and not engine.replays
    assert "api_key" not in engine.config and "base_url" not in engine.config


@pytest.mark.parametrize("mode", ["stub", "sdk", "cli"])
def test_other_modes_pass_through(mode: str) -> None:
    engine = engine_for_mode(mode, engine_id="gemini-step")
    assert (engine.mode, engine.engine_id, engine.replays) == (mode, "gemini-step", False)
    assert engine.config == {}


def test_record_or_replay_without_cassettes_is_refused() -> None:
    with pytest.raises(ConfigError, match="mode replay needs the cassettes"):
        engine_for_mode("replay")

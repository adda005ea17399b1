"""A user's mode reaches every engine as given, resolved once at the edge, for swarm run,
swarm plan run and the pytest plugin alike: each engine decides what it means for it."""

from __future__ import annotations

from pathlib import Path

import pytest

from swarm_runtime.engines.base import StepEngine
from swarm_runtime.engines.cassette import Cassettes
from swarm_runtime.engines.registry import EngineOptions, default_registry
from swarm_runtime.engines.stub import StubEngine
from swarm_runtime.errors import ConfigError
from swarm_runtime.flow.registry import FlowRegistry
from swarm_runtime.orchestrator.plan import EngineChoice, RunDeps, RunSpec
from swarm_runtime.orchestrator.run import Orchestrator
from tests.conftest import REPO, SHIPPED_FLOWS
from tests.runtime.helpers import claude_choice, step_yaml, write_flow


def _shipped_cassettes() -> Cassettes:
    shipped = REPO / "golden" / "cassettes" / "tests" / "contract" / "test_contract"
    return Cassettes(
        shipped / "test_flow_honours_the_contract-stepwise-demo",
        name="stepwise-demo",
        record=False,
        rerecord_command="tests/record_cassettes.py",
    )


def test_a_replay_needs_no_key(tmp_path: Path) -> None:
    cassettes = _shipped_cassettes()
    choice = claude_choice("replay", cassettes=cassettes, env={})
    assert "ANTHROPIC_API_KEY" not in choice.env and choice.replays
    outcome = Orchestrator(
        FlowRegistry(SHIPPED_FLOWS),
        runs_dir=tmp_path / "runs",
        deps=RunDeps(engines=default_registry()),
        engine=choice,
    ).run(RunSpec(flows=("stepwise-demo",), initiator="pytest"))
    assert outcome.status == "succeeded", outcome.error
    assert cassettes.unplayed == [] and cassettes.divergences == []
    # The same environment in sdk mode, which does reach a server, is told what to set.
    with pytest.raises(ConfigError, match="sdk mode needs ANTHROPIC_API_KEY"):
        default_registry().create("claude-step", EngineOptions(mode="sdk", env={}))


@pytest.mark.parametrize("mode", ["record", "replay"])
def test_record_or_replay_without_cassettes_is_refused(mode: str) -> None:
    with pytest.raises(ConfigError, match=f"mode {mode} needs the cassettes"):
        EngineChoice(mode=mode)


@pytest.mark.parametrize("mode", ["stub", "sdk", "cli", "record", "replay"])
def test_every_mode_reaches_the_engine_unchanged(mode: str, tmp_path: Path) -> None:
    seen: list[EngineOptions] = []

    def factory(options: EngineOptions) -> StepEngine:
        seen.append(options)
        return StubEngine(engine_id="seen-step", engine_short="seen")

    registry = default_registry().copy()
    registry.register("seen-step", factory)
    cassettes = None
    if mode in ("record", "replay"):
        cassettes = Cassettes(
            tmp_path / "cassettes",
            name="seen",
            record=mode == "record",
            rerecord_command="record it again",
        )
    write_flow(tmp_path / "flows", "one", [step_yaml("ask")])
    outcome = Orchestrator(
        FlowRegistry(tmp_path / "flows"),
        runs_dir=tmp_path / "runs",
        deps=RunDeps(engines=registry),
        engine=EngineChoice(engine_id="seen-step", mode=mode, cassettes=cassettes),
    ).run(RunSpec(flows=("one",)))
    assert outcome.status == "succeeded", outcome.error
    (options,) = seen
    assert (options.mode, options.cassettes) == (mode, cassettes)
    assert options.env == {}  # no key is made up for any mode

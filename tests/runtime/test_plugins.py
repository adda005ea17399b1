"""The plugin manager: listeners side by side, one that raises, engines, entry points."""

from __future__ import annotations

import importlib.metadata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import swarm_runtime.entry_points
from swarm_runtime.contracts.check import validate_run_dir
from swarm_runtime.engines.registry import EngineOptions, EngineRegistry
from swarm_runtime.engines.stub import StubEngine
from swarm_runtime.errors import ConfigError
from swarm_runtime.flow.registry import FlowRegistry
from swarm_runtime.hookspecs import HOOKS
from swarm_runtime.orchestrator.plan import RunDeps, RunSpec
from swarm_runtime.orchestrator.run import Orchestrator
from swarm_runtime.orchestrator.state import RunOutcome
from swarm_runtime.plugins import (
    HOOK_PREFIX,
    SwarmPlugins,
    engine_registry,
    hookimpl,
    process_plugins,
)
from swarm_runtime.storage.store import read_event_log
from tests.conftest import SHIPPED_FLOWS, StepClock
from tests.runtime.helpers import normalised_tree


class Seen:
    """Hears everything a run tells its listeners."""

    def __init__(self) -> None:
        self.events: list[tuple[int, str]] = []
        self.results: list[str] = []
        self.ended: list[str] = []

    def swarm_event(self, event: dict[str, Any]) -> None:
        self.events.append((event["seq"], event["kind"]))

    def swarm_step_result(self, flow_key: str, result: Any) -> None:
        self.results.append(f"{flow_key}/{result.step_id}")

    def swarm_run_end(self, outcome: RunOutcome) -> None:
        self.ended.append(outcome.status)


class Broken:
    """Raises at the first step_start, and at the end."""

    def __init__(self) -> None:
        self.calls = 0

    def swarm_event(self, event: dict[str, Any]) -> None:
        self.calls += 1
        if event["kind"] == "step_start":
            raise BrokenPipeError("reader went away")

    def swarm_run_end(self) -> None:
        raise AssertionError("never heard: the listener is deaf for the rest of the run")


def _outside_pytest(*listeners: object) -> SwarmPlugins:
    """``listeners`` beside a process's plugins as ``swarm run`` has them: failures on stderr.

    (This session's own plugins say them in its summary once a test used ``flow_runner``.)
    """
    return SwarmPlugins().with_listeners(*listeners)


def _run(runs: Path, *listeners: object) -> RunOutcome:
    return Orchestrator(
        FlowRegistry(SHIPPED_FLOWS),
        runs_dir=runs,
        deps=RunDeps(clock=StepClock(), plugins=_outside_pytest(*listeners)),
    ).run(RunSpec(flows=("stepwise-demo",)))


def _steps_ended(outcome: RunOutcome) -> list[str]:
    events = read_event_log(outcome.path / "events.jsonl").events
    return [f"{e['flow_key']}/{e['step_id']}" for e in events if e["kind"] == "step_end"]


def _log(outcome: RunOutcome) -> list[tuple[int, str]]:
    events = read_event_log(outcome.path / "events.jsonl").events
    return [(event["seq"], event["kind"]) for event in events]


def test_a_listener_that_raises_is_reported_once_and_the_run_and_the_others_go_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before, broken, after = Seen(), Broken(), Seen()
    outcome = _run(tmp_path / "a", before, broken, after)
    assert outcome.status == "succeeded"
    assert validate_run_dir(outcome.path) == []
    for seen in (before, after):  # registered before and after it: both hear everything
        assert seen.events == _log(outcome)
        assert seen.results == _steps_ended(outcome)
        assert seen.ended == ["succeeded"]
    first_step_start = [kind for _, kind in _log(outcome)].index("step_start") + 1
    assert broken.calls == first_step_start  # deaf after it raised
    lines = capsys.readouterr().err.splitlines()
    assert lines == [
        f"swarm: warning: listener 'Broken' raised BrokenPipeError: reader went away at event "
        f"{first_step_start} (step_start) of run {outcome.run_id}; it hears no more of this run"
    ]
    # The run's files are those of a run nobody listened to.
    quiet = _run(tmp_path / "b")
    assert normalised_tree(outcome.path, outcome.run_id) == normalised_tree(
        quiet.path, quiet.run_id
    )


def test_a_listener_hears_each_run_anew(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = Broken()
    plugins = _outside_pytest(broken)
    orchestrator = Orchestrator(
        FlowRegistry(SHIPPED_FLOWS), runs_dir=tmp_path, deps=RunDeps(plugins=plugins)
    )
    for _ in range(2):
        assert orchestrator.run(RunSpec(flows=("stepwise-demo",))).status == "succeeded"
    assert capsys.readouterr().err.count("listener 'Broken' raised") == 2


def test_a_hook_function_with_an_argument_its_hook_lacks_is_refused_by_name() -> None:
    class Typo:
        def swarm_event(self, evnt: dict[str, Any]) -> None: ...

    with pytest.raises(
        ConfigError,
        match=r"plugin 'Typo': swarm_event\(evnt\) takes evnt, which the hook does not give "
        r"\(it gives: event, run_dir, followed\)",
    ):
        SwarmPlugins().register(Typo(), "Typo")


def test_a_hook_wrapper_is_refused() -> None:
    class Wraps:
        @hookimpl(wrapper=True)
        def swarm_event(self) -> Iterator[None]:
            yield

    with pytest.raises(ConfigError, match=r"swarm_event: hook wrappers are not supported"):
        SwarmPlugins().register(Wraps(), "wraps")


class Engines:
    """A plugin that adds an engine and replaces a built-in one."""

    @staticmethod
    def swarm_register_engines(registry: EngineRegistry) -> None:
        def loud(options: EngineOptions) -> StubEngine:
            return StubEngine(engine_id="loud-step", engine_short="loud", scenario=None)

        registry.register("loud-step", loud)
        registry.register("claude-step", loud, replace=True)


@pytest.fixture
def engines_plugin() -> Iterator[None]:
    plugin = Engines()
    process_plugins().register(plugin, "test-engines")
    yield
    process_plugins().unregister(plugin)


@pytest.mark.usefixtures("engines_plugin")
def test_a_plugin_adds_engines_and_may_replace_a_built_in_one() -> None:
    registry = engine_registry()
    assert "loud-step" in registry.ids()
    assert registry.create("claude-step", EngineOptions()).engine_id == "loud-step"


def test_an_entry_point_plugin_is_loaded_once_and_one_that_fails_is_left_out_and_said(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    group = [
        importlib.metadata.EntryPoint("good", f"{__name__}:Engines", "swarm_runtime"),
        importlib.metadata.EntryPoint("bad", "no_such_module_here:plugin", "swarm_runtime"),
    ]
    scanned: list[str] = []

    def entry_points(**select: Any) -> Any:
        scanned.append(select["group"])
        return group if select["group"] == "swarm_runtime" else []

    monkeypatch.setattr(swarm_runtime.entry_points, "entry_points", entry_points)
    plugins = SwarmPlugins(entry_points=True)
    assert plugins.names() == ["good"]
    assert plugins.names() == ["good"]
    assert scanned == ["swarm_runtime"]
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(
        "swarm: warning: plugin 'bad' (no_such_module_here:plugin, entry point group "
        "'swarm_runtime') is left out: ModuleNotFoundError: "
    )
    registry = EngineRegistry(extend=plugins.register_engines)
    assert "loud-step" in registry.ids()


def test_a_plugin_whose_engine_registration_fails_is_named() -> None:
    class Twice:
        def swarm_register_engines(self, registry: EngineRegistry) -> None:
            registry.register("claude-step", lambda options: None)  # type: ignore[arg-type,return-value]

    plugins = SwarmPlugins()
    plugins.register(Twice(), "twice")
    registry = EngineRegistry(extend=plugins.register_engines)
    registry.register("claude-step", lambda options: None)  # type: ignore[arg-type,return-value]
    with pytest.raises(ConfigError, match=r"plugin 'twice': swarm_register_engines failed: "):
        registry.ids()


def test_every_hook_begins_with_the_prefix_registration_looks_for() -> None:
    # A plugin's attributes named otherwise are never looked up when it is registered.
    assert all(hook.startswith(HOOK_PREFIX) for hook in HOOKS)

"""Stopping a run from outside: at the step boundary, or mid-step."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from swarm_runtime.contracts.check import validate_run_dir
from swarm_runtime.engines.base import StepContext, StepEngine, StepOutcome
from swarm_runtime.engines.registry import default_registry
from swarm_runtime.flow.registry import FlowRegistry
from swarm_runtime.orchestrator.plan import RunDeps, RunSpec
from swarm_runtime.orchestrator.run import Orchestrator
from swarm_runtime.storage.store import read_event_log
from tests.runtime.helpers import (
    events_of,
    kinds,
    listening,
)


class _Interrupting(StepEngine):
    engine_id = "claude-step"

    def run_step(self, ctx: StepContext) -> StepOutcome:
        raise KeyboardInterrupt


def test_ctrl_c_in_a_step_closes_the_step_and_the_run(loop_flows: Path, tmp_path: Path) -> None:
    engines = default_registry()
    engines.register("claude-step", lambda _options: _Interrupting(), replace=True)
    orchestrator = Orchestrator(
        FlowRegistry(loop_flows), runs_dir=tmp_path / "runs", deps=RunDeps(engines=engines)
    )
    outcome = orchestrator.run(RunSpec(flows=("loopy",)))
    assert outcome.interrupted and outcome.status == "stopped"
    events = events_of(outcome)
    assert [e["kind"] for e in events][-4:] == [
        "step_error",
        "run_stopping",
        "run_stopped",
        "run_completed",
    ]
    assert events[-4]["payload"]["error"] == "interrupted"
    assert events[-1]["payload"]["status"] == "stopped"
    assert validate_run_dir(outcome.path) == []


def test_interrupt_between_steps_stops_at_the_boundary(loop_flows: Path, tmp_path: Path) -> None:
    registry = FlowRegistry(loop_flows)
    holder: dict[str, Orchestrator] = {}

    def observer(event: dict[str, Any]) -> None:
        if event["kind"] == "step_end" and event["step_id"] == "author":
            assert holder["o"].interrupt() is False  # not inside an engine call

    orchestrator = Orchestrator(
        registry, runs_dir=tmp_path / "runs", deps=RunDeps(plugins=listening(observer))
    )
    holder["o"] = orchestrator
    outcome = orchestrator.run(RunSpec(flows=("loopy",)))
    assert outcome.interrupted and outcome.status == "stopped"
    assert kinds(outcome) == [
        "run_created",
        "run_started",
        "step_start",
        "step_end",
        "route_decision",
        "run_stopping",
        "run_stopped",
        "run_completed",
    ]
    assert validate_run_dir(outcome.path) == []


def test_the_first_request_stops_and_the_second_aborts_only_an_open_call() -> None:
    from swarm_runtime.orchestrator.checkpoint import Interrupted, RunControl

    control = RunControl()
    control.check_boundary()  # nothing asked: carry on
    assert control.interrupt() is False  # first request: stop at the next boundary
    with pytest.raises(Interrupted) as stopped:
        control.check_boundary()
    assert stopped.value.aborted is False
    assert control.interrupt() is False  # second request, no call open: nothing to cut short
    # A call about to start is aborted before it starts.
    with pytest.raises(Interrupted) as aborted, control.engine_call():
        raise AssertionError("the call must not run")
    assert aborted.value.aborted is True
    control.reset()
    with control.engine_call():
        assert control.in_engine
        assert control.interrupt() is False
        assert control.interrupt() is True  # the handler raises KeyboardInterrupt here
    assert not control.in_engine


@pytest.mark.parametrize("why", ["requested", "blocked"])
def test_meta_json_says_paused_only_once_the_log_says_run_paused(
    loop_flows: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, why: str
) -> None:
    from swarm_runtime.engines.scenario import Scenario
    from swarm_runtime.orchestrator.plan import EngineChoice
    from swarm_runtime.orchestrator.recorder import RunRecorder
    from swarm_runtime.storage.status import observed_status

    seen: list[tuple[str, str]] = []
    write_meta = RunRecorder.write_meta

    def watched(recorder: RunRecorder, summary: Any) -> None:
        write_meta(recorder, summary)
        # What a user reads at this instant: the status, and the log's last event.
        root = recorder.layout.root
        events = read_event_log(root / "events.jsonl").events
        seen.append((observed_status(root), events[-1]["kind"] if events else ""))

    monkeypatch.setattr(RunRecorder, "write_meta", watched)
    holder: dict[str, Orchestrator] = {}

    def observer(event: dict[str, Any]) -> None:
        if why == "requested" and event["kind"] == "step_end" and event["step_id"] == "author":
            holder["o"].control.request("pause", "lunch")

    blocked = {"critic": {"result_code": "blocked"}} if why == "blocked" else None
    orchestrator = Orchestrator(
        FlowRegistry(loop_flows),
        runs_dir=tmp_path / "runs",
        deps=RunDeps(plugins=listening(observer)),
        engine=EngineChoice(scenario=Scenario.from_mapping(blocked) if blocked else None),
    )
    holder["o"] = orchestrator
    outcome = orchestrator.run(RunSpec(flows=("loopy",)))
    assert outcome.paused
    paused = [last for status, last in seen if status == "paused"]
    assert paused == ["run_paused"]  # never "paused" while the log has not said so
    assert validate_run_dir(outcome.path) == []


def test_a_run_killed_between_run_paused_and_meta_json_is_seen_and_resumed_as_paused(
    loop_flows: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from swarm_runtime.orchestrator.assembly import orchestrator_for_run
    from swarm_runtime.orchestrator.recorder import RunRecorder
    from swarm_runtime.storage.status import observed_status
    from tests.runtime.helpers import Crash

    write_meta = RunRecorder.write_meta

    def killed_at_paused(recorder: RunRecorder, summary: Any) -> None:
        if summary["status"] == "paused":
            raise Crash  # the log says run_paused; meta.json still says running
        write_meta(recorder, summary)

    monkeypatch.setattr(RunRecorder, "write_meta", killed_at_paused)
    holder: dict[str, Orchestrator] = {}

    def observer(event: dict[str, Any]) -> None:
        if event["kind"] == "step_end" and event["step_id"] == "author":
            holder["o"].control.request("pause", "lunch")

    orchestrator = Orchestrator(
        FlowRegistry(loop_flows),
        runs_dir=tmp_path / "runs",
        deps=RunDeps(plugins=listening(observer)),
    )
    holder["o"] = orchestrator
    with pytest.raises(Crash):
        orchestrator.run(RunSpec(flows=("loopy",)))
    monkeypatch.undo()
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert observed_status(run_dir) == "paused"  # as its log says, not "crashed"
    resumed = orchestrator_for_run(run_dir, env={}).resume(run_dir)
    assert resumed.status == "succeeded"
    events = read_event_log(run_dir / "events.jsonl").events
    (again,) = [e for e in events if e["kind"] == "run_resumed"]
    assert again["payload"]["previous_status"] == "paused"
    assert validate_run_dir(run_dir) == []

"""Stopping a run from outside: at the step boundary, or mid-step."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from swarm_runtime.contracts.check import validate_run_dir
from swarm_runtime.engines.base import StepContext, StepEngine, StepOutcome
from swarm_runtime.engines.registry import default_registry
from swarm_runtime.flow.registry import FlowRegistry
from swarm_runtime.orchestrator.deps import RunDeps
from swarm_runtime.orchestrator.plan import RunSpec
from swarm_runtime.orchestrator.runner import Orchestrator
from tests.runtime.helpers import (
    events_of,
    kinds,
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
        registry, runs_dir=tmp_path / "runs", deps=RunDeps(observer=observer)
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
    from swarm_runtime.orchestrator.control import Interrupted, RunControl

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

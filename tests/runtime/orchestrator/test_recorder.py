"""The recorder, the only writer of run files: where runs go, and no secret in any file."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from swarm_runtime.contracts.check import validate_run_dir
from swarm_runtime.documents.run_events import ToolStart
from swarm_runtime.engines.base import (
    RunEvent,
    StepContext,
    StepEngine,
    StepOutcome,
    StepResult,
)
from swarm_runtime.engines.registry import EngineRegistry
from swarm_runtime.errors import (
    ConfigError,
    SwarmUsageError,
)
from swarm_runtime.flow.registry import FlowRegistry
from swarm_runtime.orchestrator.plan import RunDeps, RunSpec
from swarm_runtime.orchestrator.run import Orchestrator
from tests.conftest import CliResult
from tests.runtime.helpers import kinds, step_yaml, write_flow

SECRET = "sk-fake-recorder-0123456789"


def _flows(tmp_path: Path) -> FlowRegistry:
    flows = tmp_path / "flows"
    write_flow(flows, "one", [step_yaml("first"), step_yaml("second")])
    return FlowRegistry(flows)


def test_a_runs_dir_that_cannot_be_made_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a dir")
    orchestrator = Orchestrator(_flows(tmp_path), runs_dir=tmp_path / "file" / "runs")
    with pytest.raises(ConfigError, match=r"cannot create runs dir .*file/runs"):
        orchestrator.run(RunSpec(flows=("one",)))


def test_swarm_run_exits_2_when_the_runs_dir_cannot_be_made(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    (tmp_path / "file").write_text("not a dir")
    result = cli("run", "signal", "--runs-dir", str(tmp_path / "file" / "runs"))
    assert result.code == 2, result.err
    assert "cannot create runs dir" in result.err and "Traceback" not in result.err


def test_a_credential_in_the_params_never_reaches_spec_json(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    orchestrator = Orchestrator(_flows(tmp_path), runs_dir=runs, refuse_values=(SECRET,))
    with pytest.raises(SwarmUsageError, match=r"param 'token' holds the value of a credential"):
        orchestrator.run(RunSpec(flows=("one",), params={"token": SECRET}))
    assert not runs.exists() or not any(runs.iterdir())  # no run dir, not even an empty one


class LeakyToolEngine(StepEngine):
    """Reports a tool call whose input holds a secret, as a careless tool might."""

    def run_step(self, ctx: StepContext) -> StepOutcome:
        return StepOutcome(
            result=StepResult(step_id=ctx.step_id, status="succeeded", output="ok"),
            events=(RunEvent(ToolStart(tool="shell", input=f"curl -H {SECRET}")),),
            transcript=({"role": "assistant", "content": "ok"},),
        )


def test_a_credential_in_an_event_fails_the_run_without_being_written(tmp_path: Path) -> None:
    engines = EngineRegistry()
    engines.register("claude-step", lambda _options: LeakyToolEngine())
    orchestrator = Orchestrator(
        _flows(tmp_path),
        runs_dir=tmp_path / "runs",
        deps=RunDeps(engines=engines),
        refuse_values=(SECRET,),
    )
    outcome = orchestrator.run(RunSpec(flows=("one",)))
    assert outcome.status == "failed"
    assert "refusing to write a tool_start event to " in (outcome.error or "")
    assert kinds(outcome)[-1] == "run_completed"
    for path in outcome.path.rglob("*"):
        if path.is_file():
            assert SECRET not in path.read_text(), path
    assert validate_run_dir(outcome.path) == []

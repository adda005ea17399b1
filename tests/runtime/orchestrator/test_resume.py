"""Resuming after a crash at every window a kill can fall in, deterministically.

A crash is simulated in-process by raising a BaseException (as nothing catches it, the
run's files stay as a kill leaves them) at the instant under test: before a step's
checkpoint (its receipt is written, the checkpoint is not), just after it (the step's
``step_end``/``route_decision`` are not in the log), or with the last event line torn.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from swarm_runtime.contracts.check import validate_run_dir
from swarm_runtime.engines.scenario import Scenario
from swarm_runtime.errors import RunControlError
from swarm_runtime.flow.registry import FlowRegistry
from swarm_runtime.golden import normalise_value
from swarm_runtime.orchestrator.plan import EngineChoice, RunDeps, RunSpec
from swarm_runtime.orchestrator.run import Orchestrator
from swarm_runtime.storage.lock import RunLock
from swarm_runtime.storage.store import read_event_log
from tests.runtime.helpers import crash_at_checkpoint, listening

STEPS = 5  # loopy: author, critic (loops once), author, critic, ship


def _orchestrator(
    flows: Path,
    runs: Path,
    scenario: dict[str, Any] | None = None,
    observer: Callable[[dict[str, Any]], None] | None = None,
) -> Orchestrator:
    return Orchestrator(
        FlowRegistry(flows),
        runs_dir=runs,
        deps=RunDeps(sleep=lambda _s: None, plugins=listening(observer)),
        engine=EngineChoice(scenario=Scenario.from_mapping(scenario) if scenario else None),
    )


def _receipts(run_dir: Path) -> dict[str, Any]:
    return {
        str(p.relative_to(run_dir)): normalise_value(json.loads(p.read_text("utf-8")))
        for p in sorted(run_dir.glob("*/receipts/*.json"))
    }


def _transcripts(run_dir: Path) -> dict[str, Any]:
    return {
        str(p.relative_to(run_dir)): normalise_value(
            [json.loads(line) for line in p.read_text("utf-8").splitlines()]
        )
        for p in sorted(run_dir.glob("*/llm/*.jsonl"))
    }


def _routing(run_dir: Path) -> list[Any]:
    events = read_event_log(run_dir / "events.jsonl").events
    return [normalise_value(e["payload"]) for e in events if e["kind"] == "route_decision"]


@pytest.fixture
def baseline(loop_flows: Path, tmp_path: Path) -> Path:
    outcome = _orchestrator(loop_flows, tmp_path / "base").run(RunSpec(flows=("loopy",)))
    assert outcome.status == "succeeded"
    return outcome.path


def _crash_run(
    loop_flows: Path, runs: Path, monkeypatch: pytest.MonkeyPatch, at: int, *, before: bool
) -> Path:
    """Run until the ``at``-th checkpoint, and crash just before or just after writing it."""
    run = _orchestrator(loop_flows, runs).run
    crash_at_checkpoint(monkeypatch, at, before=before, run=lambda: run(RunSpec(flows=("loopy",))))
    (run_dir,) = runs.iterdir()
    return run_dir


@pytest.mark.parametrize("before", [True, False], ids=["before-checkpoint", "after-checkpoint"])
@pytest.mark.parametrize("at", range(1, STEPS + 1))
def test_a_crash_at_any_step_resumes_to_the_same_run(
    loop_flows: Path,
    tmp_path: Path,
    baseline: Path,
    monkeypatch: pytest.MonkeyPatch,
    at: int,
    before: bool,
) -> None:
    run_dir = _crash_run(loop_flows, tmp_path / "runs", monkeypatch, at, before=before)
    meta = json.loads((run_dir / "meta.json").read_text("utf-8"))
    assert meta["status"] == "running"
    outcome = _orchestrator(loop_flows, tmp_path / "runs").resume(run_dir)
    assert outcome.status == "succeeded", outcome.error
    assert _receipts(run_dir) == _receipts(baseline)
    assert _transcripts(run_dir) == _transcripts(baseline)
    assert _routing(run_dir) == _routing(baseline)
    events = read_event_log(run_dir / "events.jsonl").events
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    interrupted = [e for e in events if e["kind"] == "step_error"]
    # Before its checkpoint the step is not done: it is closed as interrupted and run
    # again. After it, the step is done: the resume appends its missing events.
    assert len(interrupted) == (1 if before else 0)
    if before:
        assert interrupted[0]["payload"]["error"] == "interrupted"
        moved = list((run_dir / "loopy" / "interrupted").iterdir())
        assert moved, "the interrupted execution's receipt and transcript are kept aside"
    assert validate_run_dir(run_dir) == []


def test_a_torn_last_line_is_cut_and_the_run_goes_on(
    loop_flows: Path, tmp_path: Path, baseline: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir = _crash_run(loop_flows, tmp_path / "runs", monkeypatch, 3, before=False)
    with (run_dir / "events.jsonl").open("a", encoding="utf-8") as log:
        log.write('{"kind": "step_st')  # the dead writer's half line
    outcome = _orchestrator(loop_flows, tmp_path / "runs").resume(run_dir)
    assert outcome.status == "succeeded"
    assert _routing(run_dir) == _routing(baseline)
    resumed = next(
        e for e in read_event_log(run_dir / "events.jsonl").events if e["kind"] == "run_resumed"
    )
    assert any("torn" in repair for repair in resumed["payload"]["repairs"])
    assert validate_run_dir(run_dir) == []


def test_stub_outcomes_survive_a_resume(loop_flows: Path, tmp_path: Path) -> None:
    # The scripted outcome of an execution is the same after a resume (counted per
    # execution from the checkpoint, not per call in the dead process).
    scenario = {
        "critic": [
            {"handoff": {"status": "NEEDS_WORK"}},
            {"handoff": {"status": "NEEDS_WORK"}},
            {"handoff": {"status": "VERIFIED"}},
        ]
    }
    first = _orchestrator(loop_flows, tmp_path / "a", scenario).run(RunSpec(flows=("loopy",)))
    runs = tmp_path / "b"

    def stop_after_the_first_critic(event: dict[str, Any]) -> None:
        if event["kind"] == "route_decision" and event["step_id"] == "critic":
            orchestrator.control.request("stop")

    orchestrator = _orchestrator(loop_flows, runs, scenario, stop_after_the_first_critic)
    stopped = orchestrator.run(RunSpec(flows=("loopy",)))
    assert stopped.status == "stopped"
    resumed = _orchestrator(loop_flows, runs, scenario).resume(stopped.path)
    assert resumed.status == "succeeded"
    assert _routing(stopped.path) == _routing(first.path)
    assert [r["decision"] for r in _routing(first.path)].count("loop") == 2
    assert validate_run_dir(stopped.path) == []


def test_a_finished_run_is_not_resumed(loop_flows: Path, baseline: Path) -> None:
    with pytest.raises(RunControlError, match="succeeded; only a paused, stopped or crashed"):
        _orchestrator(loop_flows, baseline.parent).resume(baseline)


def test_a_run_another_resumer_finished_meanwhile_is_not_resumed_again(
    loop_flows: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two resumers read a crashed run; the first runs it to the end while the second
    # waits for the lock. Once it holds the lock, the second sees a finished run.
    run_dir = _crash_run(loop_flows, tmp_path / "runs", monkeypatch, 2, before=False)
    real_acquire = RunLock.acquire
    raced = {"done": False}

    def acquire_after_the_other(self: RunLock, *args: Any, **kwargs: Any) -> None:
        if not raced["done"]:
            raced["done"] = True
            other = _orchestrator(loop_flows, tmp_path / "runs").resume(run_dir)
            assert other.status == "succeeded"
        real_acquire(self, *args, **kwargs)

    monkeypatch.setattr(RunLock, "acquire", acquire_after_the_other)
    with pytest.raises(RunControlError, match="succeeded; only a paused, stopped or crashed"):
        _orchestrator(loop_flows, tmp_path / "runs").resume(run_dir)
    assert raced["done"]
    kinds = [e["kind"] for e in read_event_log(run_dir / "events.jsonl").events]
    assert kinds.count("run_resumed") == 1 and kinds.count("run_completed") == 1
    assert validate_run_dir(run_dir) == []


DOUBLE_CRASHES = [
    (first, second, before)
    for first in range(1, STEPS + 1)
    for second in range(1, STEPS - first + 2)  # the checkpoints the first resume writes
    for before in (True, False)
]


@pytest.mark.parametrize(
    ("first", "second", "before"),
    DOUBLE_CRASHES,
    ids=[f"{a}-then-{b}{'-before' if c else '-after'}" for a, b, c in DOUBLE_CRASHES],
)
def test_a_run_crashed_and_crashed_again_while_resuming_ends_as_if_never_stopped(
    loop_flows: Path,
    tmp_path: Path,
    baseline: Path,
    monkeypatch: pytest.MonkeyPatch,
    first: int,
    second: int,
    before: bool,
) -> None:
    # The first crash leaves a step open (its receipt written, its checkpoint not); the
    # resume runs it again, then crashes too. The second resume counts each step's
    # executions from the log, where the interrupted one has a step_start of its own.
    runs = tmp_path / "runs"
    run_dir = _crash_run(loop_flows, runs, monkeypatch, first, before=True)
    resume = _orchestrator(loop_flows, runs).resume
    crash_at_checkpoint(monkeypatch, second, before=before, run=lambda: resume(run_dir))
    outcome = _orchestrator(loop_flows, runs).resume(run_dir)
    assert outcome.status == "succeeded", outcome.error
    assert sorted(_receipts(run_dir)) == sorted(_receipts(baseline))  # critic~1, not ~2
    assert _receipts(run_dir) == _receipts(baseline)
    assert _transcripts(run_dir) == _transcripts(baseline)
    assert _routing(run_dir) == _routing(baseline)
    assert validate_run_dir(run_dir) == []


def test_the_checkpoint_counts_each_flows_completed_steps(tmp_path: Path) -> None:
    """A resumed run's totals per flow start from the checkpoint's: each flow's count of
    completed steps is its own, and together they make the run's."""
    from tests.runtime.helpers import run_flows, step_yaml, write_flow

    flows = tmp_path / "flows"
    write_flow(flows, "one", [step_yaml("a"), step_yaml("b")])
    write_flow(flows, "two", [step_yaml("c")])
    outcome = run_flows(flows, tmp_path / "runs", ("one", "two"))
    checkpoint = json.loads((outcome.path / "checkpoint.json").read_text())
    per_flow = {k: v["steps_completed"] for k, v in checkpoint["flow_totals"].items()}
    assert per_flow == {"one": 2, "two": 1}
    assert checkpoint["totals"]["steps_completed"] == 3

"""One step execution: result codes, retries, budgets, tool events, what the prompt holds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from swarm_runtime.contracts.check import validate_run_dir
from swarm_runtime.engines.base import StepContext, StepEngine, StepOutcome
from swarm_runtime.engines.registry import default_registry
from swarm_runtime.flow.registry import FlowRegistry
from swarm_runtime.orchestrator.plan import RunDeps, RunSpec
from swarm_runtime.orchestrator.run import Orchestrator
from tests.conftest import SHIPPED_FLOWS
from tests.runtime.helpers import (
    events_of,
    kinds,
    receipt,
    route_decisions,
    run_flows,
    step_yaml,
    write_flow,
)
from tests.runtime.orchestrator.conftest import LOOP


class _Exploding(StepEngine):
    engine_id = "claude-step"

    def run_step(self, ctx: StepContext) -> StepOutcome:
        raise RuntimeError("boom in engine")


def test_fatal_step_fails_the_run_and_stops(tmp_path: Path) -> None:
    outcome = run_flows(
        SHIPPED_FLOWS,
        tmp_path / "runs",
        ("signal", "plan"),
        scenario={"signal/author_requirements": {"result_code": "fatal", "error": "model refused"}},
    )
    assert outcome.status == "failed"
    events = events_of(outcome)
    error = [e for e in events if e["kind"] == "step_error"]
    assert len(error) == 1 and error[0]["step_id"] == "author_requirements"
    assert error[0]["payload"]["error"] == "model refused"
    after = events[events.index(error[0]) + 1 :]
    assert [e["kind"] for e in after] == ["run_completed"]
    assert after[0]["payload"]["status"] == "failed"
    assert not (outcome.path / "plan").exists()
    meta = json.loads((outcome.path / "meta.json").read_text())
    assert meta["status"] == "failed" and "model refused" in meta["error"]
    assert validate_run_dir(outcome.path) == []


def test_retryable_is_retried_within_the_execution_then_succeeds(
    loop_flows: Path, tmp_path: Path
) -> None:
    slept: list[float] = []
    outcome = run_flows(
        loop_flows,
        tmp_path / "runs",
        ("loopy",),
        scenario={
            "author": [
                {"result_code": "retryable", "error": "overloaded", "failing_attempts": 2},
                {"text": "fine now"},
            ]
        },
        sleep=slept.append,
        jitter=lambda: 0.0,
    )
    assert outcome.status == "succeeded"
    assert slept == [0.25, 0.5]  # backoff (0.5 s x 2^n) / 2 with no jitter
    events = events_of(outcome)
    author = [e["kind"] for e in events if e["step_id"] == "author"][:5]  # first execution
    assert author == ["step_start", "log", "log", "step_end", "route_decision"]
    logs = [e["payload"] for e in events if e["kind"] == "log"]
    assert logs[0]["message"] == "retrying loopy/author in 0.250 s (attempt 2 of 3)"
    assert logs[1]["error"] == "overloaded" and logs[1]["retry_in_ms"] == 500
    first = json.loads((outcome.path / "loopy/receipts/author-worker~1.json").read_text())
    assert (first["attempt"], first["max_attempts"]) == (3, 3)
    latest = receipt(outcome, "loopy", "author", "worker")  # the loop's second execution
    assert latest["attempt"] == 1
    assert validate_run_dir(outcome.path) == []


def test_retry_after_is_respected(loop_flows: Path, tmp_path: Path) -> None:
    slept: list[float] = []
    run_flows(
        loop_flows,
        tmp_path / "runs",
        ("loopy",),
        scenario={
            "author": {
                "result_code": "retryable",
                "retry_after_ms": 2000,
                "error": "429",
                "failing_attempts": 1,
            }
        },
        sleep=slept.append,
        jitter=lambda: 0.0,
    )
    assert slept == [2.0, 2.0]  # each of the loop's two executions waits once


def test_scenario_outcomes_are_counted_per_execution_not_per_call(
    loop_flows: Path, tmp_path: Path
) -> None:
    # docs/engines.md#stub-scenarios: one outcome per execution. A retry is the same execution, so
    # it keeps its outcome: the list's second entry belongs to the loop's second execution.
    outcome = run_flows(
        loop_flows,
        tmp_path / "runs",
        ("loopy",),
        scenario={"author": [{"result_code": "retryable", "error": "503"}, {"text": "ok"}]},
        sleep=lambda _s: None,
    )
    assert outcome.status == "failed"
    assert outcome.error == "loopy/author: still failing after 3 attempt(s): 503"


def test_backoff_doubles_with_jitter_and_is_capped(loop_flows: Path, tmp_path: Path) -> None:
    flows = tmp_path / "flows"
    write_flow(flows, "flaky", [step_yaml("call", "max_attempts: 12")])
    slept: list[float] = []
    outcome = run_flows(
        flows,
        tmp_path / "runs",
        ("flaky",),
        scenario={"call": {"result_code": "retryable", "error": "503"}},
        sleep=slept.append,
        jitter=lambda: 1.0,
    )
    assert slept == [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0, 30.0, 30.0, 30.0]
    assert outcome.status == "failed"
    assert outcome.error == "flaky/call: still failing after 12 attempt(s): 503"
    assert kinds(outcome)[-2:] == ["step_error", "run_completed"]


def test_skipped_step_ends_skipped_and_routes_linearly(loop_flows: Path, tmp_path: Path) -> None:
    outcome = run_flows(
        loop_flows, tmp_path / "runs", ("loopy",), scenario={"critic": {"result_code": "skipped"}}
    )
    assert outcome.status == "succeeded"
    end = [e for e in events_of(outcome) if e["kind"] == "step_end" and e["step_id"] == "critic"]
    assert end[0]["payload"]["status"] == "skipped"
    rec = receipt(outcome, "loopy", "critic", "worker")
    assert rec["status"] == "succeeded" and rec["result_code"] == "skipped"
    assert route_decisions(outcome, "critic")[0]["to_step"] == "ship"


def test_engine_that_raises_still_completes_the_run(loop_flows: Path, tmp_path: Path) -> None:
    engines = default_registry()
    engines.register("claude-step", lambda _options: _Exploding(), replace=True)
    orchestrator = Orchestrator(
        FlowRegistry(loop_flows), runs_dir=tmp_path / "runs", deps=RunDeps(engines=engines)
    )
    outcome = orchestrator.run(RunSpec(flows=("loopy",)))
    assert outcome.status == "failed"
    assert kinds(outcome) == [
        "run_created",
        "run_started",
        "step_start",
        "step_error",
        "run_completed",
    ]
    assert "RuntimeError: boom in engine" in events_of(outcome)[3]["payload"]["error"]
    rec = receipt(outcome, "loopy", "author", "worker")
    assert rec["status"] == "failed" and "boom" in rec["error"]
    assert rec["result_code"] == "fatal"  # a failed step never says ok; a bug is not retried
    assert validate_run_dir(outcome.path) == []


def test_tool_events_lie_inside_their_step_and_reach_the_transcript(
    loop_flows: Path, tmp_path: Path
) -> None:
    # Bash is not the step's: its call fails, as the runtime answers a tool it does not allow.
    author = step_yaml("author") + "    tools: [Read]\n"
    write_flow(loop_flows, "loopy", [author, step_yaml("critic", LOOP), step_yaml("ship")])
    tools: list[dict[str, Any]] = [
        {"tool": "Read", "input": {"path": "a.py"}, "output": "print(1)", "success": True},
        {"tool": "Bash", "input": {"cmd": "false"}, "output": "exit 1", "success": False},
    ]
    outcome = run_flows(
        loop_flows, tmp_path / "runs", ("loopy",), scenario={"author": {"tools": tools}}
    )
    assert kinds(outcome)[2:8] == [
        "step_start",
        "tool_start",
        "tool_end",
        "tool_start",
        "tool_end",
        "step_end",
    ]
    lines = [
        json.loads(line)
        for line in (outcome.path / "loopy/llm/author-worker-claude.jsonl").read_text().splitlines()
    ]
    assert [line.get("role") or line.get("type") for line in lines] == [
        "system",
        "user",
        "tool_use",
        "tool_result",
        "tool_use",
        "tool_result",
        "assistant",
    ]
    assert lines[5]["success"] is False
    assert validate_run_dir(outcome.path) == []


def test_token_budget_exceeded_fails_the_step(tmp_path: Path) -> None:
    flows = tmp_path / "flows"
    write_flow(flows, "tight", [step_yaml("only", "budget: {tokens: 10}")])
    outcome = run_flows(
        flows,
        tmp_path / "runs",
        ("tight",),
        scenario={"only": {"tokens": {"prompt": 8, "completion": 5}}},
    )
    assert outcome.status == "failed"
    assert (
        outcome.error
        == "tight/only: budget_exceeded: step budget of 'tight/only': tokens 13 > limit 10"
    )


def test_teaching_notes_only_in_their_own_step_prompt(tmp_path: Path) -> None:
    outcome = run_flows(SHIPPED_FLOWS, tmp_path / "runs", ("build",))
    registry = FlowRegistry(SHIPPED_FLOWS)
    flow = registry.get("build")
    prompts = {}
    for step in flow.steps:
        path = outcome.path / "build/llm" / f"{step.id}-{step.primary_agent}-claude.jsonl"
        lines = [json.loads(x) for x in path.read_text().splitlines()]
        prompts[step.id] = lines[0]["content"] + lines[1]["content"]
    for step in flow.steps:
        for note in step.teaching_notes.all_notes():
            assert note in prompts[step.id]
            leaking = [
                other for other, text in prompts.items() if other != step.id and note in text
            ]
            assert not leaking, f"note of {step.id} leaks into {leaking}"

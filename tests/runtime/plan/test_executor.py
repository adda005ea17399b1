"""The executor (docs/plans.md): plan order, untouched payloads, CycleFail and FailFast, limits."""

from __future__ import annotations

import copy
import sqlite3
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest

from pytest_swarm.assertions import (
    assert_event_sequence,
    assert_receipt_contract,
    assert_step_results,
    assert_transcript_contract,
)
from pytest_swarm.run_record import RunRecord
from swarm_runtime.contracts.check import validate_run_dir
from swarm_runtime.errors import FailFast
from swarm_runtime.plan import CANONICAL_ORDER, KINDS, HandlerError, PlanRuntime, StepCall
from tests.runtime.plan.conftest import Recorder, plan_document

INPUT = "how do we rotate the postgres credentials?"


def _kinds(result_path: Any) -> list[tuple[str, str | None]]:
    record = RunRecord(result_path)
    return [(e["kind"], e["step_id"]) for e in record.event_dicts]


def test_a_cycle_runs_every_step_in_plan_order_and_passes_the_contract_suite(
    make_runtime: Callable[..., PlanRuntime], recorder: Recorder
) -> None:
    result = make_runtime().run_cycle(plan_document(), input=INPUT, session="s1")
    assert result.status == "succeeded", result.error
    order = [step["id"] for step in plan_document()["steps"]]
    assert recorder.steps == order
    record = RunRecord(result.path)
    assert_receipt_contract(record)
    assert_transcript_contract(record)
    assert_event_sequence(record)
    assert_step_results(record)
    assert validate_run_dir(result.path) == []
    kinds = [kind for kind, _ in _kinds(result.path)]
    assert kinds == ["run_created", "run_started"] + [
        "step_start",
        "step_end",
        "route_decision",
    ] * 8 + ["run_completed"]
    answer = record.receipts[("cycle", "answer")]
    assert (answer["engine"], answer["mode"], answer["model"]) == (
        "claude-step",
        "stub",
        "claude-stub",
    )
    assert answer["tokens"]["total"] > 0
    scan = record.receipts[("cycle", "scan")]
    assert (scan["engine"], scan["mode"], scan["provider"]) == ("plan-handler", "local", "none")
    assert record.summary["status"] == "succeeded" and record.summary["total_steps_executed"] == 8
    # What the model was asked is what the plan's template and the earlier results made.
    assert "Rotate the postgres credentials every 90 days" in result.results["answer"]["response"]
    assert result.results["scan"]["versionId"].startswith("sha256:")
    assert result.results["scan"]["fileCount"] == 2


def test_handlers_get_the_plans_payloads_and_changing_one_changes_nothing(
    make_runtime: Callable[..., PlanRuntime], recorder: Recorder
) -> None:
    plan = plan_document()
    before = copy.deepcopy(plan)
    base = recorder.registry.get("PromptAssemble")

    def meddling(call: StepCall) -> Mapping[str, Any]:
        answer = base(call)
        call.payload["template"] = "changed"  # its own copy: the plan must not see it
        call.payload["vars"].clear()
        return answer

    registry = recorder.registry.copy()
    registry.register("PromptAssemble", meddling, replace=True)
    runtime = make_runtime(handlers=registry)
    first = runtime.run_cycle(plan, input=INPUT, session="s1")
    second = runtime.run_cycle(plan, input=INPUT, session="s1")
    assert first.status == second.status == "succeeded"
    assert plan == before
    payloads = {step["id"]: step["payload"] for step in before["steps"]}
    assert [payload for _, payload in recorder.calls] == [
        payloads[step_id] for step_id in recorder.steps
    ]
    assert second.results["assemble"]["prompt"].startswith(f"Question: {INPUT}\n")


def test_results_so_far_are_read_only_and_only_the_earlier_ones(
    make_runtime: Callable[..., PlanRuntime], recorder: Recorder
) -> None:
    seen: list[list[str]] = []

    def tamper(call: StepCall) -> Mapping[str, Any]:
        seen.append(list(call.results))
        call.results["answer"]["response"] = "rewritten"  # type: ignore[index]
        return {"summary": "x", "keywords": []}

    registry = recorder.registry.copy()
    registry.register("SummarizeMemory", tamper, replace=True)
    result = make_runtime(handlers=registry).run_cycle(plan_document(), input=INPUT, session="s")
    assert seen == [["scan", "context", "recall", "assemble", "answer"]]
    assert result.status == "failed" and result.failed_step == "summarize"
    assert "TypeError in the SummarizeMemory handler" in (result.error or "")
    assert result.results["answer"]["response"] != "rewritten"


CYCLE_FAIL = [name for name in CANONICAL_ORDER if KINDS[name].failure == "CycleFail"]


@pytest.mark.parametrize("step_type", CYCLE_FAIL)
def test_a_cyclefail_step_fails_its_cycle_and_the_next_cycle_runs(
    make_runtime: Callable[..., PlanRuntime], recorder: Recorder, step_type: str
) -> None:
    base = recorder.registry.get(step_type)

    def flaky(call: StepCall) -> Mapping[str, Any]:
        if call.input == "first":
            raise HandlerError(f"{step_type} could not work on {call.input!r}")
        return base(call)

    registry = recorder.registry.copy()
    registry.register(step_type, flaky, replace=True)
    step_id = next(s["id"] for s in plan_document()["steps"] if s["type"] == step_type)
    first, second = make_runtime(handlers=registry).run(
        plan_document(), ["first", "second postgres"], session="s"
    )
    assert first.status == "failed" and first.failed_step == step_id
    assert f"step '{step_id}' ({step_type}) failed" in (first.error or "")
    assert second.status == "succeeded", second.error
    kinds = _kinds(first.path)
    assert ("step_error", step_id) in kinds
    assert kinds[-1] == ("run_completed", None)
    after = [s for s in kinds if s[1] and kinds.index(s) > kinds.index(("step_error", step_id))]
    assert after == []  # nothing ran after the failed step
    for result in (first, second):
        assert validate_run_dir(result.path) == []
        assert_receipt_contract(RunRecord(result.path))
        assert_transcript_contract(RunRecord(result.path))


@pytest.mark.parametrize(
    ("step_type", "table", "dropped"),
    [
        ("PersistMemory", "memories", "memories_fts"),
        ("PersistSession", "sessions", "session_cycles"),
    ],
)
def test_a_failfast_step_stops_the_runtime_and_leaves_no_partial_row(
    make_runtime: Callable[..., PlanRuntime], step_type: str, table: str, dropped: str
) -> None:
    runtime = make_runtime()
    runtime.memory()  # the store exists; its second table is then taken away, so the
    runtime.close()  # write fails half way through its transaction
    with sqlite3.connect(runtime.store_path) as db:
        db.execute(f"DROP TABLE {dropped}")
    plan = plan_document()  # without the optional recall, which needs the search table
    plan["steps"] = [step for step in plan["steps"] if step["id"] != "recall"]
    assemble = next(step for step in plan["steps"] if step["id"] == "assemble")
    assemble["payload"]["vars"]["memories"] = "(not looked up)"
    runtime = make_runtime()
    with pytest.raises(FailFast) as caught:
        runtime.run(plan, ["postgres first", "never run"], session="s")
    runtime.close()
    assert caught.value.step_type == step_type
    runs = sorted((runtime.runs_dir).iterdir())
    assert len(runs) == 1  # the second input never ran
    kinds = _kinds(runs[0])
    assert kinds[-1] == ("run_completed", None)
    completed = RunRecord(runs[0]).event_dicts[-1]["payload"]
    assert completed["status"] == "failed"  # as a flow run's: the step, then why
    assert completed["error"].startswith(f"cycle/{caught.value.step_id}: cannot store ")
    assert validate_run_dir(runs[0]) == []
    with sqlite3.connect(runtime.store_path) as db:  # reopened: the transaction left nothing
        assert db.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == 0


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()  # lets the worker a timed-out step left behind finish


def test_a_model_call_over_its_time_limit_fails_the_cycle_naming_it(
    make_runtime: Callable[..., PlanRuntime], recorder: Recorder, gate: threading.Event
) -> None:
    def hanging(call: StepCall) -> Mapping[str, Any]:
        gate.wait()
        return {"response": "too late"}

    registry = recorder.registry.copy()
    registry.register("LLMCall", hanging, replace=True)
    plan = plan_document()
    plan["metadata"]["timeouts"]["llmMs"] = 50
    result = make_runtime(handlers=registry).run_cycle(plan, input=INPUT, session="s")
    assert result.status == "failed" and result.failed_step == "answer"
    assert "took longer than metadata.timeouts.llmMs = 50 ms" in (result.error or "")
    assert validate_run_dir(result.path) == []


def test_a_handler_that_raises_timeout_error_in_time_fails_with_its_own_error(
    make_runtime: Callable[..., PlanRuntime], recorder: Recorder
) -> None:
    def impatient(call: StepCall) -> Mapping[str, Any]:
        raise TimeoutError("the vector index did not answer")

    registry = recorder.registry.copy()
    registry.register("LLMCall", impatient, replace=True)
    plan = plan_document()
    plan["metadata"]["timeouts"]["llmMs"] = 60_000
    result = make_runtime(handlers=registry).run_cycle(plan, input=INPUT, session="s")
    assert result.status == "failed" and result.failed_step == "answer"
    assert "TimeoutError in the LLMCall handler: the vector index did not answer" in (
        result.error or ""
    )
    assert "took longer than" not in (result.error or "")


def test_a_store_write_over_its_time_limit_is_failfast(
    make_runtime: Callable[..., PlanRuntime], recorder: Recorder, gate: threading.Event
) -> None:
    def hanging(call: StepCall) -> Mapping[str, Any]:
        gate.wait()
        return {"status": "created"}

    registry = recorder.registry.copy()
    registry.register("PersistSession", hanging, replace=True)
    plan = plan_document()
    plan["metadata"]["timeouts"]["ioMs"] = 50
    with pytest.raises(FailFast, match=r"metadata\.timeouts\.ioMs = 50 ms"):
        make_runtime(handlers=registry).run_cycle(plan, input=INPUT, session="s")


def test_a_prompt_over_its_budget_is_never_sent(
    make_runtime: Callable[..., PlanRuntime],
) -> None:
    plan = plan_document()
    plan["metadata"]["budgets"]["promptTokens"] = 5
    result = make_runtime().run_cycle(plan, input=INPUT, session="s")
    assert result.status == "failed" and result.failed_step == "answer"
    assert "over metadata.budgets.promptTokens = 5; the model was not called" in (
        result.error or ""
    )
    receipt = RunRecord(result.path).receipts[("cycle", "answer")]
    assert receipt["mode"] == "local" and receipt["tokens"]["total"] == 0


def test_memories_of_earlier_cycles_come_back_for_a_related_input_within_top_k(
    make_runtime: Callable[..., PlanRuntime],
) -> None:
    plan = plan_document()
    plan["metadata"]["topK"] = 2
    runtime = make_runtime()
    for text in ("postgres credentials rotation", "rotating postgres passwords", "postgres vault"):
        assert runtime.run_cycle(plan, input=text, session="s").status == "succeeded"
    later = runtime.run_cycle(plan, input="when were postgres credentials rotated?", session="s")
    items = later.results["recall"]["items"]
    assert len(items) == 2
    assert all("postgres" in item["summary"] for item in items)
    unrelated = runtime.run_cycle(plan, input="banana bread", session="s")
    assert unrelated.results["recall"]["items"] == []


def test_a_handler_result_that_breaks_its_contract_fails_the_step(
    make_runtime: Callable[..., PlanRuntime], recorder: Recorder
) -> None:
    registry = recorder.registry.copy()
    registry.register("RepoScan", lambda call: {"versionId": "x"}, replace=True)
    result = make_runtime(handlers=registry).run_cycle(plan_document(), input=INPUT, session="s")
    assert result.failed_step == "scan"
    assert "RepoScan handler's result breaks its contract: fileCount" in (result.error or "")


def test_a_model_call_whose_retry_after_is_past_the_cap_fails_the_step_without_waiting(
    tmp_path: Any, repo: Any, recorder: Recorder
) -> None:
    from swarm_runtime.engines.scenario import Scenario
    from swarm_runtime.orchestrator.plan import EngineChoice, RunDeps
    from swarm_runtime.plan import PlanPaths
    from tests.conftest import StepClock

    slept: list[float] = []
    scenario = {"answer": {"result_code": "retryable", "retry_after_ms": 3_600_000}}
    runtime = PlanRuntime(
        PlanPaths(runs_dir=tmp_path / "runs", store_path=tmp_path / "s.sqlite3", repo_root=repo),
        handlers=recorder.registry,
        deps=RunDeps(clock=StepClock(), sleep=slept.append),
        engine=EngineChoice(scenario=Scenario.from_mapping(scenario, source="s.yaml")),
    )
    try:
        result = runtime.run_cycle(plan_document(), input=INPUT, session="s1")
    finally:
        runtime.close()
    assert result.status == "failed"
    assert slept == []
    assert "the server asked to wait 3600 s" in (result.error or "")
    assert "max_retry_after_s = 30 s" in (result.error or "")


def test_a_retryable_model_answer_is_retried_with_the_kernels_one_backoff(
    tmp_path: Any, repo: Any, recorder: Recorder
) -> None:
    from swarm_runtime.engines.scenario import Scenario
    from swarm_runtime.orchestrator.plan import EngineChoice, RunDeps
    from swarm_runtime.plan import PlanPaths
    from tests.conftest import StepClock

    slept: list[float] = []
    scenario = {"answer": {"result_code": "retryable", "error": "busy", "failing_attempts": 1}}
    runtime = PlanRuntime(
        PlanPaths(runs_dir=tmp_path / "runs", store_path=tmp_path / "s.sqlite3", repo_root=repo),
        handlers=recorder.registry,
        deps=RunDeps(clock=StepClock(), sleep=slept.append, jitter=lambda: 0.5),
        engine=EngineChoice(scenario=Scenario.from_mapping(scenario, source="s.yaml")),
    )
    try:
        result = runtime.run_cycle(plan_document(), input=INPUT, session="s1")
    finally:
        runtime.close()
    assert result.status == "succeeded", result.error
    assert slept == [0.375]  # equal jitter: 0.5 s / 2 + 0.5 s / 2 * 0.5, as a flow step waits
    record = RunRecord(result.path)
    (retry,) = [e for e in record.event_dicts if e["kind"] == "log"]
    assert (retry["step_id"], retry["payload"]["attempt"], retry["payload"]["max_attempts"]) == (
        "answer",
        1,
        3,
    )
    assert retry["payload"]["retry_in_ms"] == 375
    answer = record.receipts[("cycle", "answer")]
    assert (answer["attempt"], answer["max_attempts"], answer["status"]) == (2, 3, "succeeded")
    assert recorder.steps.count("answer") == 2  # the handler ran again: one attempt each

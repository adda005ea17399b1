"""Each contract assertion fails on a deliberately broken run, naming file and step."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_swarm import assertions
from pytest_swarm.listeners import StepResults
from pytest_swarm.run_record import RunRecord
from swarm_runtime.flow.registry import FlowRegistry
from swarm_runtime.orchestrator.plan import EngineChoice, RunDeps, RunSpec
from swarm_runtime.orchestrator.run import Orchestrator
from swarm_runtime.plugins import process_plugins
from tests.conftest import SHIPPED_FLOWS


def _record(tmp_path: Path, flows: tuple[str, ...] = ("signal",)) -> RunRecord:
    registry = FlowRegistry(SHIPPED_FLOWS)
    results = StepResults()
    outcome = Orchestrator(
        registry,
        runs_dir=tmp_path / "runs",
        deps=RunDeps(plugins=process_plugins().with_listeners(results)),
    ).run(RunSpec(flows=flows))
    return RunRecord(outcome.path, flows=registry, results=results.results)


def _fresh(record: RunRecord) -> RunRecord:
    return RunRecord(record.path, flows=record.flows, results=record.results)


def _edit_events(record: RunRecord, change: Callable[[list[dict[str, Any]]], None]) -> RunRecord:
    path = record.path / "events.jsonl"
    events = [json.loads(line) for line in path.read_text().splitlines()]
    change(events)
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return _fresh(record)


def _edit_receipt(
    record: RunRecord, name: str, change: Callable[[dict[str, Any]], None]
) -> RunRecord:
    path = record.path / "signal" / "receipts" / name
    value = json.loads(path.read_text())
    change(value)
    path.write_text(json.dumps(value, indent=2, sort_keys=True))
    return _fresh(record)


def _renumber(events: list[dict[str, Any]]) -> None:
    for seq, event in enumerate(events, start=1):
        event["seq"] = seq


def test_a_good_run_passes_every_assertion(tmp_path: Path) -> None:
    assertions.assert_run(_record(tmp_path))


def test_missing_step_end(tmp_path: Path) -> None:
    record = _record(tmp_path)

    def drop(events: list[dict[str, Any]]) -> None:
        index = next(i for i, e in enumerate(events) if e["kind"] == "step_end")
        del events[index]
        _renumber(events)

    broken = _edit_events(record, drop)
    with pytest.raises(AssertionError) as info:
        assertions.assert_event_sequence(broken)
    message = str(info.value)
    assert "events.jsonl:4: route_decision without a step_end just before it" in message
    assert (
        "events.jsonl:5: step_start of 'frame_problem' while 'normalize_request' (line 3) is still open"
        in message
    )


def test_two_run_completed(tmp_path: Path) -> None:
    record = _record(tmp_path)

    def twice(events: list[dict[str, Any]]) -> None:
        events.append(dict(events[-1]))
        _renumber(events)

    broken = _edit_events(record, twice)
    with pytest.raises(AssertionError, match=r"events\.jsonl:\d+: run_completed appears 2 times"):
        assertions.assert_event_sequence(broken)


def test_unknown_event_kind(tmp_path: Path) -> None:
    record = _record(tmp_path)

    def rename(events: list[dict[str, Any]]) -> None:
        events[3]["kind"] = "step_teleported"

    with pytest.raises(AssertionError) as info:
        assertions.assert_event_sequence(_edit_events(record, rename))
    assert "events.jsonl:4:" in str(info.value) and "step_teleported" in str(info.value)


def test_negative_duration(tmp_path: Path) -> None:
    record = _record(tmp_path)
    name = "normalize_request-signal-normalizer.json"
    broken = _edit_receipt(record, name, lambda r: r.update(duration_ms=-5))
    with pytest.raises(AssertionError) as info:
        assertions.assert_receipt_contract(broken)
    message = str(info.value)
    assert f"signal/receipts/{name}:" in message
    assert "duration_ms" in message and "step signal/normalize_request" in message


def test_total_not_prompt_plus_completion(tmp_path: Path) -> None:
    record = _record(tmp_path)
    name = "normalize_request-signal-normalizer.json"
    broken = _edit_receipt(
        record, name, lambda r: r["tokens"].update(total=r["tokens"]["total"] + 1)
    )
    with pytest.raises(AssertionError) as info:
        assertions.assert_receipt_contract(broken)
    message = str(info.value)
    assert f"signal/receipts/{name}:" in message and "tokens.total" in message
    assert "step signal/normalize_request" in message


def test_route_decision_contradicting_the_handoff(tmp_path: Path) -> None:
    record = _record(tmp_path)
    line = 0

    def contradict(events: list[dict[str, Any]]) -> None:
        nonlocal line
        # The critic's first verdict is a failing value: it must loop; claim it advanced.
        index = next(
            i
            for i, e in enumerate(events)
            if e["kind"] == "route_decision" and e["step_id"] == "critique_requirements"
        )
        events[index]["payload"].update(decision="advance", to_step="author_bdd_scenarios")
        line = index + 1

    broken = _edit_events(record, contradict)
    with pytest.raises(AssertionError) as info:
        assertions.assert_routing(broken)
    message = str(info.value)
    assert f"events.jsonl:{line}: step 'signal/critique_requirements'" in message
    assert (
        "advance -> 'author_bdd_scenarios'" in message
        and "gives loop -> 'author_requirements'" in message
    )


def test_teaching_note_leaking_into_another_steps_prompt(tmp_path: Path) -> None:
    record = _record(tmp_path)
    flow = FlowRegistry(SHIPPED_FLOWS).get("signal")
    leaked = flow.steps[0].teaching_notes.constraints[0]
    victim = flow.steps[-1]
    path = record.path / "signal" / "llm" / f"{victim.id}-{victim.primary_agent}-claude.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    lines[0]["content"] += f"\n- {leaked}"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with pytest.raises(AssertionError) as info:
        assertions.assert_teaching_notes(_fresh(record))
    message = str(info.value)
    assert f"signal/llm/{path.name}: step 'signal/{victim.id}'" in message
    assert f"of step 'signal/{flow.steps[0].id}' leaks into its prompt" in message


def test_missing_own_teaching_note(tmp_path: Path) -> None:
    record = _record(tmp_path)
    flow = FlowRegistry(SHIPPED_FLOWS).get("signal")
    step = flow.steps[1]
    note = step.teaching_notes.inputs[0]
    path = record.path / "signal" / "llm" / f"{step.id}-{step.primary_agent}-claude.jsonl"
    path.write_text(path.read_text().replace(json.dumps(note)[1:-1], "something else"))
    with pytest.raises(AssertionError, match=f"step 'signal/{step.id}': its note .* is missing"):
        assertions.assert_teaching_notes(_fresh(record))


def test_step_result_invariants(tmp_path: Path) -> None:
    from swarm_runtime.engines.base import StepResult

    record = _record(tmp_path)
    record.results[0] = ("signal", StepResult(step_id="other_step", status="succeeded"))
    with pytest.raises(AssertionError, match="step_id does not match the step that ran"):
        assertions.assert_step_results(record)


def _scripted(tmp_path: Path, scenario: dict[str, Any]) -> RunRecord:
    from swarm_runtime.engines.scenario import Scenario

    registry = FlowRegistry(SHIPPED_FLOWS)
    outcome = Orchestrator(
        registry,
        runs_dir=tmp_path / "runs",
        engine=EngineChoice(scenario=Scenario.from_mapping(scenario)),
    ).run(RunSpec(flows=("signal",)))
    return RunRecord(outcome.path, flows=registry)


VERIFIED_AT_ONCE = {"critique_requirements": {"handoff": {"status": "VERIFIED"}}}


def test_mode_parity_lets_a_real_model_route_its_own_way(tmp_path: Path) -> None:
    reference = _record(tmp_path / "a")
    assertions.assert_mode_parity(_record(tmp_path / "b"), reference)
    # A model that passes the first draft: its loop runs once where the stub's ran twice.
    other_route = _scripted(tmp_path / "c", VERIFIED_AT_ONCE)
    assert len(other_route.executions[("signal", "critique_requirements")]) == 1
    assertions.assert_mode_parity(other_route, reference)


def test_mode_parity_compares_routes_only_where_a_scenario_scripts_them(tmp_path: Path) -> None:
    scripted = _scripted(tmp_path / "a", VERIFIED_AT_ONCE)
    with pytest.raises(
        AssertionError, match=r"step 'critique_requirements' \(scripted by the scenario\) routed"
    ):
        assertions.assert_mode_parity(_record(tmp_path / "b"), scripted)


def test_mode_parity_names_a_step_file_missing_and_a_break_of_the_grammar(tmp_path: Path) -> None:
    reference = _record(tmp_path / "a")
    record = _record(tmp_path / "b")
    (record.path / "signal" / "llm" / "normalize_request-signal-normalizer-claude.jsonl").unlink()
    with pytest.raises(AssertionError, match=r"step 'signal/normalize_request' wrote \["):
        assertions.assert_mode_parity(_fresh(record), reference)

    def no_route(events: list[dict[str, Any]]) -> None:
        events.remove(next(e for e in events if e["kind"] == "route_decision"))
        _renumber(events)

    broken = _edit_events(_record(tmp_path / "c"), no_route)
    with pytest.raises(AssertionError, match=r"step_start of step .* breaks the event grammar"):
        assertions.assert_mode_parity(broken, reference)


def test_a_run_that_went_elsewhere_than_its_route_decision(tmp_path: Path) -> None:
    record = _record(tmp_path)

    def swap(events: list[dict[str, Any]]) -> None:
        # The critic loops back to the author; claim the next step_start was another step.
        index = next(
            i
            for i, e in enumerate(events)
            if e["kind"] == "route_decision" and e["step_id"] == "critique_requirements"
        )
        following = next(e for e in events[index + 1 :] if e["kind"] == "step_start")
        following["step_id"] = "normalize_request"

    with pytest.raises(AssertionError) as info:
        assertions.assert_routing(_edit_events(record, swap))
    assert (
        "route_decision goes to 'author_requirements', but the next step that ran is signal/normalize_request"
        in str(info.value)
    )


def test_history_quoting_a_note_is_not_a_leak(tmp_path: Path) -> None:
    registry = FlowRegistry(SHIPPED_FLOWS)
    first = registry.get("signal").steps[0]
    quoted = first.teaching_notes.constraints[0]
    from swarm_runtime.engines.scenario import Scenario

    outcome = Orchestrator(
        registry,
        runs_dir=tmp_path / "runs",
        engine=EngineChoice(
            scenario=Scenario.from_mapping({first.id: {"text": f"Done.\n- {quoted}\n"}})
        ),
    ).run(RunSpec(flows=("signal",)))
    assertions.assert_teaching_notes(RunRecord(outcome.path, flows=registry))


def test_assert_run_without_flows_says_so_instead_of_skipping(tmp_path: Path) -> None:
    record = _record(tmp_path)
    with pytest.raises(AssertionError, match="need the flows"):
        assertions.assert_run(RunRecord(record.path))


def test_event_sequence_messages_name_the_step(tmp_path: Path) -> None:
    record = _record(tmp_path)

    def negative(events: list[dict[str, Any]]) -> None:
        end = next(e for e in events if e["kind"] == "step_end")
        end["payload"]["duration_ms"] = -1

    with pytest.raises(AssertionError) as info:
        assertions.assert_event_sequence(_edit_events(record, negative))
    assert "step_end.payload.duration_ms" in str(info.value)
    assert "(step signal/normalize_request)" in str(info.value)


def test_a_deleted_receipt_fails_the_receipt_contract(tmp_path: Path) -> None:
    record = _record(tmp_path)
    (receipt,) = sorted((record.path / "signal" / "receipts").glob("*.json"))[:1]
    receipt.unlink()
    with pytest.raises(AssertionError, match=r"step_end of signal/\w+ \(iteration 0\) has no"):
        assertions.assert_receipt_contract(_fresh(record))

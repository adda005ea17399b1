"""The contract suite holds a run's tool calls: paired, inside their step, in the transcript,
and never a tool the step does not allow (docs/contract/transcript.md, docs/contract/events.md,
docs/tools.md#tools).

Each test breaks one thing in a run dir by hand and checks the assertion names the file, the
line and the step; the CLI's ``swarm runs validate`` reports the same.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_swarm import assertions
from pytest_swarm.parity import parity_problems
from pytest_swarm.run_record import RunRecord
from swarm_runtime.flow.registry import FlowRegistry
from tests.conftest import CliResult
from tests.runtime.helpers import run_flows, step_yaml, write_flow

CALLS: list[dict[str, Any]] = [
    {"tool": "search", "input": {"q": "refund policy"}, "output": ["doc-7"]},
    {"tool": "fetch_page", "input": {"id": "doc-7"}, "output": "Refunds within 30 days."},
    # The model asks for a tool the step does not allow: answered with an error, not run.
    {"tool": "delete_all", "input": {}, "output": "not allowed here", "success": False},
]


def _record(tmp_path: Path, scenario: dict[str, Any] | None = None) -> RunRecord:
    flows = tmp_path / "flows"
    research = step_yaml("research") + "    tools: [search, fetch_page]\n"
    write_flow(flows, "support", [research, step_yaml("answer")])
    outcome = run_flows(
        flows, tmp_path / "runs", ("support",), scenario=scenario or {"research": {"tools": CALLS}}
    )
    assert outcome.status == "succeeded", outcome.error
    return RunRecord(outcome.path, flows=FlowRegistry(flows))


def _edit_events(record: RunRecord, change: Callable[[list[dict[str, Any]]], None]) -> RunRecord:
    path = record.path / "events.jsonl"
    events = [json.loads(line) for line in path.read_text().splitlines()]
    change(events)
    for seq, event in enumerate(events, start=1):
        event["seq"] = seq
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return RunRecord(record.path, flows=record.flows)


def _line_of(record: RunRecord, kind: str, tool: str) -> int:
    return next(
        number
        for number, event in enumerate(record.event_dicts, start=1)
        if event["kind"] == kind and event["payload"]["tool"] == tool
    )


TRANSCRIPT = "support/llm/research-worker-claude.jsonl"


def test_a_run_whose_step_calls_tools_passes_every_assertion(tmp_path: Path) -> None:
    record = _record(tmp_path)
    tools = [e["payload"]["tool"] for e in record.event_dicts if e["kind"] == "tool_start"]
    assert tools == ["search", "fetch_page", "delete_all"]
    assertions.assert_run(record)


def test_a_tool_start_without_its_tool_end(tmp_path: Path) -> None:
    record = _record(tmp_path)
    start = _line_of(record, "tool_start", "search")

    def drop_end(events: list[dict[str, Any]]) -> None:
        events.remove(next(e for e in events if e["kind"] == "tool_end"))

    with pytest.raises(AssertionError) as info:
        assertions.assert_event_sequence(_edit_events(record, drop_end))
    assert (
        f"events.jsonl:{start + 1}: tool_start while the call of tool 'search' (line {start}) "
        "has no tool_end; every tool_start is followed by its tool_end (step support/research)"
    ) in str(info.value)


def test_the_last_tool_call_left_open_at_step_end(tmp_path: Path) -> None:
    record = _record(tmp_path)
    start = _line_of(record, "tool_start", "delete_all")

    def drop_last_end(events: list[dict[str, Any]]) -> None:
        events.remove([e for e in events if e["kind"] == "tool_end"][-1])

    with pytest.raises(AssertionError) as info:
        assertions.assert_event_sequence(_edit_events(record, drop_last_end))
    assert (
        f"events.jsonl:{start + 1}: step_end while the call of tool 'delete_all' (line {start}) "
        "has no tool_end"
    ) in str(info.value)


def test_a_tool_end_naming_another_tool(tmp_path: Path) -> None:
    record = _record(tmp_path)
    end = _line_of(record, "tool_end", "fetch_page")

    def rename(events: list[dict[str, Any]]) -> None:
        events[end - 1]["payload"]["tool"] = "search"

    with pytest.raises(AssertionError) as info:
        assertions.assert_event_sequence(_edit_events(record, rename))
    assert (
        f"events.jsonl:{end}: tool_end of tool 'search' ends the call of tool 'fetch_page' "
        f"(line {end - 1})"
    ) in str(info.value)


def test_a_tool_event_outside_its_step(tmp_path: Path) -> None:
    record = _record(tmp_path)

    def move_out(events: list[dict[str, Any]]) -> None:
        calls = [e for e in events if e["kind"] in ("tool_start", "tool_end")][:2]
        for event in calls:
            events.remove(event)
        after = next(i for i, e in enumerate(events) if e["kind"] == "route_decision") + 1
        events[after:after] = calls

    with pytest.raises(AssertionError) as info:
        assertions.assert_event_sequence(_edit_events(record, move_out))
    assert "tool_start of 'research' outside any step execution" in str(info.value)


def test_a_transcript_missing_a_tool_call_of_its_events(tmp_path: Path) -> None:
    record = _record(tmp_path)
    path = record.path / TRANSCRIPT
    lines = path.read_text().splitlines()
    kept = [line for line in lines if '"fetch_page"' not in line]
    assert len(kept) == len(lines) - 2
    path.write_text("".join(line + "\n" for line in kept))
    with pytest.raises(AssertionError) as info:
        assertions.assert_tool_calls(RunRecord(record.path, flows=record.flows))
    message = str(info.value)
    assert f"{TRANSCRIPT}:5: step 'support/research' (iteration 0): its tool lines" in message
    assert "[tool_use search, tool_result search ok, tool_use delete_all," in message
    assert "tool_use fetch_page, tool_result fetch_page ok, tool_use delete_all" in message


def test_a_transcript_whose_tool_call_failed_where_its_event_succeeded(tmp_path: Path) -> None:
    record = _record(tmp_path)
    path = record.path / TRANSCRIPT
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    result = next(line for line in lines if line.get("type") == "tool_result")
    result["success"] = False
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with pytest.raises(
        AssertionError, match=r"tool_result search failed, .* tool_result search ok"
    ):
        assertions.assert_tool_calls(RunRecord(record.path, flows=record.flows))


def test_a_tool_the_step_does_not_allow_that_ran(tmp_path: Path) -> None:
    record = _record(tmp_path)
    end = _line_of(record, "tool_end", "delete_all")

    def succeeded(events: list[dict[str, Any]]) -> None:
        events[end - 1]["payload"]["success"] = True

    broken = _edit_events(record, succeeded)
    path = broken.path / TRANSCRIPT
    path.write_text(path.read_text().replace('"success": false', '"success": true'))
    with pytest.raises(AssertionError) as info:
        assertions.assert_tool_calls(broken)
    assert str(info.value).splitlines()[1:] == [
        f"  events.jsonl:{end}: step 'support/research': tool 'delete_all' ran and succeeded, "
        "but the step does not allow it (its tools: search, fetch_page); a call for a tool the "
        "step does not allow is answered with an error and never runs"
    ]


def test_a_step_without_tools_allows_none(tmp_path: Path) -> None:
    record = _record(tmp_path, {"answer": {"tools": [{"tool": "search", "input": {}}]}})
    with pytest.raises(AssertionError, match=r"tool 'search' ran and succeeded, .*its tools: none"):
        assertions.assert_run(record)


def test_a_retried_step_s_transcript_holds_the_calls_of_its_last_attempt(tmp_path: Path) -> None:
    retried = {"tools": CALLS[:1], "result_code": "retryable", "failing_attempts": 1}
    record = _record(tmp_path, {"research": retried})
    starts = [e for e in record.event_dicts if e["kind"] == "tool_start"]
    assert len(starts) == 2  # one call per attempt; the transcript is the second attempt's
    assertions.assert_run(record)


def test_swarm_runs_validate_reports_a_broken_tool_call(
    tmp_path: Path, cli: Callable[..., CliResult]
) -> None:
    record = _record(tmp_path / "project")
    assert cli("runs", "validate", str(record.path)).code == 0
    start = _line_of(record, "tool_start", "search")

    def drop_end(events: list[dict[str, Any]]) -> None:
        events.remove(next(e for e in events if e["kind"] == "tool_end"))

    _edit_events(record, drop_end)
    result = cli("runs", "validate", str(record.path))
    assert result.code == 1
    assert f"tool_start while the call of tool 'search' (line {start}) has no tool_end" in (
        result.out + result.err
    )
    assert f"{TRANSCRIPT}:4: step 'support/research' (iteration 0)" in result.out + result.err


def test_mode_parity_names_the_step_whose_scripted_tool_calls_differ(tmp_path: Path) -> None:
    reference = _record(tmp_path / "stub")
    record = _record(tmp_path / "other")
    assertions.assert_mode_parity(record, reference)

    def no_fetch(events: list[dict[str, Any]]) -> None:
        events[:] = [e for e in events if (e.get("payload") or {}).get("tool") != "fetch_page"]

    broken = _edit_events(record, no_fetch)
    path = broken.path / TRANSCRIPT
    path.write_text(
        "".join(f"{line}\n" for line in path.read_text().splitlines() if "fetch_page" not in line)
    )
    assertions.assert_tool_calls(broken)  # a run of its own that holds together
    with pytest.raises(AssertionError) as info:
        assertions.assert_mode_parity(broken, reference)
    assert str(info.value).splitlines()[1:] == [
        "  events.jsonl: step 'support/research' (its tools scripted by the scenario), "
        "execution 1: called ['search', 'delete_all'], the stub run ['search', 'fetch_page', "
        "'delete_all']"
    ]


def test_mode_parity_lets_a_model_call_tools_its_own_way_where_nothing_scripts_them(
    tmp_path: Path,
) -> None:
    unscripted = _record(tmp_path / "stub", {"answer": {"text": "Done."}})
    assertions.assert_mode_parity(_record(tmp_path / "other"), unscripted)


def test_a_log_line_while_a_tool_runs_and_a_step_failing_mid_call_keep_to_the_grammar(
    tmp_path: Path,
) -> None:
    reference = _record(tmp_path / "stub")
    record = _record(tmp_path / "other")
    start = _line_of(record, "tool_start", "search")

    def warn_mid_call(events: list[dict[str, Any]]) -> None:
        warning = {**events[start - 1], "kind": "log", "payload": {"message": "search is slow"}}
        events.insert(start, warning)

    warned = _edit_events(record, warn_mid_call)
    assertions.assert_event_sequence(warned)
    assertions.assert_mode_parity(warned, reference)

    def fail_mid_call(events: list[dict[str, Any]]) -> None:
        cut = next(i for i, e in enumerate(events) if e["kind"] == "tool_end")
        error = {**events[cut], "kind": "step_error", "agent_key": "worker"}
        error["payload"] = {
            "status": "failed",
            "duration_ms": 5,
            "error": "past its deadline",
            "engine": "claude-step",
        }
        events[cut:] = [
            error,
            {**events[-1], "payload": {**events[-1]["payload"], "status": "failed"}},
        ]

    failed = _edit_events(_record(tmp_path / "failed"), fail_mid_call)
    assertions.assert_event_sequence(failed)  # a step_error may end a step mid-call
    problems = parity_problems(failed, reference)  # its route and calls differ, its grammar not
    assert problems and not [p for p in problems if "event grammar" in p]

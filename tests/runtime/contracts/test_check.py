"""``swarm runs validate`` / validate_run_dir: every violation with its file and line."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from swarm_runtime.contracts.check import validate_run_dir
from swarm_runtime.orchestrator.plan import RunDeps
from swarm_runtime.orchestrator.state import RunOutcome
from tests.conftest import SHIPPED_FLOWS, CliResult
from tests.runtime.helpers import listening, run_flows


@pytest.fixture
def run(tmp_path: Path) -> RunOutcome:
    outcome = run_flows(SHIPPED_FLOWS, tmp_path / "runs", ("signal",))
    assert validate_run_dir(outcome.path) == []
    return outcome


def _event_lines(outcome: RunOutcome) -> list[str]:
    return (outcome.path / "events.jsonl").read_text().splitlines()


def _write_events(outcome: RunOutcome, lines: list[str]) -> None:
    (outcome.path / "events.jsonl").write_text("\n".join(lines) + "\n")


def test_flags_timestamp_with_offset_and_z(run: RunOutcome) -> None:
    lines = _event_lines(run)
    event = json.loads(lines[4])
    event["ts"] = "2025-12-09T10:20:43.186199+00:00Z"
    lines[4] = json.dumps(event)
    _write_events(run, lines)
    found = [str(v) for v in validate_run_dir(run.path)]
    assert any(
        v.startswith("events.jsonl:5: ")
        and "2025-12-09T10:20:43.186199+00:00Z" in v
        and "exactly one trailing 'Z'" in v
        for v in found
    ), found


def test_flags_receipt_timestamp_with_offset_and_z(run: RunOutcome) -> None:
    path = next((run.path / "signal" / "receipts").glob("*.json"))
    text = path.read_text()
    value = json.loads(text)
    path.write_text(text.replace(value["started_at"], "2025-12-09T10:20:43.186199+00:00Z"))
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if '"started_at"' in ln)
    found = [str(v) for v in validate_run_dir(run.path)]
    rel = f"signal/receipts/{path.name}"
    assert any(v.startswith(f"{rel}:{line}: started_at") for v in found), found


def test_flags_tokens_total_not_sum(run: RunOutcome) -> None:
    path = next((run.path / "signal" / "receipts").glob("*.json"))
    value = json.loads(path.read_text())
    value["tokens"]["total"] += 7
    path.write_text(json.dumps(value, indent=2, sort_keys=True))
    lines = path.read_text().splitlines()
    tokens_line = next(i for i, ln in enumerate(lines, 1) if '"tokens"' in ln)
    found = [str(v) for v in validate_run_dir(run.path)]
    rel = f"signal/receipts/{path.name}"
    hits = [v for v in found if v.startswith(f"{rel}:") and "tokens.total" in v]
    assert hits, found
    line = int(hits[0].split(":")[1])
    assert tokens_line <= line <= tokens_line + 4


def test_flags_step_with_two_step_starts(run: RunOutcome) -> None:
    lines = _event_lines(run)
    start = next(i for i, ln in enumerate(lines) if '"step_start"' in ln)
    duplicate = json.loads(lines[start])
    lines.insert(start + 1, json.dumps(duplicate))
    renumbered = []
    for seq, text in enumerate(lines, 1):
        event = json.loads(text)
        event["seq"] = seq
        renumbered.append(json.dumps(event))
    _write_events(run, renumbered)
    found = [str(v) for v in validate_run_dir(run.path)]
    assert any(
        v.startswith(f"events.jsonl:{start + 2}: ") and "second step_start" in v for v in found
    ), found


def test_flags_run_without_run_completed(run: RunOutcome) -> None:
    lines = _event_lines(run)
    _write_events(run, lines[:-1])
    found = [str(v) for v in validate_run_dir(run.path)]
    assert (
        f"events.jsonl:{len(lines) - 1}: the run has no run_completed event (it must end every run)"
        in found
    )


def test_flags_seq_gap_unknown_kind_and_two_run_completed(run: RunOutcome) -> None:
    lines = _event_lines(run)
    unknown = json.loads(lines[3])
    unknown["kind"] = "step_teleported"
    lines[3] = json.dumps(unknown)
    lines.append(lines[-1].replace(f'"seq": {len(lines)}', f'"seq": {len(lines) + 5}'))
    _write_events(run, lines)
    found = [str(v) for v in validate_run_dir(run.path)]
    assert any(v.startswith("events.jsonl:4: ") and "step_teleported" in v for v in found), found
    assert any("seq jumps" in v for v in found), found
    assert any("run_completed appears 2 times" in v for v in found), found


def test_cli_validate_exit_codes_and_output(run: RunOutcome, cli: Callable[..., CliResult]) -> None:
    ok = cli("runs", "validate", str(run.path))
    assert ok.code == 0 and "no violations" in ok.out
    _write_events(run, _event_lines(run)[:-1])
    bad = cli("runs", "validate", str(run.path))
    assert bad.code == 1
    assert f"{run.path}/events.jsonl:" in bad.out
    missing = cli("runs", "validate", "run-20990101-000000-zzzzzz")
    assert missing.code == 2 and "no run" in missing.err


def test_validates_a_run_written_by_another_tool(tmp_path: Path) -> None:
    """A directory from elsewhere: missing files and wrong shapes are named, not crashed on."""
    root = tmp_path / "foreign"
    (root / "flow" / "receipts").mkdir(parents=True)
    (root / "events.jsonl").write_text('{"kind": "run_created"}\nnot json\n{"kind": "x"}\n')
    (root / "flow" / "receipts" / "s-a.json").write_text("{broken")
    found = [str(v) for v in validate_run_dir(root)]
    assert "spec.json: missing" in found
    assert "meta.json: missing" in found
    assert any(v.startswith("events.jsonl:2: ") for v in found), found
    assert any(v.startswith("flow/receipts/s-a.json:1: not valid JSON") for v in found), found


def test_validate_survives_foreign_shapes_and_reports_everything(tmp_path: Path) -> None:
    outcome = run_flows(SHIPPED_FLOWS, tmp_path / "runs", ("stepwise-demo",))
    path = outcome.path / "events.jsonl"
    lines = path.read_text().splitlines()
    odd = json.loads(lines[4])
    odd["payload"] = [1, 2]
    odd["run_id"] = ["x"]
    lines[4] = json.dumps(odd)
    lines[6] = "{not json"
    path.write_text("\n".join(lines[:-1]) + "\n")  # and no run_completed
    found = [str(v) for v in validate_run_dir(outcome.path)]
    assert any(v.startswith("events.jsonl:5: ") for v in found), found
    # Our words and the line; the json module's reason in the parentheses is not asserted.
    assert any(v.startswith("events.jsonl:7: not valid JSON (") for v in found), found
    assert any("no run_completed" in v for v in found), found


def test_each_attempt_of_a_run_ends_with_exactly_one_run_completed(tmp_path: Path) -> None:
    """A stopped attempt has its run_completed, the resumed one its own (rule 4 of
    docs/contract/events.md#where-events-may-stand)."""
    from pytest_swarm import assertions
    from pytest_swarm.run_record import RunRecord
    from swarm_runtime.flow.registry import FlowRegistry
    from swarm_runtime.orchestrator.plan import RunSpec
    from swarm_runtime.orchestrator.run import Orchestrator
    from swarm_runtime.storage.store import read_event_log
    from tests.conftest import SHIPPED_FLOWS

    registry = FlowRegistry(SHIPPED_FLOWS)
    stop_after_first = {"n": 0}

    def observe(event: dict[str, object]) -> None:
        if event["kind"] == "route_decision" and not stop_after_first["n"]:
            stop_after_first["n"] = 1
            orchestrator.control.request("stop", "stopped by the test")

    orchestrator = Orchestrator(
        registry,
        runs_dir=tmp_path / "runs",
        deps=RunDeps(sleep=lambda _s: None, plugins=listening(observe)),
    )
    stopped = orchestrator.run(RunSpec(flows=("signal",)))
    assert stopped.status == "stopped"
    resumed = Orchestrator(registry, runs_dir=tmp_path / "runs").resume(stopped.path)
    assert resumed.status == "succeeded"
    events = read_event_log(stopped.path / "events.jsonl").events
    assert [e["kind"] for e in events].count("run_completed") == 2  # one per attempt
    assert validate_run_dir(stopped.path) == []
    assertions.assert_event_sequence(RunRecord(stopped.path, flows=registry))
    # Two in one attempt are one too many, for validate and the contract suite alike.
    path = stopped.path / "events.jsonl"
    lines = path.read_text().splitlines()
    last = json.loads(lines[-1])
    lines.append(json.dumps({**last, "seq": last["seq"] + 1}))
    path.write_text("\n".join(lines) + "\n")
    assert any("run_completed" in str(v) for v in validate_run_dir(stopped.path))
    with pytest.raises(AssertionError, match="run_completed"):
        assertions.assert_event_sequence(RunRecord(stopped.path, flows=registry))

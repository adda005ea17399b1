"""The stub engine: deterministic replies, scripted by scenarios."""

from __future__ import annotations

from pathlib import Path

from tests.runtime.helpers import events_of, run_flows, step_yaml, write_flow


def test_scripted_text_with_its_own_handoff_is_used_as_is(tmp_path: Path) -> None:
    flows = tmp_path / "flows"
    branch = "routing: {kind: branch, branch_field: decision, branches: {GO: two, STOP: three}}"
    write_flow(
        flows,
        "b",
        [step_yaml("one", branch), step_yaml("two", "routing: {next: three}"), step_yaml("three")],
    )
    outcome = run_flows(
        flows,
        tmp_path / "runs",
        ("b",),
        scenario={"one": {"text": "done\n```handoff\ndecision: STOP\n```"}},
    )
    started = [e["step_id"] for e in events_of(outcome) if e["kind"] == "step_start"]
    assert started == ["one", "three"]

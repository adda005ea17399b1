"""Facts (docs/flows.md#facts): declared by marker lines or the handoff, journalled per step,
superseded by id, announced by events, and carried by the prompts that follow."""

from __future__ import annotations

import json
from pathlib import Path

from swarm_runtime.contracts.check import validate_run_dir
from swarm_runtime.orchestrator.state import MAX_FACT_CHARS, declared
from tests.runtime.helpers import events_of, run_flows, step_yaml, write_flow


def test_marker_lines_and_the_handoff_declare_facts_and_nothing_else_does() -> None:
    text = (
        "Done.\n[REQ-001] UTF-8 only.\n  [REQ-002] indented: not a marker\n"
        "[XYZ-001] not a kind\n[REQ-01a] not an id\n[SOL-7]   padded  \n"
    )
    handoff = {
        "facts": [
            {"id": "DEC-001", "text": "Stream it."},
            {"id": "dec-002", "text": "lower case"},
            {"id": "ASM-001", "text": ""},
            {"id": "ASM-002"},
            "TRC-001 a bare string",
            {"id": "TRC-002", "text": "x" * (MAX_FACT_CHARS + 10)},
        ]
    }
    assert declared(text, handoff) == [
        ("REQ-001", "UTF-8 only."),
        ("SOL-7", "padded"),
        ("DEC-001", "Stream it."),
        ("TRC-002", "x" * MAX_FACT_CHARS + "[TRUNCATED: 10 of 2010 chars cut]"),  # visibly
    ]
    assert declared("no facts", {"facts": "REQ-001 not a list"}) == []


def test_facts_are_journalled_superseded_announced_and_prompted(tmp_path: Path) -> None:
    flows = tmp_path / "flows"
    write_flow(flows, "f", [step_yaml("a"), step_yaml("b"), step_yaml("c")])
    outcome = run_flows(
        flows,
        tmp_path / "runs",
        scenario={
            "a": {"text": "[REQ-001] first\n[ASM-001] assumed"},
            "b": {"text": "ok", "handoff": {"facts": [{"id": "REQ-001", "text": "second"}]}},
        },
    )
    assert outcome.status == "succeeded", outcome.error
    journal = [json.loads(x) for x in (outcome.path / "facts.jsonl").read_text().splitlines()]
    assert [(e["id"], e["text"], e["step"], e["seq"]) for e in journal] == [
        ("REQ-001", "first", "a", 1),
        ("ASM-001", "assumed", "a", 2),
        ("REQ-001", "second", "b", 3),
    ]
    noted = [
        (e["kind"], e["step_id"], e["payload"])
        for e in events_of(outcome)
        if e["kind"] in ("facts_updated", "assumption_recorded")
    ]
    assert noted == [
        (
            "facts_updated",
            "a",
            {
                "added": ["REQ-001", "ASM-001"],
                "updated": [],
                "added_count": 2,
                "updated_count": 0,
                "total": 2,
            },
        ),
        ("assumption_recorded", "a", {"id": "ASM-001", "text": "assumed"}),
        (
            "facts_updated",
            "b",
            {"added": [], "updated": ["REQ-001"], "added_count": 0, "updated_count": 1, "total": 2},
        ),
    ]

    def user_prompt(step: str) -> str:
        (path,) = (outcome.path / "f" / "llm").glob(f"{step}-*.jsonl")
        lines = [json.loads(x) for x in path.read_text().splitlines()]
        return next(line["content"] for line in lines if line["role"] == "user")

    assert "## Facts" not in user_prompt("a")
    assert "## Facts\n[REQ-001] first\n[ASM-001] assumed" in user_prompt("b")
    assert "## Facts\n[REQ-001] second\n[ASM-001] assumed" in user_prompt("c")
    assert validate_run_dir(outcome.path) == []


def test_a_run_without_facts_writes_no_journal(tmp_path: Path) -> None:
    flows = tmp_path / "flows"
    write_flow(flows, "f", [step_yaml("a")])
    outcome = run_flows(flows, tmp_path / "runs")
    assert not (outcome.path / "facts.jsonl").exists()
    checkpoint = json.loads((outcome.path / "checkpoint.json").read_text())
    assert "journals" not in checkpoint

"""Prompts (docs/flows.md#prompt): persona, step header, teaching notes, and the handoff to
declare."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from swarm_runtime.storage.store import encode_line
from tests.runtime.helpers import run_flows, step_yaml, write_flow


def test_prompt_lines_are_byte_identical_to_the_line_encoder(tmp_path: Path) -> None:
    flows = tmp_path / "flows"
    write_flow(flows, "esc", [step_yaml("one"), step_yaml("two"), step_yaml("three")])
    outcome = run_flows(
        flows,
        tmp_path / "runs",
        ("esc",),
        scenario={"one": {"text": 'quote " backslash \\ tab \t nl \n ctrl \x01 é ☃'}},
    )
    for name in ("one", "two", "three"):
        path = outcome.path / "esc" / "llm" / f"{name}-worker-claude.jsonl"
        for line in path.read_text(encoding="utf-8").splitlines(keepends=True):
            assert encode_line(json.loads(line)) == line


def test_prompt_has_role_notes_sections_and_handoff_fields(tmp_path: Path) -> None:
    flows = tmp_path / "flows"
    loop = "routing:\n  kind: microloop\n  loop_target: one\n  loop_condition_field: verdict\n  loop_success_values: [PASS, OK]\n"
    write_flow(flows, "p", [step_yaml("one"), step_yaml("two", loop)])
    (flows / "agents").mkdir()
    (flows / "agents" / "worker.md").write_text("You are the worker persona.\n")
    outcome = run_flows(flows, tmp_path / "runs", ("p",))
    line = json.loads((outcome.path / "p/llm/two-worker-claude.jsonl").read_text().splitlines()[0])
    system = line["content"]
    assert system.startswith("You are the worker persona.")
    assert "## Step 2 of 2: two" in system and "Role: Does two." in system
    for heading in ("## Inputs", "## Outputs", "## Emphasizes", "## Constraints"):
        assert heading in system
    # Every value the routing reacts to is named, with what it does: a live model must
    # know that it may declare a failing verdict and that the work then goes back.
    assert (
        "- verdict: PASS or OK when the work passes: it goes on to the end of the flow; any "
        "other value (for example NEEDS_WORK) sends it back to 'one' for another pass (at "
        "most 5 passes in all)" in system
    )
    assert "- can_further_iteration_help: yes or no; no when another pass" in system
    assert "```handoff\nverdict: PASS\ncan_further_iteration_help: yes\n```" in system


def test_a_branch_prompt_names_every_key_and_where_it_goes(tmp_path: Path) -> None:
    flows = tmp_path / "flows"
    branch = "routing: {kind: branch, branch_field: decision, branches: {GO: two, STOP: three}}"
    write_flow(flows, "b", [step_yaml("one", branch), step_yaml("two"), step_yaml("three")])
    outcome = run_flows(flows, tmp_path / "runs", ("b",))
    line = json.loads((outcome.path / "b/llm/one-worker-claude.jsonl").read_text().splitlines()[0])
    assert (
        "- decision: one of GO (goes to 'two'), STOP (goes to 'three'); any other value fails "
        "the step" in line["content"]
    )


def test_a_flow_of_many_steps_keeps_only_the_newest_system_prompts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from swarm_runtime.flow.registry import FlowRegistry
    from swarm_runtime.orchestrator import context

    monkeypatch.setattr(context, "MAX_CACHED_SYSTEM_PROMPTS", 3)
    write_flow(tmp_path / "flows", "big", [step_yaml(f"s{n}") for n in range(6)])
    registry = FlowRegistry(tmp_path / "flows")
    flow = registry.get("big")
    parts = context.PromptParts(registry, {}, registry.system_prompts)
    for again in (False, True):  # the second pass finds evicted prompts made anew, right
        for number, step in enumerate(flow.steps, start=1):
            text = parts.system(flow, step)
            assert f"## Step {number} of 6: {step.id}" in text
            assert len(registry.system_prompts) <= 3, again
    assert list(registry.system_prompts) == [("big", "s3"), ("big", "s4"), ("big", "s5")]

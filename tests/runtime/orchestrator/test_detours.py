"""Detours, utility flows and the flow stack (docs/flows.md#detours-and-utility-flows), in stub and
deterministic modes.

The flow set: ``build`` (a linear step with a detour into ``rebase``, a navigator step),
``rebase`` (a flow with a detour into ``resolve``: a stack three flows deep), ``resolve``,
and ``security-scan``, a utility flow injected when a handoff says ``touches_db``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_swarm import assertions
from pytest_swarm.run_record import RunRecord
from swarm_runtime.contracts.check import validate_run_dir
from swarm_runtime.engines.scenario import Scenario
from swarm_runtime.errors import FlowDefinitionError, SwarmUsageError
from swarm_runtime.flow.registry import FlowRegistry
from swarm_runtime.golden import normalise_value
from swarm_runtime.orchestrator.plan import EngineChoice, RunDeps, RunLimits, RunSpec
from swarm_runtime.orchestrator.run import Orchestrator
from swarm_runtime.orchestrator.state import RunOutcome
from swarm_runtime.storage.store import read_event_log
from tests.runtime.helpers import crash_at_checkpoint, step_yaml, write_flow

CRITIQUE = """
routing:
  kind: navigator
  default: ship
  candidates:
    - {id: back, to: write_code, when: "handoff.status != 'OK'"}
    - {id: forward, to: ship}
"""
EVERY_DETOUR: dict[str, Any] = {
    "write_code": {"handoff": {"diverged": True}},
    "replay": {"handoff": {"conflict": True}},
    "critique": {"handoff": {"status": "OK", "touches_db": True}},
    "navigator": {"write_code": "rebase", "replay": "fix", "critique": "security-scan"},
}
STACK_KINDS = ("stack_push", "flow_injected", "node_injected", "stack_pop")


def _flows(root: Path, *, write_detour: str = "flow: rebase, return: resume") -> Path:
    write_flow(
        root,
        "build",
        [
            step_yaml(
                "write_code",
                f'detours:\n  - {{id: rebase, {write_detour}, when: "handoff.diverged == true"}}\n',
            ),
            step_yaml("critique", CRITIQUE),
            step_yaml("ship"),
        ],
    )
    write_flow(
        root,
        "rebase",
        [
            step_yaml("fetch"),
            step_yaml(
                "replay",
                'detours:\n  - {id: fix, flow: resolve, when: "handoff.conflict == true"}\n',
            ),
            step_yaml("push"),
        ],
        head="utility: true\n",
    )
    write_flow(root, "resolve", [step_yaml("fix_conflict"), step_yaml("check")], "utility: true\n")
    write_flow(
        root,
        "security-scan",
        [step_yaml("scan")],
        head='utility: true\ninjection_trigger: "handoff.touches_db == true"\n',
    )
    return root


def _run(
    flows: Path,
    runs: Path,
    scenario: dict[str, Any],
    *,
    navigator: str = "llm",
    max_depth: int = 4,
) -> RunOutcome:
    return _orchestrator(flows, runs, scenario, navigator=navigator, max_depth=max_depth).run(
        RunSpec(flows=("build",))
    )


def _orchestrator(
    flows: Path, runs: Path, scenario: dict[str, Any], *, navigator: str = "llm", max_depth: int = 4
) -> Orchestrator:
    return Orchestrator(
        FlowRegistry(flows),
        runs_dir=runs,
        deps=RunDeps(sleep=lambda _s: None),
        engine=EngineChoice(scenario=Scenario.from_mapping(scenario), navigator=navigator),
        limits=RunLimits(max_depth=max_depth),
    )


def _events(run_dir: Path) -> list[dict[str, Any]]:
    return read_event_log(run_dir / "events.jsonl").events


def _walk(run_dir: Path) -> list[str]:
    """The steps that ran and the stack's moves, in order."""
    walked = []
    for event in _events(run_dir):
        payload = event["payload"]
        if event["kind"] == "step_start":
            walked.append(f"{event['flow_key']}/{event['step_id']}")
        elif event["kind"] == "stack_push":
            walked.append(f"push {payload['injected_flow']} depth {payload['current_depth']}")
        elif event["kind"] == "stack_pop":
            walked.append(
                f"pop {payload['injected_flow']} to {payload['resumed_flow']}/"
                f"{payload['resumed_step']} depth {payload['current_depth']}"
            )
        elif event["kind"] == "stack_overflow_prevented":
            walked.append(f"refused {payload['injected_flow']} max {payload['max_depth']}")
    return walked


def _sound(outcome: RunOutcome, flows: Path) -> None:
    assert outcome.status == "succeeded", outcome.error
    assert validate_run_dir(outcome.path) == []
    assertions.assert_routing(RunRecord(outcome.path, flows=FlowRegistry(flows)))


def test_a_scenario_takes_a_detour_two_deep_and_a_utility_flow_and_comes_back(
    tmp_path: Path,
) -> None:
    flows = _flows(tmp_path / "flows")
    outcome = _run(flows, tmp_path / "runs", EVERY_DETOUR)
    _sound(outcome, flows)
    assert _walk(outcome.path) == [
        "build/write_code",
        "push rebase depth 2",
        "rebase/fetch",
        "rebase/replay",
        "push resolve depth 3",
        "resolve/fix_conflict",
        "resolve/check",
        "pop resolve to rebase/push depth 2",
        "rebase/push",
        "pop rebase to build/critique depth 1",
        "build/critique",
        "push security-scan depth 2",
        "security-scan/scan",
        "pop security-scan to build/ship depth 1",
        "build/ship",
    ]
    by_kind = {e["kind"]: e["payload"] for e in _events(outcome.path)}  # the last of each
    assert by_kind["routing_offroad"] == {
        "golden_path_step": "ship",
        "actual_step": "security-scan/scan",
        "route_type": "INJECTION",
        "rationale": "as the scenario says",
        "return_address": "build/ship",
        "confidence": 1.0,
        "evaluated_conditions": ["handoff.touches_db == true"],
        "tie_breaker_used": False,
    }
    assert by_kind["flow_injected"] == {
        "flow": "security-scan",
        "by_step": "critique",
        "trigger": "handoff.touches_db == true",
        "return_address": "build/ship",
    }
    # The injected flows write their files under their own directories, like any flow.
    assert (outcome.path / "resolve" / "receipts" / "check-worker.json").is_file()
    assert (outcome.path / "build" / "llm" / "write_code-navigator-0.jsonl").is_file()
    totals = json.loads((outcome.path / "meta.json").read_text())["flow_totals"]
    assert {key: t["steps_executed"] for key, t in totals.items()} == {
        "build": 3,
        "rebase": 3,
        "resolve": 2,
        "security-scan": 1,
    }


def test_deterministic_mode_takes_the_golden_path_with_no_call(tmp_path: Path) -> None:
    flows = _flows(tmp_path / "flows")
    outcome = _run(flows, tmp_path / "runs", EVERY_DETOUR, navigator="deterministic")
    _sound(outcome, flows)
    assert _walk(outcome.path) == ["build/write_code", "build/critique", "build/ship"]
    assert not list(outcome.path.glob("*/llm/*-navigator-*"))


def test_the_stub_without_a_choice_takes_the_first_candidate(tmp_path: Path) -> None:
    flows = _flows(tmp_path / "flows")
    scenario = {key: value for key, value in EVERY_DETOUR.items() if key != "navigator"}
    outcome = _run(flows, tmp_path / "runs", scenario)
    _sound(outcome, flows)
    assert _walk(outcome.path) == ["build/write_code", "build/critique", "build/ship"]
    decisions = [e for e in _events(outcome.path) if e["kind"] == "routing_decision"]
    assert [d["payload"]["chosen"] for d in decisions] == ["next", "forward"]


def test_an_injection_past_max_depth_is_not_made_and_the_golden_path_is_taken(
    tmp_path: Path,
) -> None:
    flows = _flows(tmp_path / "flows")
    outcome = _run(flows, tmp_path / "runs", EVERY_DETOUR, max_depth=2)
    _sound(outcome, flows)
    walked = _walk(outcome.path)
    assert walked[:6] == [
        "build/write_code",
        "push rebase depth 2",
        "rebase/fetch",
        "rebase/replay",
        "refused resolve max 2",
        "rebase/push",
    ]
    refused = next(e for e in _events(outcome.path) if e["kind"] == "stack_overflow_prevented")
    assert refused["payload"] == {
        "paused_flow": "rebase",
        "paused_step": "replay",
        "injected_flow": "resolve",
        "max_depth": 2,
    }
    route = next(
        e
        for e in _events(outcome.path)
        if e["kind"] == "route_decision" and e["step_id"] == "replay"
    )
    assert route["payload"]["reason"] == "stack_overflow_prevented:fix"


def test_a_flow_already_on_the_stack_is_not_entered_again(tmp_path: Path) -> None:
    flows = _flows(tmp_path / "flows")
    write_flow(  # resolve may detour back into rebase, which is on the stack
        flows,
        "resolve",
        [
            step_yaml("fix_conflict", "detours:\n  - {id: again, flow: rebase}\n"),
            step_yaml("check"),
        ],
        "utility: true\n",
    )
    scenario = {**EVERY_DETOUR, "navigator": {**EVERY_DETOUR["navigator"], "fix_conflict": "again"}}
    outcome = _run(flows, tmp_path / "runs", scenario)
    _sound(outcome, flows)
    assert "refused rebase max 4" in _walk(outcome.path)


def test_a_choice_outside_the_set_falls_back_to_the_golden_path(tmp_path: Path) -> None:
    flows = _flows(tmp_path / "flows")
    scenario = {**EVERY_DETOUR, "navigator": {"write_code": "nowhere"}}
    outcome = _run(flows, tmp_path / "runs", scenario)
    _sound(outcome, flows)
    route = next(e for e in _events(outcome.path) if e["kind"] == "route_decision")
    assert route["payload"]["to_step"] == "critique"
    assert route["payload"]["reason"] == "navigator_fallback:invalid_choice:nowhere"
    assert _walk(outcome.path)[:2] == ["build/write_code", "build/critique"]


@pytest.mark.parametrize(
    ("detour", "back", "following"),
    [
        ("flow: rebase, return: 'bounce_to:ship'", "build/ship", ["build/ship"]),
        ("flow: rebase, return: halt", "build/None", []),
        ("step: rebase/replay", "build/critique", ["build/critique", "build/ship"]),
    ],
    ids=["bounce_to", "halt", "one-step"],
)
def test_a_detour_returns_as_it_says(
    tmp_path: Path, detour: str, back: str, following: list[str]
) -> None:
    flows = _flows(tmp_path / "flows", write_detour=detour)
    scenario = {
        "write_code": {"handoff": {"diverged": True}},
        "navigator": {"write_code": "rebase"},
    }
    outcome = _run(flows, tmp_path / "runs", scenario)
    _sound(outcome, flows)
    walked = _walk(outcome.path)
    popped = f"pop rebase to {back} depth 1"
    assert popped in walked
    assert walked[walked.index(popped) + 1 :] == following
    if detour.startswith("step:"):
        assert [w for w in walked if w.startswith("rebase/")] == ["rebase/replay"]
        kinds = [e["kind"] for e in _events(outcome.path)]
        assert "node_injected" in kinds and "flow_injected" not in kinds


def test_a_sequence_with_an_unbalanced_stack_is_a_violation(tmp_path: Path) -> None:
    flows = _flows(tmp_path / "flows")
    outcome = _run(flows, tmp_path / "runs", EVERY_DETOUR)
    log = outcome.path / "events.jsonl"
    lines = log.read_text().splitlines()
    kept = [line for line in lines if '"kind": "stack_pop"' not in line]
    log.write_text("\n".join(kept) + "\n")
    problems = " ".join(str(v) for v in validate_run_dir(outcome.path))
    assert "is injected" in problems and "never popped" in problems


def _what_it_did(run_dir: Path) -> dict[str, Any]:
    kinds = ("routing_decision", "routing_offroad", "route_decision", *STACK_KINDS)
    return {
        "events": [
            normalise_value([e["kind"], e["flow_key"], e["step_id"], e["payload"]])
            for e in _events(run_dir)
            if e["kind"] in kinds
        ],
        "files": sorted(
            str(p.relative_to(run_dir))
            for p in run_dir.glob("*/*/*")
            if p.parent.name != "interrupted"
        ),
    }


STEPS = 9  # the steps of the run that takes every detour


@pytest.mark.parametrize("before", [True, False], ids=["before-checkpoint", "after-checkpoint"])
@pytest.mark.parametrize("at", range(1, STEPS + 1))
def test_a_crash_inside_an_injected_flow_resumes_to_the_same_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, at: int, before: bool
) -> None:
    flows = _flows(tmp_path / "flows")
    baseline = _run(flows, tmp_path / "base", EVERY_DETOUR).path
    run = _orchestrator(flows, tmp_path / "runs", EVERY_DETOUR).run
    crash_at_checkpoint(monkeypatch, at, before=before, run=lambda: run(RunSpec(flows=("build",))))
    (run_dir,) = (tmp_path / "runs").iterdir()
    outcome = _orchestrator(flows, tmp_path / "runs", EVERY_DETOUR).resume(run_dir)
    _sound(outcome, flows)
    assert _what_it_did(run_dir) == _what_it_did(baseline)


def test_a_detour_into_a_flow_that_does_not_exist_is_refused_before_the_run(
    tmp_path: Path,
) -> None:
    flows = _flows(tmp_path / "flows")
    (flows / "rebase.yaml").unlink()
    with pytest.raises(
        SwarmUsageError,
        match=r"build.yaml:\d+, step 'write_code', field 'detours.rebase.flow': "
        r"detour 'rebase': no flow 'rebase'",
    ):
        _run(flows, tmp_path / "runs", EVERY_DETOUR)
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_a_utility_flow_is_never_run_from_the_order(tmp_path: Path) -> None:
    flows = _flows(tmp_path / "flows")
    assert FlowRegistry(flows).order() == ["build"]
    with pytest.raises(SwarmUsageError, match="'rebase' is a utility flow"):
        _orchestrator(flows, tmp_path / "runs", {}).run(RunSpec(flows=("rebase",)))
    (flows / "flows.yaml").write_text("order: [build, rebase]\n")
    with pytest.raises(FlowDefinitionError, match="'rebase' is a utility flow") as caught:
        FlowRegistry(flows).order()
    assert caught.value.line == 1


@pytest.mark.parametrize(
    ("detour", "message"),
    [
        ("{id: x, flow: rebase, return: later}", "return 'later' is not one of resume, halt"),
        ("{id: x, flow: rebase, step: rebase/fetch}", "exactly one of 'flow: KEY'"),
        ("{id: x, step: rebase}", "must be FLOW/STEP"),
        ('{id: x, flow: rebase, when: "handoff.a &&"}', "when"),
        ("{id: x, flow: rebase, return: 'bounce_to:nowhere'}", "'nowhere' names no step"),
        ("{id: x, flow: build}", "the flow it leaves"),
        ("{id: next, flow: rebase}", "detour id 'next' is also the id of the move"),
    ],
)
def test_a_wrong_detour_is_a_flow_error_with_its_line(
    tmp_path: Path, detour: str, message: str
) -> None:
    flows = _flows(tmp_path / "flows")
    write_flow(
        flows, "build", [step_yaml("write_code", f"detours:\n  - {detour}\n"), step_yaml("ship")]
    )
    errors = FlowRegistry(flows).validate_all()
    assert any(message in str(e) and e.line is not None and e.line > 1 for e in errors), errors


def test_mode_parity_accepts_the_navigator_facts_and_stack_events(tmp_path: Path) -> None:
    flows = _flows(tmp_path / "flows")
    scenario = {
        **EVERY_DETOUR,
        "ship": {"text": "Shipped.\n[DEC-001] Ship on Fridays.\n[ASM-001] CI is green."},
    }
    first = _run(flows, tmp_path / "a", scenario)
    second = _run(flows, tmp_path / "b", scenario)
    registry = FlowRegistry(flows)
    assertions.assert_mode_parity(
        RunRecord(first.path, flows=registry), RunRecord(second.path, flows=registry)
    )

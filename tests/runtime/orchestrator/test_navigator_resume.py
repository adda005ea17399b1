"""A run with a navigator step and facts, crashed at every checkpoint (just before it, just
after it) and resumed, is the run that was never interrupted: the navigator's events and
transcripts, the route, and ``facts.jsonl`` (a killed step's facts are cut and declared
again)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_swarm import assertions
from pytest_swarm.run_record import RunRecord
from swarm_runtime.contracts.check import validate_run_dir
from swarm_runtime.engines.scenario import Scenario
from swarm_runtime.flow.registry import FlowRegistry
from swarm_runtime.golden import normalise_value
from swarm_runtime.orchestrator.plan import EngineChoice, RunDeps, RunSpec
from swarm_runtime.orchestrator.run import Orchestrator
from swarm_runtime.storage.store import read_event_log
from tests.runtime.helpers import crash_at_checkpoint, step_yaml, write_flow

NAVIGATOR = """
routing:
  kind: navigator
  default: run_tests
  candidates:
    - {id: back_to_author, to: write_code, when: "handoff.status != 'VERIFIED'"}
    - {id: forward, to: run_tests}
    - {id: decided, to: ship, when: "facts.exists(f, f.id == 'DEC-001')"}
"""
SCENARIO = {
    "write_code": {"text": "Wrote it.\n[REQ-001] UTF-8 only.\n[ASM-001] Under 1 MB."},
    "critique_code": [
        {"text": "No.\n[REQ-001] UTF-8 and Latin-1.", "handoff": {"status": "NEEDS_WORK"}},
        {"handoff": {"status": "VERIFIED", "facts": [{"id": "DEC-001", "text": "Stream it."}]}},
    ],
    "navigator": {"critique_code": ["back_to_author", "decided"]},
}
STEPS = 4  # write_code, critique_code (back), write_code, critique_code (to ship), ship


@pytest.fixture
def flows(tmp_path: Path) -> Path:
    root = tmp_path / "flows"
    write_flow(
        root,
        "review",
        [
            step_yaml("write_code", agent="author"),
            step_yaml("critique_code", NAVIGATOR, agent="critic"),
            step_yaml("run_tests", agent="tester"),
            step_yaml("ship", agent="shipper"),
        ],
    )
    return root


def _orchestrator(flows: Path, runs: Path) -> Orchestrator:
    return Orchestrator(
        FlowRegistry(flows),
        runs_dir=runs,
        deps=RunDeps(sleep=lambda _s: None),
        engine=EngineChoice(scenario=Scenario.from_mapping(SCENARIO)),
    )


def _what_it_did(run_dir: Path) -> dict[str, Any]:
    events = read_event_log(run_dir / "events.jsonl").events
    kinds = ("routing_decision", "routing_offroad", "route_decision", "facts_updated")
    return {
        "events": [
            normalise_value([e["kind"], e["payload"]]) for e in events if e["kind"] in kinds
        ],
        "facts": [json.loads(line) for line in (run_dir / "facts.jsonl").read_text().splitlines()],
        "files": {
            str(p.relative_to(run_dir)): normalise_value(
                [json.loads(line) for line in p.read_text("utf-8").splitlines()]
                if p.suffix == ".jsonl"
                else json.loads(p.read_text("utf-8"))
            )
            for p in sorted(run_dir.glob("review/*/*"))
            if p.parent.name in ("receipts", "llm")
        },
    }


def test_the_uninterrupted_run_goes_back_once_then_takes_the_decision(
    flows: Path, tmp_path: Path
) -> None:
    outcome = _orchestrator(flows, tmp_path / "runs").run(RunSpec(flows=("review",)))
    assert outcome.status == "succeeded", outcome.error
    went = [
        p[1]["to_step"] for p in _what_it_did(outcome.path)["events"] if p[0] == "route_decision"
    ]
    assert went == ["critique_code", "write_code", "critique_code", "ship", None]
    assert validate_run_dir(outcome.path) == []
    # The move to ship holds on a fact its own reply declared: assert_routing sees it too.
    assertions.assert_routing(RunRecord(outcome.path, flows=FlowRegistry(flows)))


@pytest.mark.parametrize("before", [True, False], ids=["before-checkpoint", "after-checkpoint"])
@pytest.mark.parametrize("at", range(1, STEPS + 1))
def test_a_crash_at_any_checkpoint_resumes_to_the_same_run(
    flows: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, at: int, before: bool
) -> None:
    baseline = _orchestrator(flows, tmp_path / "base").run(RunSpec(flows=("review",))).path
    run = _orchestrator(flows, tmp_path / "runs").run
    crash_at_checkpoint(monkeypatch, at, before=before, run=lambda: run(RunSpec(flows=("review",))))
    (run_dir,) = (tmp_path / "runs").iterdir()
    outcome = _orchestrator(flows, tmp_path / "runs").resume(run_dir)
    assert outcome.status == "succeeded", outcome.error
    assert _what_it_did(run_dir) == _what_it_did(baseline)
    assert validate_run_dir(run_dir) == []

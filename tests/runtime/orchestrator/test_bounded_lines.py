"""What a run logs is bounded: text from a model or an engine is cut, visibly, to fit a line.

A 4 MB navigator rationale, a 2 MB choice, a proposed edge of a megabyte, tens of thousands
of facts in one reply, an engine error of a megabyte: each line of ``events.jsonl`` (and of
``graph_proposals.jsonl``) stays under its bound, and says how much was cut.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from swarm_runtime.contracts.check import validate_run_dir
from swarm_runtime.engines.base import StepContext, StepOutcome
from swarm_runtime.engines.registry import EngineRegistry, default_registry
from swarm_runtime.engines.scenario import Scenario
from swarm_runtime.engines.stub import StubEngine
from swarm_runtime.flow.registry import FlowRegistry
from swarm_runtime.orchestrator.plan import EngineChoice, RunDeps, RunSpec
from swarm_runtime.orchestrator.recorder import MAX_EVENT_LINE
from swarm_runtime.orchestrator.run import Orchestrator
from swarm_runtime.orchestrator.state import RunOutcome
from tests.runtime.helpers import listening, step_yaml, write_flow

NAVIGATOR = """
routing:
  kind: navigator
  default: check
  candidates:
    - {id: forward, to: check}
    - {id: skip, to: ship}
"""
MARKER = "[TRUNCATED: "


def _flows(root: Path) -> Path:
    flows = root / "flows"
    write_flow(
        flows,
        "review",
        [
            step_yaml("write_code"),
            step_yaml("critique", NAVIGATOR),
            step_yaml("check"),
            step_yaml("ship"),
        ],
    )
    return flows


class _Loud(StubEngine):
    """A stub whose navigator answers with ``navigator`` and whose ``ship`` may raise."""

    def __init__(self, navigator: dict[str, Any], raises: str | None, **options: Any) -> None:
        super().__init__(**options)
        self.navigator = navigator
        self.raises = raises

    def run_step(self, ctx: StepContext) -> StepOutcome:
        from swarm_runtime.record import replace

        if ctx.step_id == "ship" and self.raises is not None:
            raise RuntimeError(self.raises)
        reply = super().run_step(ctx)
        if ctx.call != "navigator":
            return reply
        return replace(reply, handoff=self.navigator)


def _run(
    tmp_path: Path,
    navigator: dict[str, Any],
    *,
    raises: str | None = None,
    scenario: dict[str, Any] | None = None,
) -> RunOutcome:
    engines: EngineRegistry = default_registry()
    script = Scenario.from_mapping(scenario or {})
    engines.register(
        "claude-step",
        lambda options: _Loud(navigator, raises, scenario=script),
        replace=True,
    )
    return Orchestrator(
        FlowRegistry(_flows(tmp_path)),
        runs_dir=tmp_path / "runs",
        deps=RunDeps(sleep=lambda _s: None, engines=engines),
    ).run(RunSpec(flows=("review",)))


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def _events(outcome: RunOutcome) -> dict[str, dict[str, Any]]:
    """The last event of each kind."""
    return {e["kind"]: e for e in map(json.loads, _lines(outcome.path / "events.jsonl"))}


def _bounded(outcome: RunOutcome) -> None:
    for name in ("events.jsonl", "graph_proposals.jsonl"):
        path = outcome.path / name
        for line in _lines(path) if path.exists() else ():
            assert len(line) <= MAX_EVENT_LINE, f"{name}: a line of {len(line)} characters"


def test_a_huge_rationale_and_proposed_edge_are_cut_visibly(tmp_path: Path) -> None:
    outcome = _run(
        tmp_path,
        {
            "choice": "skip",
            "rationale": "r" * 4_000_000,
            "proposed_edge": {"to": "t" * 1_000_000, "rationale": "p" * 1_000_000},
        },
        scenario={"navigator": {}},
    )
    assert outcome.status == "succeeded", outcome.error
    _bounded(outcome)
    events = _events(outcome)
    decision = events["routing_decision"]["payload"]
    assert decision["chosen"] == "skip"
    assert decision["rationale"].endswith("[TRUNCATED: 3998000 of 4000000 chars cut]")
    assert MARKER in events["routing_offroad"]["payload"]["rationale"]
    proposal = events["graph_extended"]["payload"]
    assert MARKER in proposal["to_step"] and MARKER in proposal["rationale"]
    (kept,) = _lines(outcome.path / "graph_proposals.jsonl")
    assert MARKER in json.loads(kept)["to_step"]
    assert validate_run_dir(outcome.path) == []


def test_a_huge_invalid_choice_is_cut_where_the_fallback_names_it(tmp_path: Path) -> None:
    outcome = _run(tmp_path, {"choice": "c" * 2_000_000}, scenario={"navigator": {}})
    assert outcome.status == "succeeded", outcome.error
    _bounded(outcome)
    reason = next(
        e["payload"]["reason"]
        for e in map(json.loads, _lines(outcome.path / "events.jsonl"))
        if e["kind"] == "route_decision" and e["step_id"] == "critique"
    )
    assert reason.startswith("navigator_fallback:invalid_choice:ccc") and MARKER in reason
    receipt = json.loads(
        (outcome.path / "review" / "receipts" / "critique-worker.json").read_text()
    )
    assert len(json.dumps(receipt)) < 20_000


def test_an_engine_error_of_a_megabyte_is_cut_in_its_step_error(tmp_path: Path) -> None:
    outcome = _run(tmp_path, {"choice": "forward"}, raises="e" * 1_000_000)
    assert outcome.status == "failed"
    _bounded(outcome)
    error = _events(outcome)["step_error"]["payload"]["error"]
    assert "RuntimeError: eee" in error and MARKER in error
    assert validate_run_dir(outcome.path) == []


@pytest.mark.parametrize("count", [20_000])
def test_facts_updated_counts_the_facts_and_lists_a_bounded_number_of_ids(
    tmp_path: Path, count: int
) -> None:
    facts = [{"id": f"REQ-{n}", "text": f"fact {n}"} for n in range(count)]
    outcome = _run(
        tmp_path,
        {"choice": "forward"},
        scenario={"write_code": {"handoff": {"facts": facts}}, "navigator": {}},
    )
    assert outcome.status == "succeeded", outcome.error
    _bounded(outcome)
    payload = _events(outcome)["facts_updated"]["payload"]
    assert payload["added_count"] == count and payload["total"] == count
    assert payload["added"] == [f"REQ-{n}" for n in range(100)]  # the first ids, in order
    assert len(_lines(outcome.path / "facts.jsonl")) == count  # every fact is kept
    assert validate_run_dir(outcome.path) == []


CHECKS = """
routing:
  kind: navigator
  default: {to}
  candidates:
    - {{id: recheck, to: declare, when: "handoff.status == 'AGAIN'"}}
    - {{id: onward, to: {to}, when: "size(facts) > 0"}}
"""


def _conversions_per_step(tmp_path: Path, facts: int, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many values are turned into CEL's types while each step after ``declare`` runs
    and is routed (every node of every JSON value the conditions are given counts one), by
    cel-python (cel-expr-python takes the values as they are, and converts in C++)."""
    import celpy.adapter

    from swarm_runtime.flow import cel, conditions

    monkeypatch.setenv("SWARM_CEL", "cel-python")
    cel.implementation.cache_clear()
    conditions._program.cache_clear()

    counted: list[int] = [0]
    real = celpy.adapter.json_to_cel

    def counting(value: Any) -> Any:
        counted[0] += 1
        return real(value)

    monkeypatch.setattr(celpy.adapter, "json_to_cel", counting)
    steps = ["check_1", "check_2", "check_3", "check_4", "done"]
    flows = tmp_path / f"flows-{facts}"
    write_flow(
        flows,
        "desk",
        [step_yaml("declare")]
        + [step_yaml(step, CHECKS.format(to=after)) for step, after in itertools.pairwise(steps)]
        + [step_yaml("done")],
    )
    declared = [{"id": f"REQ-{n}", "text": f"fact {n}"} for n in range(facts)]
    at_start: list[int] = []
    outcome = Orchestrator(
        FlowRegistry(flows),
        runs_dir=tmp_path / f"runs-{facts}",
        deps=RunDeps(
            sleep=lambda _s: None,
            plugins=listening(
                lambda e: at_start.append(counted[0]) if e["kind"] == "step_start" else None
            ),
        ),
        engine=EngineChoice(
            scenario=Scenario.from_mapping({"declare": {"handoff": {"facts": declared}}})
        ),
    ).run(RunSpec(flows=("desk",)))
    cel.implementation.cache_clear()
    conditions._program.cache_clear()
    assert outcome.status == "succeeded", outcome.error
    return [after - before for before, after in itertools.pairwise(at_start)]


def test_routing_after_a_step_does_not_convert_the_facts_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """50 000 facts made routing 80x slower: every condition converted every fact, every
    step. Counted here, not timed: the work of each step after the first that reads the
    facts is the same with 500 facts as with 5 000."""
    few = _conversions_per_step(tmp_path, 500, monkeypatch)
    many = _conversions_per_step(tmp_path, 5_000, monkeypatch)
    assert few[2:] == many[2:], (few, many)  # check_2 on: nothing scales with the facts
    assert max(many[2:]) < 100, many
    # [1]: check_1, whose routing reads the facts first: each is converted once (15 values).
    assert few[1] <= 500 * 16 and many[1] <= 5_000 * 16, (few, many)

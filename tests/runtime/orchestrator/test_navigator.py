"""Navigator routing (docs/flows.md#navigator): the kernel builds the candidate set from the
conditions (docs/flows.md#conditions), the navigator chooses from it, and a bad choice or a failed
call falls back to the golden path; the events say what was offered, what was chosen and when the
run went off the golden path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from swarm_runtime.contracts.check import validate_run_dir
from swarm_runtime.engines.base import StepContext, StepOutcome
from swarm_runtime.engines.registry import EngineRegistry, default_registry
from swarm_runtime.engines.stub import StubEngine
from swarm_runtime.errors import FlowDefinitionError
from swarm_runtime.flow.registry import FlowRegistry
from swarm_runtime.orchestrator.plan import EngineChoice, RunDeps, RunSpec
from swarm_runtime.orchestrator.run import Orchestrator
from tests.runtime.helpers import events_of, run_flows, step_yaml, write_flow

NAVIGATOR = """
routing:
  kind: navigator
  default: run_tests
  candidates:
    - {id: back_to_author, to: write_code, when: "handoff.status != 'VERIFIED'"}
    - {id: forward, to: run_tests}
    - {id: skip_tests, to: ship, when: "has(handoff.trivial) && handoff.trivial == true"}
"""


def _flows(root: Path, routing: str = NAVIGATOR) -> Path:
    flows = root / "flows"
    write_flow(
        flows,
        "review",
        [
            step_yaml("write_code", agent="author"),
            step_yaml("critique_code", routing, agent="critic"),
            step_yaml("run_tests", agent="tester"),
            step_yaml("ship", agent="shipper"),
        ],
    )
    return flows


def _route(events: list[dict[str, Any]], step: str) -> list[tuple[str, Any]]:
    """Per execution of ``step``: (kind, the payload's gist) of its routing events."""
    gist = {
        "routing_decision": lambda p: (p["chosen"], [c["id"] for c in p["candidates"]]),
        "routing_offroad": lambda p: (p["actual_step"], p["route_type"]),
        "route_decision": lambda p: (p["to_step"], p["reason"], p["routing_source"]),
    }
    return [
        (e["kind"], gist[e["kind"]](e["payload"]))
        for e in events
        if e["step_id"] == step and e["kind"] in gist
    ]


def test_the_navigator_chooses_among_the_candidates_whose_conditions_hold(
    tmp_path: Path,
) -> None:
    outcome = run_flows(
        _flows(tmp_path),
        tmp_path / "runs",
        scenario={
            "critique_code": {"handoff": {"status": "NEEDS_WORK"}},
            "navigator": {"critique_code": ["back_to_author", "forward"]},
        },
    )
    assert outcome.status == "succeeded", outcome.error
    offered = ["back_to_author", "forward"]  # skip_tests' condition did not hold
    assert _route(events_of(outcome), "critique_code") == [
        ("routing_decision", ("back_to_author", offered)),
        ("routing_offroad", ("write_code", "LOOP")),
        ("route_decision", ("write_code", "navigator:back_to_author", "navigator")),
        ("routing_decision", ("forward", offered)),
        ("route_decision", ("run_tests", "navigator:forward", "navigator")),
    ]
    llm = outcome.path / "review" / "llm"
    assert sorted(p.name for p in llm.glob("critique_code-navigator-*")) == [
        "critique_code-navigator-0.jsonl",
        "critique_code-navigator-1.jsonl",
    ]
    assert validate_run_dir(outcome.path) == []


def test_a_skip_is_off_the_golden_path_and_one_candidate_needs_no_navigator(
    tmp_path: Path,
) -> None:
    outcome = run_flows(
        _flows(tmp_path),
        tmp_path / "runs",
        scenario={
            "critique_code": {"handoff": {"status": "VERIFIED", "trivial": "yes"}},
            "navigator": {"critique_code": "skip_tests"},
        },
    )
    assert outcome.status == "succeeded", outcome.error
    assert _route(events_of(outcome), "critique_code") == [
        ("routing_decision", ("skip_tests", ["forward", "skip_tests"])),
        ("routing_offroad", ("ship", "SKIP")),
        ("route_decision", ("ship", "navigator:skip_tests", "navigator")),
    ]
    single = run_flows(
        _flows(tmp_path / "b"),
        tmp_path / "runs-b",
        scenario={"critique_code": {"handoff": {"status": "VERIFIED"}}},
    )
    assert _route(events_of(single), "critique_code") == [
        ("route_decision", ("run_tests", "navigator_single:forward", "deterministic")),
    ]
    assert not list((single.path / "review" / "llm").glob("*-navigator-*"))


def test_deterministic_mode_takes_the_first_candidate_that_holds_with_no_call(
    tmp_path: Path,
) -> None:
    registry = FlowRegistry(_flows(tmp_path))
    from swarm_runtime.engines.scenario import Scenario

    orchestrator = Orchestrator(
        registry,
        runs_dir=tmp_path / "runs",
        deps=RunDeps(sleep=lambda _s: None),
        engine=EngineChoice(
            navigator="deterministic",
            scenario=Scenario.from_mapping(
                {"critique_code": [{"handoff": {"status": "NEEDS_WORK"}}, {"text": "fine"}]}
            ),
        ),
    )
    outcome = orchestrator.run(RunSpec(flows=("review",)))
    assert outcome.status == "succeeded", outcome.error
    assert _route(events_of(outcome), "critique_code") == [
        ("routing_offroad", ("write_code", "LOOP")),
        (
            "route_decision",
            ("write_code", "navigator_deterministic:back_to_author", "deterministic"),
        ),
        # The second reply declares no status: the condition errs, counts as false.
        ("route_decision", ("run_tests", "navigator_single:forward", "deterministic")),
    ]
    assert not list((outcome.path / "review" / "llm").glob("*-navigator-*"))
    assert validate_run_dir(outcome.path) == []


def test_a_choice_outside_the_set_falls_back_to_the_golden_path(tmp_path: Path) -> None:
    outcome = run_flows(
        _flows(tmp_path),
        tmp_path / "runs",
        scenario={
            "critique_code": {"handoff": {"status": "NEEDS_WORK"}},
            "navigator": {"critique_code": "skip_tests"},  # its condition does not hold
        },
    )
    assert outcome.status == "succeeded", outcome.error
    assert _route(events_of(outcome), "critique_code") == [
        ("routing_decision", (None, ["back_to_author", "forward"])),
        (
            "route_decision",
            ("run_tests", "navigator_fallback:invalid_choice:skip_tests", "navigator"),
        ),
    ]
    assert validate_run_dir(outcome.path) == []


class _NavigatorFails(StubEngine):
    def run_step(self, ctx: StepContext) -> StepOutcome:
        if ctx.call == "navigator":
            raise RuntimeError("the navigator's server is down")
        return super().run_step(ctx)


def test_a_failing_navigator_call_falls_back_and_the_run_goes_on(tmp_path: Path) -> None:
    from swarm_runtime.engines.scenario import Scenario

    engines: EngineRegistry = default_registry()
    scenario = Scenario.from_mapping({"critique_code": {"handoff": {"status": "NEEDS_WORK"}}})
    engines.register(
        "claude-step", lambda options: _NavigatorFails(scenario=scenario), replace=True
    )
    orchestrator = Orchestrator(
        FlowRegistry(_flows(tmp_path)),
        runs_dir=tmp_path / "runs",
        deps=RunDeps(sleep=lambda _s: None, engines=engines),
    )
    outcome = orchestrator.run(RunSpec(flows=("review",)))
    assert outcome.status == "succeeded", outcome.error
    (decision,) = [e for e in events_of(outcome) if e["kind"] == "route_decision"][1:2]
    assert decision["payload"]["reason"] == "navigator_fallback:call_failed:RuntimeError"
    assert decision["payload"]["to_step"] == "run_tests"


@pytest.mark.parametrize(
    ("when", "says"),
    [
        ("handoff.status ==", "is not a CEL expression"),
        ("hand.status == 'x'", "names 'hand', which a condition cannot see"),
        ("", "must be a non-empty string"),
    ],
)
def test_a_bad_condition_is_a_flow_error_at_its_line(tmp_path: Path, when: str, says: str) -> None:
    routing = NAVIGATOR.replace("handoff.status != 'VERIFIED'", when)
    path = _flows(tmp_path, routing) / "review.yaml"
    line = next(
        n for n, text in enumerate(path.read_text().splitlines(), 1) if "back_to_author" in text
    )
    with pytest.raises(FlowDefinitionError) as raised:
        FlowRegistry(path.parent).get("review")
    message = str(raised.value)
    assert f"{path}:{line}" in message and says in message
    assert "routing.candidates.back_to_author.when" in message


@pytest.mark.parametrize(
    ("routing", "says"),
    [
        (NAVIGATOR.replace("to: ship", "to: nowhere"), "nowhere"),
        (NAVIGATOR.replace("id: forward", "id: back_to_author"), "given twice"),
        (NAVIGATOR.replace("  default: run_tests\n", ""), "needs 'default'"),
        ("routing:\n  kind: navigator\n  default: ship\n  candidates: []\n", "non-empty list"),
        (
            NAVIGATOR + "detours:\n  - {id: forward, flow: other}\n",
            "detour id 'forward' is also the id of a candidate",
        ),
    ],
)
def test_a_navigator_step_is_checked_when_its_flow_loads(
    tmp_path: Path, routing: str, says: str
) -> None:
    with pytest.raises(FlowDefinitionError) as raised:
        FlowRegistry(_flows(tmp_path, routing)).get("review")
    assert says in str(raised.value)


def test_assert_routing_recomputes_the_navigators_move_and_sees_a_wrong_one(
    tmp_path: Path,
) -> None:
    import json

    from pytest_swarm import assertions
    from pytest_swarm.run_record import RunRecord

    flows = _flows(tmp_path)
    outcome = run_flows(
        flows,
        tmp_path / "runs",
        scenario={
            "critique_code": {"handoff": {"status": "VERIFIED", "trivial": "yes"}},
            "navigator": {"critique_code": "skip_tests"},
        },
    )
    assertions.assert_routing(RunRecord(outcome.path, flows=FlowRegistry(flows)))
    path = outcome.path / "events.jsonl"
    events = [json.loads(line) for line in path.read_text().splitlines()]
    for event in events:  # the navigator chose skip_tests; say it chose forward
        if event["kind"] == "routing_decision":
            event["payload"]["chosen"] = "forward"
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    with pytest.raises(AssertionError, match=r"critique_code.*gives advance -> 'run_tests'"):
        assertions.assert_routing(RunRecord(outcome.path, flows=FlowRegistry(flows)))


class _NavigatorProposes(StubEngine):
    """Chooses 'forward', and proposes an edge the flow does not have."""

    def run_step(self, ctx: StepContext) -> StepOutcome:
        reply = super().run_step(ctx)
        if ctx.call != "navigator":
            return reply
        text = (
            '```handoff\n{"choice": "forward", "confidence": 0.9, "rationale": "tests first",'
            ' "proposed_edge": {"to": "deploy_now", "rationale": "it looks done"}}\n```'
        )
        from swarm_runtime.engines.handoff import parse_handoff
        from swarm_runtime.record import replace

        return replace(reply, text=text, handoff=parse_handoff(text))


def test_a_proposed_edge_is_recorded_and_never_followed(tmp_path: Path) -> None:
    from swarm_runtime.engines.scenario import Scenario

    engines: EngineRegistry = default_registry()
    scenario = Scenario.from_mapping({"critique_code": {"handoff": {"status": "NEEDS_WORK"}}})
    engines.register(
        "claude-step", lambda options: _NavigatorProposes(scenario=scenario), replace=True
    )
    outcome = Orchestrator(
        FlowRegistry(_flows(tmp_path)),
        runs_dir=tmp_path / "runs",
        deps=RunDeps(sleep=lambda _s: None, engines=engines),
    ).run(RunSpec(flows=("review",)))
    assert outcome.status == "succeeded", outcome.error
    routed = [
        (e["kind"], e["payload"])
        for e in events_of(outcome)
        if e["step_id"] == "critique_code" and e["kind"] not in ("step_start", "step_end")
    ]
    assert [kind for kind, _ in routed] == ["routing_decision", "graph_extended", "route_decision"]
    assert routed[1][1] == {
        "from_step": "critique_code",
        "to_step": "deploy_now",
        "rationale": "it looks done",
    }
    assert routed[2][1]["to_step"] == "run_tests"  # the choice, not the proposal
    import json

    (line,) = (outcome.path / "graph_proposals.jsonl").read_text().splitlines()
    assert json.loads(line)["to_step"] == "deploy_now"
    assert validate_run_dir(outcome.path) == []


@pytest.mark.parametrize(
    ("handoff", "choice", "confidence", "proposal", "error"),
    [
        ({"choice": "a", "confidence": 0.5}, "a", 0.5, None, None),
        ({"choice": "a", "confidence": 2}, "a", None, None, None),
        ({"choice": "a", "confidence": True}, "a", None, None, None),
        ({"choice": "a", "proposed_edge": "z"}, "a", None, ("z", None), None),
        ({"choice": "a", "proposed_edge": {"rationale": "no to"}}, "a", None, None, None),
        ({"rationale": "no choice"}, None, None, None, "no_choice"),
        (None, None, None, None, "no_choice"),
    ],
)
def test_the_navigators_answer_is_read_strictly(
    handoff: Any, choice: Any, confidence: Any, proposal: Any, error: Any
) -> None:
    from swarm_runtime.orchestrator.routing import answer_of

    answer = answer_of(handoff)
    assert (answer.choice, answer.confidence, answer.proposal, answer.error) == (
        choice,
        confidence,
        proposal,
        error,
    )

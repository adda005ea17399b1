"""Reading a fault plan: every mistake is a usage error naming the source, key and what is allowed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from swarm_runtime.engines.faults import FaultPlan
from swarm_runtime.engines.scenario import Scenario
from swarm_runtime.errors import ScenarioError, SwarmUsageError
from swarm_runtime.flow.registry import FlowRegistry
from swarm_runtime.orchestrator.plan import RunDeps, RunSpec
from swarm_runtime.orchestrator.run import Orchestrator
from swarm_runtime.record import replace
from tests.runtime.helpers import claude_choice, run_flows, step_yaml, write_flow


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({"review": ["http_418"]}, "plan.yaml: review[0]: unknown fault kind 'http_418'"),
        ({"review": ["http_592"]}, "did you mean 'http_529'?"),
        ({"review": [{"kind": "http_500", "retry_after_ms": 5}]}, "http_500 takes no fields"),
        (
            {"review": [{"kind": "http_429", "after": 5}]},
            "http_429 takes retry_after_ms, not 'after'",
        ),
        ({"review": [{"kind": "http_429", "retry_after_ms": -1}]}, "review[0].retry_after_ms"),
        ({"review": [{"kind": "cli_exit", "code": 0}]}, "review[0].code: must be a whole number"),
        ({"review": "http_500"}, "review: must be a list of 1 to 1000 entries"),
        ({"review": []}, "review: must be a list"),
        ({"review": [3]}, "review[0]: an entry is a fault kind"),
        (["review"], "plan.yaml: a fault plan must be a mapping"),
    ],
)
def test_a_bad_plan_names_the_source_the_key_and_what_is_allowed(raw: Any, expected: str) -> None:
    with pytest.raises(ScenarioError) as caught:
        FaultPlan.from_mapping(raw, source="plan.yaml")
    assert expected in str(caught.value)
    if "kind" in expected:
        assert "http_429 {retry_after_ms}" in str(caught.value)  # the kinds allowed


def test_a_plan_file_reads_yaml_and_json(tmp_path: Path) -> None:
    (tmp_path / "plan.yaml").write_text(
        "review:\n  - {kind: http_429, retry_after_ms: 0}\n  - null\n"
    )
    (tmp_path / "plan.json").write_text('{"review": ["http_500", null]}')
    yaml_plan = FaultPlan.from_file(tmp_path / "plan.yaml")
    assert [f.kind if f else None for f in yaml_plan.entries["review"]] == ["http_429", None]
    assert yaml_plan.entries["review"][0].retry_after_ms == 0  # type: ignore[union-attr]
    json_plan = FaultPlan.from_file(tmp_path / "plan.json")
    assert [f.kind if f else None for f in json_plan.entries["review"]] == ["http_500", None]


def test_an_unreadable_plan_file_says_which(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match=r"cannot read fault plan .*missing\.yaml"):
        FaultPlan.from_file(tmp_path / "missing.yaml")
    (tmp_path / "bad.yaml").write_text("review: [http_500\n")
    with pytest.raises(ScenarioError, match=r"bad\.yaml:.*invalid YAML"):
        FaultPlan.from_file(tmp_path / "bad.yaml")


@pytest.fixture
def flows(tmp_path: Path) -> Path:
    flows = tmp_path / "flows"
    write_flow(flows, "demo", [step_yaml("draft"), step_yaml("review")])
    return flows


def test_a_scenario_with_a_fault_for_an_unknown_step_is_refused_before_the_run(
    flows: Path, tmp_path: Path
) -> None:
    with pytest.raises(
        ScenarioError, match=r"faults: 'reveiw' names no step .*did you mean 'review'"
    ):
        run_flows(flows, tmp_path / "runs", scenario={"faults": {"reveiw": ["http_500"]}})
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_a_scenario_keeps_its_strictness_around_faults() -> None:
    with pytest.raises(ScenarioError, match="faults: review\\[0\\]: unknown fault kind"):
        Scenario.from_mapping({"faults": {"review": ["oops"]}}, source="s.yaml")
    with pytest.raises(ScenarioError, match="unknown key 'fault'"):
        Scenario.from_mapping({"review": {"fault": "http_500"}}, source="s.yaml")


def test_flow_slash_step_keys_are_accepted(flows: Path, tmp_path: Path) -> None:
    outcome = run_flows(
        flows, tmp_path / "runs", scenario={"faults": {"demo/review": ["empty_reply"]}}
    )
    assert outcome.status == "succeeded"


@pytest.mark.parametrize(
    ("mode", "kind", "expected"),
    [
        ("sdk", "cli_exit", "cli_exit is injected in cli and stub modes only"),
        ("cli", "http_429", "http_429 is not injected in cli mode"),
    ],
)
def test_a_kind_the_mode_cannot_serve_is_a_usage_error(
    flows: Path, tmp_path: Path, mode: str, kind: str, expected: str
) -> None:
    choice = claude_choice(mode, api_key="sk-ant-not-a-key", base_url="http://127.0.0.1:9")
    orchestrator = Orchestrator(
        FlowRegistry(flows),
        runs_dir=tmp_path / "runs",
        deps=RunDeps(sleep=lambda _s: None),
        engine=replace(
            choice, faults=FaultPlan.from_mapping({"review": [None, kind]}, source="plan.yaml")
        ),
    )
    with pytest.raises(SwarmUsageError, match=f"plan.yaml: review\\[1\\]: {expected}"):
        orchestrator.run(RunSpec(flows=("demo",)))

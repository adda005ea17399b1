"""Flow and run budgets (docs/budgets.md): summed over loops and retries, named when exceeded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from swarm_runtime.contracts.check import validate_run_dir
from swarm_runtime.engines.scenario import Scenario
from swarm_runtime.errors import ConfigError, FlowDefinitionError
from swarm_runtime.flow.budget_input import budget_from_mapping, budget_from_text
from swarm_runtime.flow.loader import load_flow
from swarm_runtime.flow.registry import FlowRegistry
from swarm_runtime.flow.spec import Budget
from swarm_runtime.orchestrator.assembly import orchestrator_for_run
from swarm_runtime.orchestrator.plan import EngineChoice, RunDeps, RunLimits, RunSpec
from swarm_runtime.orchestrator.run import Orchestrator
from swarm_runtime.orchestrator.state import RunOutcome
from tests.conftest import StepClock
from tests.runtime.helpers import events_of, listening, receipt, step_yaml, write_flow
from tests.runtime.orchestrator.conftest import LOOP

TEN = {"tokens": {"prompt": 6, "completion": 4}}
"""Every scripted call spends 10 tokens."""
LOOPING = {
    "author": TEN,
    "critic": [
        {**TEN, "handoff": {"status": "NEEDS_WORK"}},
        {**TEN, "handoff": {"status": "NEEDS_WORK"}},
        {**TEN, "handoff": {"status": "VERIFIED"}},
    ],
    "ship": TEN,
}
"""loopy runs author, critic, author, critic, author, critic, ship: 70 tokens."""


def _loopy(flows: Path, head: str = "", critic: str = LOOP) -> Path:
    steps = [step_yaml("author"), step_yaml("critic", critic), step_yaml("ship")]
    write_flow(flows, "loopy", steps, head=head)
    return flows


def _run(
    flows: Path,
    runs: Path,
    scenario: dict[str, Any],
    *,
    budget: Budget | None = None,
    keys: tuple[str, ...] = ("loopy",),
    clock: Any = None,
) -> RunOutcome:
    orchestrator = Orchestrator(
        FlowRegistry(flows),
        runs_dir=runs,
        deps=RunDeps(sleep=lambda _s: None, **({"clock": clock} if clock else {})),
        engine=EngineChoice(scenario=Scenario.from_mapping(scenario)),
        limits=RunLimits(budget=budget),
    )
    return orchestrator.run(RunSpec(flows=keys))


def _step_errors(outcome: RunOutcome) -> list[tuple[str, str]]:
    return [
        (e["step_id"], e["payload"]["error"])
        for e in events_of(outcome)
        if e["kind"] == "step_error"
    ]


def test_a_flow_budget_is_summed_over_loop_iterations(tmp_path: Path) -> None:
    flows = _loopy(tmp_path / "flows", head="budget: {tokens: 45}\n")
    outcome = _run(flows, tmp_path / "runs", LOOPING)
    assert outcome.status == "failed"
    message = "budget_exceeded: flow budget of 'loopy': tokens 50 > limit 45"
    assert outcome.error == f"loopy/author: {message}"
    # The third author (iteration 2) is the fifth call: the one past the limit.
    assert _step_errors(outcome) == [("author", message)]
    failed = receipt(outcome, "loopy", "author", "worker")
    assert (failed["iteration"], failed["result_code"], failed["error"]) == (2, "fatal", message)
    assert [e["kind"] for e in events_of(outcome)][-1] == "run_completed"
    assert outcome.budget_use == {"loopy": "111% (tokens of flow loopy)"}
    assert validate_run_dir(outcome.path) == []


def test_a_flow_budget_counts_every_attempt_of_a_retried_call(tmp_path: Path) -> None:
    flows = tmp_path / "flows"
    write_flow(flows, "one", [step_yaml("only")], head="budget: {tokens: 25}\n")
    retried = {"only": {**TEN, "result_code": "retryable", "failing_attempts": 2}}
    outcome = _run(flows, tmp_path / "runs", retried, keys=("one",))
    # One execution, three attempts of 10 tokens each: 30 > 25.
    assert outcome.error == "one/only: budget_exceeded: flow budget of 'one': tokens 30 > limit 25"
    assert outcome.summary["tokens"]["total"] == 30


def test_a_flow_within_its_budget_succeeds_and_shows_its_share(tmp_path: Path) -> None:
    flows = _loopy(tmp_path / "flows", head="budget: {tokens: 100, cost_usd: 5}\n")
    outcome = _run(flows, tmp_path / "runs", LOOPING)
    assert outcome.status == "succeeded", outcome.error
    assert outcome.budget_use == {"loopy": "70% (tokens of flow loopy)"}


def test_a_run_budget_sums_every_flow(tmp_path: Path) -> None:
    flows = _loopy(tmp_path / "flows")
    write_flow(flows, "after", [step_yaml("first"), step_yaml("second")])
    scenario = {**LOOPING, "first": TEN, "second": TEN}
    outcome = _run(
        flows, tmp_path / "runs", scenario, budget=Budget(tokens=75), keys=("loopy", "after")
    )
    # loopy spends 70; after/first makes it 80.
    assert outcome.error == "after/first: budget_exceeded: run budget: tokens 80 > limit 75"
    assert outcome.budget_use == {"": "107% (tokens of the run)"}


def test_the_narrowest_budget_broken_is_the_one_named(tmp_path: Path) -> None:
    flows = tmp_path / "flows"
    write_flow(
        flows, "one", [step_yaml("only", "budget: {tokens: 5}")], head="budget: {tokens: 5}\n"
    )
    outcome = _run(flows, tmp_path / "runs", {"only": TEN}, budget=Budget(tokens=5), keys=("one",))
    assert outcome.error == (
        "one/only: budget_exceeded: step budget of 'one/only': tokens 10 > limit 5"
    )


def test_a_duration_budget_counts_the_time_of_every_step_of_the_flow(tmp_path: Path) -> None:
    flows = tmp_path / "flows"
    steps = [step_yaml("one"), step_yaml("two"), step_yaml("three")]
    write_flow(flows, "slow", steps, head="budget: {duration_ms: 1000}\n")
    # Each clock reading is 100 ms later: every step takes several hundred ms.
    outcome = _run(flows, tmp_path / "runs", {}, keys=("slow",), clock=StepClock(step_ms=100))
    prefix = "budget_exceeded: flow budget of 'slow': duration_ms "
    (failed,) = _step_errors(outcome)
    assert failed[0] != "one"  # no step alone is over: their sum is
    assert failed[1].startswith(prefix) and failed[1].endswith(" > limit 1000")
    assert outcome.budget_use["slow"].endswith("% (duration_ms of flow slow)")


def test_a_resumed_run_keeps_its_run_budget_and_its_totals(tmp_path: Path) -> None:
    flows = _loopy(tmp_path / "flows")
    runs = tmp_path / "runs"
    holder: dict[str, Orchestrator] = {}

    def stop_after_the_first_step(event: dict[str, Any]) -> None:
        if event["kind"] == "step_end":
            holder["o"].control.request("stop")

    orchestrator = Orchestrator(
        FlowRegistry(flows),
        runs_dir=runs,
        deps=RunDeps(sleep=lambda _s: None, plugins=listening(stop_after_the_first_step)),
        engine=EngineChoice(scenario=Scenario.from_mapping(LOOPING)),
        limits=RunLimits(budget=Budget(tokens=25)),
    )
    holder["o"] = orchestrator
    stopped = orchestrator.run(RunSpec(flows=("loopy",)))
    assert stopped.status == "stopped"
    spec = json.loads((stopped.path / "spec.json").read_text("utf-8"))
    assert spec["origin"]["budget"] == {"tokens": 25}
    resumed = orchestrator_for_run(stopped.path, env={}).resume(stopped.path)
    # 10 tokens before the stop, then critic (20) and author (30): past 25 at the third.
    assert resumed.error == "loopy/author: budget_exceeded: run budget: tokens 30 > limit 25"
    assert validate_run_dir(stopped.path) == []


def test_a_flow_file_budget_is_checked_with_its_line(tmp_path: Path) -> None:
    path = write_flow(tmp_path, "bad", [step_yaml("only")], head="budget: {tokens: 0, money: 1}\n")
    with pytest.raises(FlowDefinitionError) as info:
        load_flow(path)
    assert info.value.line == 4
    assert "money" in str(info.value)


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("tokens=10,money=1", "'money'"),
        ("tokens=0", "tokens must be a whole number >= 1, got 0"),
        ("cost_usd=cheap", "cost_usd must be a number >= 0 (USD), got 'cheap'"),
        ("duration_ms=1.5", "duration_ms must be a whole number >= 1, got 1.5"),
        ("tokens", "'tokens' is not KEY=VALUE"),
        ("tokens=1,tokens=2", "'tokens' is given twice"),
    ],
)
def test_a_bad_budget_names_the_key_and_what_is_allowed(text: str, named: str) -> None:
    with pytest.raises(ConfigError) as info:
        budget_from_text(text)
    assert named in str(info.value)
    assert str(info.value).startswith("--budget")


def test_a_budget_takes_any_subset_of_its_keys() -> None:
    assert budget_from_text("cost_usd=0.5") == Budget(cost_usd=0.5)
    assert budget_from_text("tokens=10, duration_ms=2000") == Budget(tokens=10, duration_ms=2000)
    assert budget_from_mapping({"tokens": 3}, "marker") == Budget(tokens=3)

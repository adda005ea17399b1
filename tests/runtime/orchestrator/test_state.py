"""Run totals: tokens and cost add up, and an unknown cost stays unknown."""

from __future__ import annotations

import json
from pathlib import Path

from swarm_runtime.cli.render import run_table
from swarm_runtime.engines.base import StepContext, StepEngine, StepOutcome, StepResult, TokenUsage
from swarm_runtime.engines.registry import EngineRegistry
from swarm_runtime.flow.registry import FlowRegistry
from swarm_runtime.orchestrator.plan import RunDeps, RunSpec
from swarm_runtime.orchestrator.run import Orchestrator
from tests.runtime.helpers import step_yaml, write_flow


class PricedEngine(StepEngine):
    """Answers every step; its price list knows only the steps named in ``prices``."""

    mode = "sdk"

    def __init__(self, prices: dict[str, float]) -> None:
        self.prices = prices

    def run_step(self, ctx: StepContext) -> StepOutcome:
        return StepOutcome(
            result=StepResult(step_id=ctx.step_id, status="succeeded", output="done"),
            tokens=TokenUsage(100, 10),
            model="model-x",
            provider="anthropic_compat",
            mode="sdk",
            transcript=({"role": "assistant", "content": "done"},),
            cost_usd=self.prices.get(ctx.step_id),
        )


def _run(tmp_path: Path, prices: dict[str, float]) -> dict[str, object]:
    flows = tmp_path / "flows"
    write_flow(flows, "one", [step_yaml("first"), step_yaml("second")])
    write_flow(flows, "two", [step_yaml("third")])
    engines = EngineRegistry()
    engines.register("claude-step", lambda _options: PricedEngine(prices))
    orchestrator = Orchestrator(
        FlowRegistry(flows), runs_dir=tmp_path / "runs", deps=RunDeps(engines=engines)
    )
    outcome = orchestrator.run(RunSpec(flows=("one", "two")))
    assert outcome.status == "succeeded", outcome.error
    meta: dict[str, object] = json.loads((outcome.path / "meta.json").read_text())
    assert meta == outcome.summary
    return meta


def test_an_unknown_cost_is_null_in_meta_and_a_dash_in_the_table(tmp_path: Path) -> None:
    meta = _run(tmp_path, {"first": 0.25, "third": 0.5})  # "second" has no price
    assert meta["cost_usd"] is None
    assert meta["steps_without_cost"] == 1
    totals = meta["flow_totals"]
    assert isinstance(totals, dict)
    assert (totals["one"]["cost_usd"], totals["one"]["steps_without_cost"]) == (None, 1)
    assert (totals["two"]["cost_usd"], totals["two"]["steps_without_cost"]) == (0.5, 0)
    table = run_table(meta, 12)
    total_row = next(line for line in table.splitlines() if line.startswith("total"))
    assert "\u2014" in total_row and "0.0000" not in total_row and "0.7500" not in total_row
    assert "cost unknown: 1 step execution(s)" in table


def test_known_costs_add_up(tmp_path: Path) -> None:
    meta = _run(tmp_path, {"first": 0.25, "second": 0.125, "third": 0.5})
    assert (meta["cost_usd"], meta["steps_without_cost"]) == (0.875, 0)
    assert "0.8750" in run_table(meta, 12)
    receipt = json.loads(
        next((tmp_path / "runs").glob("*/one/receipts/second-worker.json")).read_text()
    )
    assert receipt["cost"] == {
        "model": "model-x",
        "provider": "anthropic_compat",
        "tokens": {"input": 100, "output": 10, "total": 110},
        "estimatedCostUsd": 0.125,
    }


def test_a_stub_run_costs_zero_not_unknown(tmp_path: Path) -> None:
    flows = tmp_path / "flows"
    write_flow(flows, "one", [step_yaml("first")])
    outcome = Orchestrator(FlowRegistry(flows), runs_dir=tmp_path / "runs").run(
        RunSpec(flows=("one",))
    )
    assert (outcome.summary["cost_usd"], outcome.summary["steps_without_cost"]) == (0.0, 0)


def test_every_run_file_says_its_schema_version(tmp_path: Path) -> None:
    meta = _run(tmp_path, {})
    assert meta["schema_version"] == "1"
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert json.loads((run_dir / "spec.json").read_text())["schema_version"] == "1"
    for path in run_dir.glob("*/receipts/*.json"):
        assert json.loads(path.read_text())["schema_version"] == "1", path

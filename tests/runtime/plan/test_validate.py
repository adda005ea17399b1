"""The v1 rules (docs/plans.md): a plan that breaks one fails its cycle before any handler runs.

One test per rule. Each runs the broken plan through a runtime whose handlers record
every call, and checks that none was made, that the cycle failed naming the rule and the
step, and that its run dir still tells the story (run_created … run_completed{failed}).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from swarm_runtime.contracts.check import validate_run_dir
from swarm_runtime.errors import PlanError
from swarm_runtime.plan import PlanRuntime, checked_plan, plan_violations
from tests.runtime.plan.conftest import Recorder, plan_document


def _step(plan: dict[str, Any], step_id: str) -> dict[str, Any]:
    return next(step for step in plan["steps"] if step["id"] == step_id)


def _version(plan: dict[str, Any]) -> None:
    plan["step_contract_version"] = "2"


def _extensions(plan: dict[str, Any]) -> None:
    plan["extensions"] = [{"kind": "branching"}]


def _document(plan: dict[str, Any]) -> None:
    plan["onFail"] = "retry"


def _metadata(plan: dict[str, Any]) -> None:
    plan["metadata"]["timeouts"]["llmMs"] = 0


def _step_field(plan: dict[str, Any]) -> None:
    _step(plan, "answer")["onSuccess"] = "summarize"


def _type(plan: dict[str, Any]) -> None:
    _step(plan, "summarize")["type"] = "Summarise"


def _ids_repeat(plan: dict[str, Any]) -> None:
    _step(plan, "summarize")["id"] = "answer"


def _ids_shape(plan: dict[str, Any]) -> None:
    _step(plan, "scan")["id"] = "../scan"


def _order(plan: dict[str, Any]) -> None:
    steps = plan["steps"]
    steps[3], steps[4] = steps[4], steps[3]  # LLMCall before PromptAssemble


def _order_repeat(plan: dict[str, Any]) -> None:
    plan["steps"].insert(5, {"id": "again", "type": "LLMCall", "payload": {}})


def _mandatory(plan: dict[str, Any]) -> None:
    plan["steps"] = [s for s in plan["steps"] if s["type"] != "PersistSession"]


def _top_k(plan: dict[str, Any]) -> None:
    del plan["metadata"]["topK"]


CASES = [
    ("version", _version, None, "step_contract_version"),
    ("extensions", _extensions, None, "extensions"),
    ("document", _document, None, "onFail"),
    ("metadata", _metadata, None, "metadata.timeouts.llmMs"),
    ("step", _step_field, "answer", "steps[4].onSuccess"),
    ("type", _type, "summarize", "'Summarise' is no v1 type"),
    ("ids", _ids_repeat, "answer", "repeats the id of steps[4]"),
    ("ids", _ids_shape, None, "'../scan' is not allowed"),
    ("order", _order, "assemble", "PromptAssemble comes after LLMCall ('answer')"),
    ("order", _order_repeat, "again", "LLMCall repeats LLMCall ('answer')"),
    ("mandatory", _mandatory, None, "has no PersistSession step"),
    ("topK", _top_k, "recall", "metadata.topK"),
]


@pytest.mark.parametrize(
    ("rule", "breaks", "step_id", "said"), CASES, ids=[f"{c[0]}-{c[1].__name__}" for c in CASES]
)
def test_a_broken_rule_fails_the_cycle_before_any_handler_runs(
    make_runtime: Callable[..., PlanRuntime],
    recorder: Recorder,
    rule: str,
    breaks: Callable[[dict[str, Any]], None],
    step_id: str | None,
    said: str,
) -> None:
    plan = plan_document()
    breaks(plan)
    runtime = make_runtime()
    result = runtime.run_cycle(plan, input="rotate postgres credentials", session="s")
    assert recorder.calls == []
    assert result.status == "failed"
    assert result.rule == rule
    assert result.failed_step == step_id
    assert said in (result.error or "")
    assert f"rule '{rule}'" in (result.error or "")
    events = [json.loads(line) for line in (result.path / "events.jsonl").read_text().splitlines()]
    assert [e["kind"] for e in events] == ["run_created", "run_started", "run_completed"]
    assert events[-1]["payload"]["status"] == "failed"
    assert validate_run_dir(result.path) == []
    assert not runtime.store_path.exists()  # no handler, so nothing opened the store


def test_the_example_plan_breaks_no_rule() -> None:
    assert plan_violations(plan_document()) == []
    assert checked_plan(plan_document()).steps[0].id == "scan"


def test_every_broken_rule_is_listed_at_once() -> None:
    plan = plan_document()
    _version(plan)
    _order(plan)
    _top_k(plan)
    rules = [v.rule for v in plan_violations(plan)]
    assert rules == ["version", "order", "topK"]
    with pytest.raises(PlanError) as caught:
        checked_plan(plan)
    assert "breaks 3 rule(s)" in str(caught.value)
    assert caught.value.rule == "version"


@pytest.mark.parametrize("plan", [[], "plan", None, {"steps": []}])
def test_a_plan_that_is_no_object_or_has_no_steps_is_refused_by_name(plan: Any) -> None:
    found = plan_violations(plan)
    assert found and found[0].rule == "document"


def test_a_plan_model_made_in_python_is_held_to_the_order_too(tmp_path: Path) -> None:
    from swarm_runtime.contracts.plan import ExecutionPlan

    plan = plan_document()
    _order(plan)
    model = ExecutionPlan.model_validate(plan)  # the model fixes the shape, not the order
    with pytest.raises(PlanError) as caught:
        checked_plan(model)
    assert caught.value.rule == "order" and caught.value.step_id == "assemble"

"""The write side of the lifecycle events and the read side agree, key for key and value
for value: every payload a builder makes is valid for the contract model of its kind."""

from __future__ import annotations

from typing import Any, get_type_hints

import pytest

from swarm_runtime.contracts import event_payloads as read
from swarm_runtime.orchestrator import payloads as write

PAIRS: list[tuple[Any, Any, Any]] = [
    (write.RunCreatedPayload, read.RunCreatedPayload, write.run_created(["a"], "b", "cli")),
    (write.RunStartedPayload, read.RunStartedPayload, write.run_started()),
    (write.StepErrorPayload, read.StepErrorPayload, write.step_error(12, "boom", "claude-step")),
    (
        write.StepStartPayload,
        read.StepStartPayload,
        write.step_start("author", ["writer"], 2, "stub", 1),
    ),
    (write.StepEndPayload, read.StepEndPayload, write.step_end("skipped", 7, "stub")),
    (
        write.RouteDecisionPayload,
        read.RouteDecisionPayload,
        write.route_decision(
            "critic",
            "author",
            "loop",
            "loop_iteration:1",
            loop_state={"critic": 1},
            routing_source="deterministic",
        ),
    ),
    (
        write.RunCompletedPayload,
        read.RunCompletedPayload,
        write.run_completed("stopped", "asked to", steps_completed=2, total_steps_executed=3),
    ),
    (write.ReasonPayload, read.ControlPayload, write.reason("blocked: needs input")),
    (
        write.RoutingDecisionPayload,
        read.RoutingDecisionPayload,
        write.routing_decision(
            "critique",
            [
                {"id": "back", "kind": "edge", "to": "write"},
                {"id": "on", "kind": "edge", "to": "t"},
            ],
            "back",
            rationale="the tests fail",
            confidence=0.75,
            evaluated=[{"expr": "handoff.status != 'OK'", "value": True}],
        ),
    ),
    (
        write.GraphExtendedPayload,
        read.GraphExtendedPayload,
        write.graph_extended("critique", "deploy", "it looks done"),
    ),
    (write.FactsUpdatedPayload, read.FactsUpdatedPayload, write.facts_updated(["A-1"], [], 1)),
    (write.FactPayload, read.FactPayload, write.fact("ASM-001", "under 1 MB")),
    (write.StackPushPayload, read.StackPushPayload, write.stack_push(("build", "a"), "scan", 2)),
    (write.StackPopPayload, read.StackPopPayload, write.stack_pop(("build", None), "scan", 1)),
    (
        write.FlowInjectedPayload,
        read.FlowInjectedPayload,
        write.flow_injected("scan", "a", "handoff.x == true", "build/b"),
    ),
    (write.NodeInjectedPayload, read.NodeInjectedPayload, write.node_injected("f/s", "build", "a")),
    (
        write.StackOverflowPayload,
        read.StackOverflowPayload,
        write.stack_overflow(("build", "a"), "scan", 4),
    ),
    (
        write.RoutingOffroadPayload,
        read.RoutingOffroadPayload,
        write.routing_offroad(
            "test",
            "write",
            "LOOP",
            rationale=None,
            confidence=None,
            held=["handoff.status != 'OK'"],
        ),
    ),
]


@pytest.mark.parametrize(
    ("written", "model", "built"), PAIRS, ids=lambda v: getattr(v, "__name__", "")
)
def test_a_builder_writes_the_keys_its_kind_is_read_with(
    written: Any, model: Any, built: Any
) -> None:
    assert set(get_type_hints(written)) == set(model.model_fields)
    assert set(built) == set(model.model_fields)
    assert model.model_validate(built).model_dump() == built

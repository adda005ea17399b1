"""Golden runs of the shipped flows (docs/goldens.md): drift here fails CI.

Accept an intended change with ``pytest --snapshot-update`` and review the diff of
``golden/`` before committing it.
"""

from __future__ import annotations

import pytest

from pytest_swarm.golden import SwarmGolden
from pytest_swarm.runner import FlowRunner
from tests.conftest import SHIPPED_FLOWS

FLOWS = sorted(
    p.stem
    for p in SHIPPED_FLOWS.glob("*.yaml")
    if p.name != "flows.yaml" and "\nutility: true\n" not in p.read_text(encoding="utf-8")
)
"""Every shipped flow but the utility flows, which run inside the flows that enter them."""


@pytest.mark.swarm_modes("stub")
@pytest.mark.parametrize("flow", FLOWS)
def test_flow_golden(flow: str, flow_runner: FlowRunner, swarm_golden: SwarmGolden) -> None:
    swarm_golden(flow_runner(flow), flow)


def test_sdlc_golden(flow_runner: FlowRunner, swarm_golden: SwarmGolden) -> None:
    """The whole SDLC: golden/sdlc/ in stub mode; golden/sdlc.replay/ recorded through the SDK
    (against the local server) and replayed in CI."""
    record = flow_runner()
    assert record.status == "succeeded", record.summary.get("error")
    swarm_golden(record, "sdlc")


@pytest.mark.swarm_modes("stub")
def test_max_iterations_golden(flow_runner: FlowRunner, swarm_golden: SwarmGolden) -> None:
    record = flow_runner(
        "signal", scenario={"critique_requirements": {"handoff": {"status": "REJECTED"}}}
    )
    reasons = [
        e.payload.reason
        for e in record.events
        if e.kind == "route_decision" and e.step_id == "critique_requirements"
    ]
    assert reasons[-1] == "max_iterations"
    swarm_golden(record, "signal-max-iterations")


@pytest.mark.swarm_modes("stub")
def test_failing_step_golden(flow_runner: FlowRunner, swarm_golden: SwarmGolden) -> None:
    record = flow_runner(
        "build",
        scenario={"implement_code": {"result_code": "fatal", "error": "compiler crashed"}},
    )
    assert record.status == "failed"
    swarm_golden(record, "build-fails-at-implement")

"""The contract suite, written once and run unchanged in every mode.

Every flow of the flows dir, and the whole run, in the current mode, checked by every
assertion.

See docs/pytest.md#one-contract-suite-for-every-mode.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_swarm.fixtures import SwarmContract
from pytest_swarm.runner import FlowRunner


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """One case per flow of ``--swarm-flows-dir``, in run order, then the rest.

    Utility flows are not run on their own: they run inside the flows that enter them.
    """
    if "contract_flow" in metafunc.fixturenames:
        from pytest_swarm.fixtures import flows_dir_error
        from pytest_swarm.options import OPTIONS_KEY
        from swarm_runtime.flow.registry import FlowRegistry

        options = metafunc.config.stash[OPTIONS_KEY]
        problem = flows_dir_error(options)
        if problem:
            raise pytest.UsageError(problem)
        registry = FlowRegistry(options.flows_dir)
        order = registry.order()
        utility = {flow.key for flow in registry.utility_flows()}
        rest = [key for key in registry.keys() if key not in order and key not in utility]  # noqa: SIM118
        keys = order + rest
        metafunc.parametrize("contract_flow", keys)


def test_flow_honours_the_contract(
    contract_flow: str, flow_runner: FlowRunner, swarm_contract: SwarmContract
) -> None:
    record = flow_runner(contract_flow)
    assert record.status == "succeeded", record.summary.get("error")
    swarm_contract.assert_run(record)


def test_whole_run_honours_the_contract(
    flow_runner: FlowRunner, swarm_contract: SwarmContract
) -> None:
    record = flow_runner()
    assert record.status == "succeeded", record.summary.get("error")
    swarm_contract.assert_run(record)


def test_mode_parity_with_the_stub(
    contract_flow: str, flow_runner: FlowRunner, swarm_contract: SwarmContract
) -> None:
    record = flow_runner(contract_flow)
    reference = flow_runner.stub(contract_flow)
    swarm_contract.assert_mode_parity(record, reference)


def test_every_step_ran_with_receipt_and_transcript(
    contract_flow: str, flow_runner: FlowRunner, swarm_flows: Any
) -> None:
    record = flow_runner(contract_flow)
    executed = {step for flow, step in record.steps_executed() if flow == contract_flow}
    assert executed, f"flow {contract_flow} ran no step"
    for step in executed:
        assert (contract_flow, step) in record.receipts
        assert (contract_flow, step) in record.transcripts

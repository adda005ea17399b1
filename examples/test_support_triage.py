"""How a user tests their own flow with the swarm-stepwise pytest plugin.

Run from this folder (its pytest.ini points the plugin at ./flows):

    pytest                           # stub mode: no network, deterministic
    pytest --swarm-mode=replay       # the recorded SDK calls in golden/cassettes, no network
    pytest --swarm-mode=record --snapshot-update   # record again (ANTHROPIC_API_KEY set)

Tests that script the stub (stub_scenario, flow_runner(scenario=...)) run in stub mode
only; the others run unchanged in every mode (pip install 'swarm-stepwise[pytest]').
"""

import pytest


def test_the_whole_flow_honours_the_contract(flow_runner, swarm_contract):
    record = flow_runner("support-triage", ticket="I was charged twice in March.")
    assert record.status == "succeeded"
    swarm_contract.assert_run(record)  # receipts, transcripts, events, routing, notes


@pytest.mark.parametrize("ticket", ["I was charged twice in March.", "My parcel never came."])
def test_every_ticket_ends_with_a_closed_case(flow_runner, ticket):
    record = flow_runner("support-triage", ticket=ticket)
    assert record.status == "succeeded"
    assert record.steps_executed()[-1] == ("support-triage", "close_case")


def test_the_triage_run_matches_its_golden(flow_runner, swarm_golden):
    record = flow_runner("support-triage", ticket="Please refund me.")
    assert record.status == "succeeded"
    swarm_golden(record, "support-triage")  # golden/support-triage (.replay when recorded)


def test_reviewer_rejections_loop_until_the_limit(flow_runner, stub_scenario):
    stub_scenario({"review_reply": {"handoff": {"status": "NEEDS_FIXES"}}})
    record = flow_runner("support-triage")
    reviews = record.executions[("support-triage", "review_reply")]
    assert len(reviews) == 3  # max_iterations
    assert reviews[-1]["routing"]["reason"] == "max_iterations"


@pytest.mark.parametrize(
    ("queue", "handler"),
    [("BILLING", "send_to_billing"), ("SECURITY", "send_to_security"), ("OTHER", None)],
)
def test_the_router_follows_the_declared_queue(flow_runner, stub_scenario, queue, handler):
    stub_scenario({"route_case": {"handoff": {"queue": queue}}})
    record = flow_runner("support-triage")
    ran = [step for _, step in record.steps_executed()]
    for candidate in ("send_to_billing", "send_to_security"):
        assert (candidate in ran) == (candidate == handler)
    assert ran[-1] == "close_case"


@pytest.mark.swarm_flow("support-triage")
def test_a_fatal_step_fails_the_run_cleanly(flow_runner):
    record = flow_runner(scenario={"draft_reply": {"result_code": "fatal", "error": "model down"}})
    assert record.status == "failed"
    assert [e.kind for e in record.events][-2:] == ["step_error", "run_completed"]
    assert "model down" in record.summary["error"]

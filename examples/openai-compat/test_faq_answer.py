"""A flow whose steps run on a local OpenAI-compatible server and on Claude, tested as one.

find_pages and draft_answer say `engine: openai-step` (flows/faq-answer.yaml); check_answer
runs on claude-step. swarm/config/runtime.yaml points openai-step at a local server
(vLLM, Ollama, LiteLLM, a llama.cpp server) and names its model. Run from this folder:

    pytest                           # stub mode: no server, no network, deterministic
    pytest --swarm-mode=replay       # the recorded calls of both APIs in golden/cassettes
    pytest --swarm-mode=record --snapshot-update   # record again: the local server running
                                     # (or OPENAI_BASE_URL) and ANTHROPIC_API_KEY set

Tests that script the stub (stub_scenario) run in stub mode only; the others run unchanged
in every mode (pip install 'swarm-stepwise[pytest,openai]').
"""

FLOW = "faq-answer"
QUESTION = "How do I turn off the weekly report e-mail?"


def test_the_whole_flow_honours_the_contract(flow_runner, swarm_contract):
    record = flow_runner(FLOW, question=QUESTION)
    assert record.status == "succeeded"
    swarm_contract.assert_run(record)  # receipts, transcripts, events, routing, notes


def test_the_local_model_drafts_and_claude_checks(flow_runner):
    record = flow_runner(FLOW, question=QUESTION)
    assert record.status == "succeeded"
    engines = {step: receipt["engine"] for (_, step), receipt in record.receipts.items()}
    assert engines == {
        "find_pages": "openai-step",
        "draft_answer": "openai-step",
        "check_answer": "claude-step",
    }
    assert record.steps_executed()[-1] == (FLOW, "check_answer")
    assert record.receipts[(FLOW, "check_answer")]["handoff"]["status"] == "APPROVED"


def test_the_answer_run_matches_its_golden(flow_runner, swarm_golden):
    record = flow_runner(FLOW, question="Can I export my data as CSV?")
    assert record.status == "succeeded"
    swarm_golden(record, FLOW)  # golden/faq-answer (.replay when recorded)


def test_a_checker_that_never_approves_stops_at_the_limit(flow_runner, stub_scenario):
    stub_scenario({"check_answer": {"handoff": {"status": "UNSUPPORTED_CLAIMS"}}})
    record = flow_runner(FLOW)
    checks = record.executions[(FLOW, "check_answer")]
    assert len(checks) == 3  # max_iterations
    assert checks[-1]["routing"]["reason"] == "max_iterations"
    assert len(record.executions[(FLOW, "draft_answer")]) == 3


def test_a_local_server_that_is_down_fails_the_run_cleanly(flow_runner, stub_scenario):
    stub_scenario({"find_pages": {"result_code": "fatal", "error": "connection refused"}})
    record = flow_runner(FLOW)
    assert record.status == "failed"
    assert [e.kind for e in record.events][-2:] == ["step_error", "run_completed"]
    assert (FLOW, "draft_answer") not in record.receipts
